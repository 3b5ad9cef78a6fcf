/**
 * Net change across runs, on the real csv and sqlite plugins: records at exactly the saved
 * watermark are read again but only those not processed yet go through (no DuplicateKey for the
 * last record of every run, and no record lost when a run stops between records of one instant).
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { useQueryCreateMap, type QueryCreateCase } from '../../helpers/query-create-map.js';
import { runMap, type MapRecordError, type RunOptions } from '../../../src/maps/runtime/run.js';
import { MemoryWatermark } from '../../../src/maps/runtime/watermark.js';

/** The query-create fixture's Map over `csv` (the fixture's own input when absent), into a fresh target. */
const newCase = useQueryCreateMap('netchange');
const setUp = (csv?: string, schema?: string) =>
  newCase({ ...(csv !== undefined ? { csv } : {}), ...(schema !== undefined ? { schema } : {}) });
type Env = QueryCreateCase;

async function run(
  env: Env,
  wm: MemoryWatermark,
  extra: Partial<RunOptions> = {},
): Promise<{ processed: number; failed: number; errors: MapRecordError[] }> {
  const errors: MapRecordError[] = [];
  const { stats } = await runMap(env.plan, {
    connections: env.conns,
    watermark: wm,
    onRecordError: (e) => errors.push(e),
    ...extra,
  });
  return { processed: stats.processed, failed: stats.failed, errors };
}

function ids(dbFile: string): number[] {
  const db = new Database(dbFile, { readonly: true });
  try {
    return (db.prepare('SELECT id FROM contacts ORDER BY id').all() as { id: number }[]).map((r) => r.id);
  } finally {
    db.close();
  }
}

const HEADER = 'id,first,last,age,updated_at\n';
const NO_KEY_SCHEMA = JSON.stringify({
  entities: {
    'people.csv': {
      fields: [
        { name: 'id', type: 'integer' },
        { name: 'first', type: 'string' },
        { name: 'last', type: 'string' },
        { name: 'age', type: 'string' },
        { name: 'updated_at', type: 'datetime' },
      ],
    },
  },
});

describe('net change across runs', () => {
  it('a second run of the query-create fixture processes nothing and fails nothing', async () => {
    const env = await setUp();
    const wm = new MemoryWatermark('2024-01-01T12:00:00Z');
    const first = await run(env, wm);
    expect({ processed: first.processed, failed: first.failed }).toEqual({ processed: 4, failed: 1 });
    expect(await wm.load()).toEqual({ lastRunDate: '2024-01-05T00:00:00Z', processedAtLastRunDate: ['k:[5]'] });
    const second = await run(env, wm);
    expect(second).toEqual({ processed: 0, failed: 0, errors: [] });
    expect(ids(env.dbFile)).toEqual([2, 3, 5]);
    await env.close();
  });

  it('a run stopped between two records of the same instant: the next run writes the other one', async () => {
    const at = '2024-02-01T00:00:00Z';
    const env = await setUp(`${HEADER}1,ada,a,30,${at}\n2,alan,b,40,${at}\n3,kid,c,9,2024-02-02T00:00:00Z\n`);
    const wm = new MemoryWatermark('2024-01-01T12:00:00Z');
    const ac = new AbortController();
    // one record a batch; stop after the first batch is checkpointed
    const first = await run(env, wm, { batchSize: 1, signal: ac.signal, onProgress: () => ac.abort() });
    expect(first.processed).toBe(1);
    expect(ids(env.dbFile)).toEqual([1]);
    expect(await wm.load()).toEqual({ lastRunDate: at, processedAtLastRunDate: ['k:[1]'] });
    const second = await run(env, wm, { batchSize: 1 });
    expect(second).toEqual({ processed: 2, failed: 0, errors: [] });
    expect(ids(env.dbFile)).toEqual([1, 2, 3]);
    await env.close();
  });

  it('a record appended later with the watermark instant is written (no primary key: whole-record identity)', async () => {
    const at = '2024-02-01T00:00:00Z';
    const env = await setUp(`${HEADER}1,ada,a,30,${at}\n`, NO_KEY_SCHEMA);
    expect(env.plan.sourceKeyFields).toEqual([]);
    const wm = new MemoryWatermark('2024-01-01T12:00:00Z');
    expect((await run(env, wm)).processed).toBe(1);
    await fsp.appendFile(path.join(env.dir, 'src', 'people.csv'), `2,alan,b,40,${at}\n`);
    const second = await run(env, wm);
    expect(second).toEqual({ processed: 1, failed: 0, errors: [] });
    expect(ids(env.dbFile)).toEqual([1, 2]);
    const third = await run(env, wm);
    expect(third).toEqual({ processed: 0, failed: 0, errors: [] });
    expect((await wm.load())?.processedAtLastRunDate).toHaveLength(2);
    await env.close();
  });
});
