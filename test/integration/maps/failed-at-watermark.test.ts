/**
 * Net change and failed records, on the real csv and sqlite plugins and the local failed-record
 * store: a record that failed and has its failed-record entry is done — later runs do not read it
 * again (it is reprocessed from its entry), even when its date is the watermark or the newest.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { useQueryCreateMap, type QueryCreateCase } from '../../helpers/query-create-map.js';
import type { HostConnection } from '../../../src/connectors/connection.js';
import { FailedRecordStore } from '../../../src/failures/store.js';
import { reprocessFailed } from '../../../src/maps/reprocess-failed.js';
import { compilePlan } from '../../../src/maps/compiler/plan.js';
import { runMap, type RunOptions } from '../../../src/maps/runtime/run.js';
import { MemoryWatermark } from '../../../src/maps/runtime/watermark.js';

const HEADER = 'id,first,last,age,updated_at\n';
const T1 = '2024-02-01T00:00:00Z';
const T2 = '2024-02-02T00:00:00Z';
const T3 = '2024-02-03T00:00:00Z';
/** 1 and 2 succeed; 3 fails at the instant of 2; 4 fails and is the newest. */
const CSV = `${HEADER}1,ada,a,30,${T1}\n2,alan,b,40,${T2}\n3,grace,c,x,${T2}\n4,kid,d,y,${T3}\n`;

const newCase = useQueryCreateMap('failed-wm');
const setUp = (csv: string) => newCase({ csv });
type Env = QueryCreateCase;

async function run(
  env: Env,
  wm: MemoryWatermark,
  extra: Partial<RunOptions> = {},
): Promise<{ processed: number; failed: number; codes: string[] }> {
  const codes: string[] = [];
  const { stats } = await runMap(env.plan, {
    connections: env.conns,
    watermark: wm,
    onRecordError: (e) => codes.push(e.code),
    ...extra,
  });
  return { processed: stats.processed, failed: stats.failed, codes };
}

function ids(dbFile: string): number[] {
  const db = new Database(dbFile, { readonly: true });
  try {
    return (db.prepare('SELECT id FROM contacts ORDER BY id').all() as { id: number }[]).map((r) => r.id);
  } finally {
    db.close();
  }
}

describe('failed records and the net-change watermark', () => {
  it('stored failed records are not read again by later runs, at the watermark or after it', async () => {
    const env = await setUp(CSV);
    const store = new FailedRecordStore(path.join(env.dir, 'failures'));
    const wm = new MemoryWatermark('2024-01-01T00:00:00Z');
    expect(await run(env, wm, { failures: store })).toEqual({
      processed: 4,
      failed: 2,
      codes: ['FML_NOT_A_NUMBER', 'FML_NOT_A_NUMBER'],
    });
    expect(store.list().map((r) => r.source['id'])).toEqual([3, 4]);
    expect(await wm.load()).toEqual({ lastRunDate: T3, processedAtLastRunDate: ['k:[4]'] });
    for (let k = 0; k < 2; k++) {
      expect(await run(env, wm, { failures: store })).toEqual({ processed: 0, failed: 0, codes: [] });
      expect(store.list()).toHaveLength(2);
    }
    expect(ids(env.dbFile)).toEqual([1, 2]);
    store.close();
    await env.close();
  });

  it('a record appended later at the instant of a stored failed record still goes through', async () => {
    const env = await setUp(CSV);
    const store = new FailedRecordStore(path.join(env.dir, 'failures'));
    const wm = new MemoryWatermark('2024-01-01T00:00:00Z');
    await run(env, wm, { failures: store });
    await fsp.appendFile(path.join(env.dir, 'src', 'people.csv'), `5,zoe,e,20,${T3}\n`);
    expect(await run(env, wm, { failures: store })).toEqual({ processed: 1, failed: 0, codes: [] });
    expect(ids(env.dbFile)).toEqual([1, 2, 5]);
    expect(store.list()).toHaveLength(2);
    store.close();
    await env.close();
  });

  it('a failed record is reprocessed from its entry once corrected, and the next run still does not read it', async () => {
    const env = await setUp(CSV);
    const store = new FailedRecordStore(path.join(env.dir, 'failures'));
    const wm = new MemoryWatermark('2024-01-01T00:00:00Z');
    await run(env, wm, { failures: store });
    const [three] = store.list();
    store.mark([three?.id ?? '']);
    const fixed = compilePlan(
      JSON.parse(JSON.stringify(env.plan.model).replace('Q.age + 1', 'IFERROR(Q.age + 1, 0)')) as unknown,
      {
        src: await (env.conns.get('src') as HostConnection).metadata(),
        db: await (env.conns.get('db') as HostConnection).metadata(),
      },
    );
    const re = await reprocessFailed(fixed, store, { connections: env.conns });
    expect(re.succeeded).toEqual([three?.id]);
    expect(ids(env.dbFile)).toEqual([1, 2, 3]);
    expect(await run(env, wm, { failures: store })).toEqual({ processed: 0, failed: 0, codes: [] });
    store.close();
    await env.close();
  });

  it('without a failed-record store, a failed record does not move the watermark: the next run reads it again', async () => {
    const env = await setUp(CSV);
    const wm = new MemoryWatermark('2024-01-01T00:00:00Z');
    expect(await run(env, wm)).toMatchObject({ processed: 4, failed: 2 });
    expect(await wm.load()).toEqual({ lastRunDate: T2, processedAtLastRunDate: ['k:[2]'] });
    expect(await run(env, wm)).toEqual({ processed: 2, failed: 2, codes: ['FML_NOT_A_NUMBER', 'FML_NOT_A_NUMBER'] });
    await env.close();
  });
});
