/**
 * A target that goes away during a run, on the real csv and sqlite plugins: another process holds
 * the SQLite file's write lock, so the target fails whole write calls (SQLITE_BUSY). Such a failure
 * is the datastore's, never the records': the batch is tried again with back-off and the run goes
 * on exactly once the lock is gone; past the retry budget the run ends with RUN_TARGET_UNAVAILABLE,
 * its checkpoint where the last written batch left it, and the next run writes exactly the rest.
 * A stop while a write waits ends the run within its grace, the batch cut short not checkpointed.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { useQueryCreateMap, type QueryCreateCase } from '../../helpers/query-create-map.js';
import {
  partialResult,
  runMap,
  type MapRecordError,
  type RunOptions,
  type RunResult,
} from '../../../src/maps/runtime/run.js';
import { MemoryWatermark } from '../../../src/maps/runtime/watermark.js';
import type { RetryNotice } from '../../../src/maps/runtime/target-retry.js';

const RECORDS = 1000;
const BATCH = 100;
const T0 = Date.UTC(2024, 0, 2);
const at = (i: number): string => new Date(T0 + i * 1000).toISOString().replace('.000Z', 'Z');
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, k) => from + k);

const newCase = useQueryCreateMap('target-outage');

function setUp(): Promise<QueryCreateCase> {
  let csv = 'id,first,last,age,updated_at\n';
  for (let i = 1; i <= RECORDS; i++) csv += `${i},p${i},l${i},${i % 90},${at(i)}\n`;
  // A short busy time-out: a held lock fails the write call soon instead of after 5 s.
  return newCase({ csv, model: { batchSize: BATCH }, target: { busyTimeoutMs: '20' } });
}

/** Another connection holding the target file's write lock until released. */
function lockTarget(dbFile: string): () => void {
  const db = new Database(dbFile);
  db.exec('BEGIN EXCLUSIVE');
  return () => {
    db.exec('ROLLBACK');
    db.close();
  };
}

function ids(dbFile: string): number[] {
  const db = new Database(dbFile, { readonly: true });
  try {
    return (db.prepare('SELECT id FROM contacts ORDER BY id').all() as { id: number }[]).map((r) => r.id);
  } finally {
    db.close();
  }
}

async function run(
  env: QueryCreateCase,
  wm: MemoryWatermark,
  extra: Partial<RunOptions>,
): Promise<{ result?: RunResult; error?: unknown; errors: MapRecordError[]; retries: RetryNotice[] }> {
  const errors: MapRecordError[] = [];
  const retries: RetryNotice[] = [];
  try {
    const result = await runMap(env.plan, {
      connections: env.conns,
      watermark: wm,
      checkpoint: { key: 'outage-map' },
      onRecordError: (e) => errors.push(e),
      onRetry: (n) => retries.push(n),
      ...extra,
    });
    return { result, errors, retries };
  } catch (error) {
    return { error, errors, retries };
  }
}

describe('a target that goes away during a run', () => {
  it('is waited for: the run goes on once it is back, every record written once, none a record error', async () => {
    const env = await setUp();
    const wm = new MemoryWatermark('2024-01-01T12:00:00Z');
    let release: (() => void) | undefined;
    const r = await run(env, wm, {
      targetRetry: { budgetMs: 20_000, firstDelayMs: 50, maxDelayMs: 200 },
      onProgress: (p) => {
        if (p.batches !== 3) return;
        release = lockTarget(env.dbFile);
        setTimeout(() => release?.(), 800);
      },
    });
    expect(r.error).toBeUndefined();
    expect(r.errors).toEqual([]);
    expect(r.retries.length).toBeGreaterThan(0);
    expect(r.retries[0]?.error.code).toBe('CON_DATASTORE_ERROR');
    expect(r.result?.stats).toMatchObject({
      processed: RECORDS,
      failed: 0,
      cancelled: false,
      lastRunDate: at(RECORDS),
    });
    expect(ids(env.dbFile)).toEqual(range(1, RECORDS));
    await env.close();
  });

  it('past the budget ends the run RUN_TARGET_UNAVAILABLE at the last written batch; the next run writes exactly the rest', async () => {
    const env = await setUp();
    const wm = new MemoryWatermark('2024-01-01T12:00:00Z');
    let release: (() => void) | undefined;
    const r = await run(env, wm, {
      targetRetry: { budgetMs: 600, firstDelayMs: 50, maxDelayMs: 200 },
      onProgress: (p) => {
        if (p.batches === 4) release = lockTarget(env.dbFile);
      },
    });
    expect(r.error).toMatchObject({ code: 'RUN_TARGET_UNAVAILABLE' });
    expect((r.error as Error).message).toContain('SQLITE_BUSY');
    expect(r.errors).toEqual([]);
    // What the run had committed when it ended: its counts, and the checkpoint there.
    expect(partialResult(r.error)?.stats).toMatchObject({ processed: 4 * BATCH, failed: 0 });
    expect(await wm.load()).toMatchObject({ lastRunDate: at(4 * BATCH) });
    release?.();
    expect(ids(env.dbFile)).toEqual(range(1, 4 * BATCH));

    const next = await run(env, wm, {});
    expect(next.error).toBeUndefined();
    expect(next.errors).toEqual([]);
    expect(next.result?.stats).toMatchObject({ processed: RECORDS - 4 * BATCH, failed: 0 });
    expect(ids(env.dbFile)).toEqual(range(1, RECORDS));
    await env.close();
  });

  it('a stop while the write waits for the target ends the run within its grace; the batch cut short is written by the next run', async () => {
    const env = await setUp();
    const wm = new MemoryWatermark('2024-01-01T12:00:00Z');
    const stop = new AbortController();
    let release: (() => void) | undefined;
    let stoppedAt = 0;
    const r = await run(env, wm, {
      stop: stop.signal,
      stopGraceMs: 300,
      targetRetry: { budgetMs: 60_000, firstDelayMs: 50, maxDelayMs: 200 },
      onProgress: (p) => {
        if (p.batches !== 2) return;
        release = lockTarget(env.dbFile);
        setTimeout(() => {
          stoppedAt = performance.now();
          stop.abort();
        }, 200);
      },
    });
    const took = performance.now() - stoppedAt;
    release?.();
    expect(r.error).toBeUndefined();
    expect(took).toBeLessThan(2_000);
    expect(r.result?.stats).toMatchObject({ processed: 2 * BATCH, cancelled: true });
    expect(r.errors).toEqual([]);
    expect(await wm.load()).toMatchObject({ lastRunDate: at(2 * BATCH) });

    const next = await run(env, wm, {});
    expect(next.result?.stats).toMatchObject({ processed: RECORDS - 2 * BATCH, failed: 0 });
    expect(ids(env.dbFile)).toEqual(range(1, RECORDS));
    await env.close();
  });
});
