/**
 * Cancelling a run through its AbortSignal, on the real csv and sqlite plugins: the run stops at
 * once (no further batch is read or written), returns its statistics marked cancelled, and the
 * checkpointed watermark covers exactly the batches whose writes finished, so the next run
 * resumes there with nothing lost and nothing written twice.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { useQueryCreateMap, type QueryCreateCase } from '../../helpers/query-create-map.js';
import type { HostConnection } from '../../../src/connectors/connection.js';
import {
  runMap,
  type FailedRecordSink,
  type MapRecordError,
  type RunOptions,
  type RunProgress,
} from '../../../src/maps/runtime/run.js';
import type { MapStats } from '../../../src/maps/runtime/stats.js';
import { MemoryWatermark } from '../../../src/maps/runtime/watermark.js';

const RECORDS = 1000;
const BATCH = 100;
/** The one record whose formula fails (age is not a number). */
const BAD = 450;
const T0 = Date.UTC(2024, 0, 2);
const at = (i: number): string => new Date(T0 + i * 1000).toISOString().replace('.000Z', 'Z');

const newCase = useQueryCreateMap('cancel');
type Env = QueryCreateCase;

/** The query-create fixture's Map (CSV people → SQLite contacts, net change) over RECORDS people, one a second. */
function setUp(): Promise<Env> {
  let csv = 'id,first,last,age,updated_at\n';
  for (let i = 1; i <= RECORDS; i++) csv += `${i},p${i},l${i},${i === BAD ? 'x' : i % 90},${at(i)}\n`;
  return newCase({ csv, model: { batchSize: BATCH } });
}

async function run(
  env: Env,
  wm: MemoryWatermark,
  extra: Partial<RunOptions> = {},
): Promise<{ stats: MapStats; errors: MapRecordError[]; progress: RunProgress[] }> {
  const errors: MapRecordError[] = [];
  const progress: RunProgress[] = [];
  const { stats } = await runMap(env.plan, {
    connections: env.conns,
    watermark: wm,
    ...extra,
    onRecordError: (e) => {
      errors.push(e);
      extra.onRecordError?.(e);
    },
    onProgress: (p) => {
      progress.push(p);
      extra.onProgress?.(p);
    },
  });
  return { stats, errors, progress };
}

function ids(dbFile: string): number[] {
  const db = new Database(dbFile, { readonly: true });
  try {
    return (db.prepare('SELECT id FROM contacts ORDER BY id').all() as { id: number }[]).map((r) => r.id);
  } finally {
    db.close();
  }
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, k) => from + k);
const allButBad = range(1, RECORDS).filter((i) => i !== BAD);

describe('cancelling a run', () => {
  it('between batches: stops after the batch, reports cancelled statistics, the watermark is that batch', async () => {
    const env = await setUp();
    const wm = new MemoryWatermark('2024-01-01T12:00:00Z');
    const ac = new AbortController();
    const first = await run(env, wm, { signal: ac.signal, onProgress: (p) => p.batches === 3 && ac.abort() });
    expect(first.stats).toMatchObject({
      cancelled: true,
      processed: 3 * BATCH,
      failed: 0,
      batches: 3,
      lastRunDate: at(3 * BATCH),
    });
    expect(first.stats.blocks.find((b) => b.name === 'CreateContact')).toMatchObject({
      processed: 3 * BATCH,
      failed: 0,
    });
    expect(first.progress).toHaveLength(3);
    expect(ids(env.dbFile)).toEqual(range(1, 3 * BATCH));
    expect(await wm.load()).toEqual({ lastRunDate: at(3 * BATCH), processedAtLastRunDate: [`k:[${3 * BATCH}]`] });

    const resumed = await run(env, wm);
    expect(resumed.stats).toMatchObject({
      cancelled: false,
      processed: RECORDS - 3 * BATCH,
      failed: 1,
      lastRunDate: at(RECORDS),
    });
    expect(resumed.errors.map((e) => e.code)).toEqual(['FML_NOT_A_NUMBER']);
    expect(ids(env.dbFile)).toEqual(allButBad);
    await env.close();
  });

  it('in the middle of a batch: that batch is neither written nor checkpointed, and the next run does it once', async () => {
    const env = await setUp();
    const wm = new MemoryWatermark('2024-01-01T12:00:00Z');
    const ac = new AbortController();
    // The bad record's error is reported while its batch (401–500) is being evaluated, before the write.
    const first = await run(env, wm, { signal: ac.signal, onRecordError: () => ac.abort() });
    expect(first.errors.map((e) => e.code)).toEqual(['FML_NOT_A_NUMBER']);
    expect(first.stats).toMatchObject({
      cancelled: true,
      processed: 4 * BATCH,
      batches: 4,
      lastRunDate: at(4 * BATCH),
    });
    expect(first.progress.map((p) => p.processed)).toEqual([100, 200, 300, 400]);
    expect(ids(env.dbFile)).toEqual(range(1, 4 * BATCH));
    expect(await wm.load()).toMatchObject({ lastRunDate: at(4 * BATCH) });

    const resumed = await run(env, wm);
    // A record written twice would fail as a duplicate key in this Create Map.
    expect(resumed.stats).toMatchObject({ cancelled: false, processed: RECORDS - 4 * BATCH, failed: 1 });
    expect(resumed.errors.map((e) => e.code)).toEqual(['FML_NOT_A_NUMBER']);
    expect(ids(env.dbFile)).toEqual(allButBad);
    await env.close();
  });

  it('while a batch is being written: the cancelled write fails no record and stores no failed record; the next run writes it once', async () => {
    const env = await setUp();
    const db = env.conns.get('db') as HostConnection;
    const ac = new AbortController();
    let writes = 0;
    // The third write is cancelled on its way, as a network write is when the signal fires.
    const cancelling = Object.assign(Object.create(db) as HostConnection, {
      write: async (...args: Parameters<HostConnection['write']>) => {
        if (++writes === 3) {
          ac.abort();
          throw new FerryError('CON_ABORTED', 'The write was cancelled.');
        }
        return db.write(...args);
      },
    });
    const stored: unknown[] = [];
    const failures: FailedRecordSink = { capture: async (rec) => (stored.push(rec.source['id']), 'f') };
    const wm = new MemoryWatermark('2024-01-01T12:00:00Z');
    const first = await run(
      {
        ...env,
        conns: new Map([
          ['src', env.conns.get('src') as HostConnection],
          ['db', cancelling],
        ]),
      },
      wm,
      { signal: ac.signal, failures },
    );
    expect(first.errors).toEqual([]);
    expect(stored).toEqual([]);
    expect(first.stats).toMatchObject({ cancelled: true, processed: 2 * BATCH, failed: 0 });
    expect(ids(env.dbFile)).toEqual(range(1, 2 * BATCH));
    expect(await wm.load()).toMatchObject({ lastRunDate: at(2 * BATCH) });

    const resumed = await run(env, wm);
    expect(resumed.stats).toMatchObject({ cancelled: false, processed: RECORDS - 2 * BATCH, failed: 1 });
    expect(ids(env.dbFile)).toEqual(allButBad);
    await env.close();
  });

  it('just after a batch was written, while its failed record is being stored: that batch is checkpointed', async () => {
    const env = await setUp();
    const db = env.conns.get('db') as HostConnection;
    let writes = 0;
    const counted = Object.assign(Object.create(db) as HostConnection, {
      write: async (...args: Parameters<HostConnection['write']>) => {
        const res = await db.write(...args);
        writes++;
        return res;
      },
    });
    const wm = new MemoryWatermark('2024-01-01T12:00:00Z');
    const ac = new AbortController();
    const stored: number[] = [];
    // The bad record's copy is stored while its batch (401–500) is written; the signal fires once that write returned.
    const failures: FailedRecordSink = {
      async capture(rec) {
        const after = writes + 1;
        while (writes < after) await new Promise((r) => setImmediate(r));
        ac.abort();
        stored.push(Number(rec.source['id']));
        return 'failed-1';
      },
    };
    const first = await run(
      {
        ...env,
        conns: new Map([
          ['src', env.conns.get('src') as HostConnection],
          ['db', counted],
        ]),
      },
      wm,
      { signal: ac.signal, failures },
    );
    expect(stored).toEqual([BAD]);
    expect(first.errors.map((e) => [e.code, e.failedRecordId])).toEqual([['FML_NOT_A_NUMBER', 'failed-1']]);
    expect(first.stats).toMatchObject({
      cancelled: true,
      processed: 5 * BATCH,
      failed: 1,
      batches: 5,
      lastRunDate: at(5 * BATCH),
    });
    expect(ids(env.dbFile)).toEqual(range(1, 5 * BATCH).filter((i) => i !== BAD));
    expect(await wm.load()).toMatchObject({ lastRunDate: at(5 * BATCH) });

    // Nothing of that batch is read again: a record written twice would fail as a duplicate key in this Create Map.
    const resumed = await run(env, wm);
    expect(resumed.stats).toMatchObject({ cancelled: false, processed: RECORDS - 5 * BATCH, failed: 0 });
    expect(ids(env.dbFile)).toEqual(allButBad);
    await env.close();
  });

  it('before the first batch: nothing is read through, nothing written, no watermark saved', async () => {
    const env = await setUp();
    const wm = new MemoryWatermark(null);
    const ac = new AbortController();
    ac.abort();
    const { stats } = await run(env, wm, { signal: ac.signal });
    expect(stats).toMatchObject({ cancelled: true, processed: 0, batches: 0 });
    expect(ids(env.dbFile)).toEqual([]);
    expect(await wm.load()).toBeNull();
    await env.close();
  });
});
