import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RunMapStats } from '../../../src/protocol/solutions.js';
import { CommittedCounts } from '../../../src/solutions/committed.js';
import { SolutionStore } from '../../../src/solutions/solution-store.js';

const RUN = 'b0000000-0000-4000-8000-000000000001';
const SOLUTION = 'a0000000-0000-4000-8000-000000000001';
const log = pino({ level: 'silent' });

const finishedMap = (mapId: number, processed: number, failed: number): RunMapStats => ({
  mapId,
  mapName: `Map ${mapId}`,
  entity: 'people',
  processed,
  failed,
  minMs: 1,
  maxMs: 3,
  avgMs: 2,
  totalMs: 40,
  totalTime: '00:00:00',
  blocks: [
    { blockId: 'b1', name: 'Q', blockType: 'Query', processed, failed: 0, minMs: 1, maxMs: 2, avgMs: 1.5, totalMs: 15 },
  ],
});

/**
 * The counts a run has committed, kept in its open-run record of the Agent's Solution store (a real
 * SQLite file): what a new process finds there after a kill -9 (the store opened again), per Map or
 * entity, with the time of the last counted batch.
 */
describe('committed counts of an open run', () => {
  let dir: string;
  let file: string;
  let store: SolutionStore;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-committed-'));
    file = path.join(dir, 'solutions.db');
    store = new SolutionStore(file, 'agent-secret');
    store.openRun({
      runId: RUN,
      solutionId: SOLUTION,
      trigger: 'start',
      startedAt: '2024-05-01T10:00:00.000Z',
      dueAt: null,
    });
  });
  afterEach(() => {
    vi.useRealTimers();
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The store as the next process opens it. */
  const reopened = (): SolutionStore => new SolutionStore(file, 'agent-secret');

  it("keeps each Map's counts as its batches are counted, the finished ones whole, and the time of the last batch", () => {
    const counts = new CommittedCounts(store, RUN, log, 0);
    counts.begin({ mapId: 1, mapName: 'Map 1', entity: 'people' });
    counts.batch(2000, 0);
    counts.batch(4000, 1);
    counts.end(finishedMap(1, 5000, 1));
    counts.begin({ mapId: 2, mapName: 'Map 2', entity: 'orders' });
    counts.batch(2000, 0);
    const lastBatch = Date.now();
    counts.batch(6000, 2);

    const next = reopened();
    try {
      const done = next.committed(RUN);
      expect(done.statistics).toHaveLength(2);
      expect(done.statistics[0]).toEqual(finishedMap(1, 5000, 1));
      expect(done.statistics[1]).toMatchObject({
        mapId: 2,
        mapName: 'Map 2',
        entity: 'orders',
        processed: 6000,
        failed: 2,
        blocks: [],
      });
      expect(Date.parse(done.at ?? '')).toBeGreaterThanOrEqual(lastBatch - 1);
      expect(Date.parse(done.at ?? '')).toBeLessThanOrEqual(Date.now());
    } finally {
      next.close();
    }
  });

  it('writes at most once per gap, and the counts held back when the gap ends or at flush', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance', 'Date'] });
    const writes: Array<{ seq: number; stats: RunMapStats }> = [];
    const counting = {
      saveCommitted: (_run: string, seq: number, _at: string, stats: string) =>
        void writes.push({ seq, stats: JSON.parse(stats) as RunMapStats }),
    };
    const counts = new CommittedCounts(counting, RUN, log, 100);
    counts.begin({ mapId: 1, mapName: 'Map 1' });
    expect(writes.map((w) => w.stats.processed)).toEqual([0]);
    counts.batch(100, 0);
    counts.batch(200, 0);
    // Within the gap: nothing yet.
    expect(writes).toHaveLength(1);
    vi.advanceTimersByTime(100);
    expect(writes.map((w) => w.stats.processed)).toEqual([0, 200]);
    vi.advanceTimersByTime(150);
    counts.batch(300, 0);
    expect(writes.map((w) => w.stats.processed)).toEqual([0, 200, 300]);
    counts.batch(400, 1);
    counts.flush();
    expect(writes.map((w) => w.stats.processed)).toEqual([0, 200, 300, 400]);
    counts.flush();
    expect(writes).toHaveLength(4);
    counts.close();
  });

  it("writes at once, within the gap, counts a checkpoint of the Agent's own is saved after", () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance', 'Date'] });
    const writes: number[] = [];
    const counting = {
      saveCommitted: (_run: string, _seq: number, _at: string, stats: string) =>
        void writes.push((JSON.parse(stats) as RunMapStats).processed),
    };
    const counts = new CommittedCounts(counting, RUN, log, 100);
    counts.begin({ mapId: 1, mapName: 'Map 1' });
    counts.batch(100, 0);
    expect(writes).toEqual([0]);
    counts.batch(200, 0, true);
    expect(writes).toEqual([0, 200]);
    counts.close();
  });

  it('remembers a run closed as ended with its process, and claims each larger figure of a part once', () => {
    expect(store.claimCorrection(RUN, 'map:1', 10)).toBe(false);
    store.closeRun(RUN, true);
    expect(store.claimCorrection(RUN, 'map:1', 10)).toBe(true);
    expect(store.claimCorrection(RUN, 'map:1', 10)).toBe(false);
    expect(store.claimCorrection(RUN, 'map:1', 9)).toBe(false);
    expect(store.claimCorrection(RUN, 'map:2', 5)).toBe(true);
    expect(store.claimCorrection(RUN, 'map:1', 12)).toBe(true);
    // Another store on the file (the next process) remembers it.
    const again = new SolutionStore(file, 'agent-secret');
    try {
      expect(again.claimCorrection(RUN, 'map:1', 12)).toBe(false);
      expect(again.claimCorrection('b0000000-0000-4000-8000-000000000002', 'map:1', 12)).toBe(false);
    } finally {
      again.close();
    }
  });

  it('leaves nothing once the run is closed, even a write that comes late', () => {
    const counts = new CommittedCounts(store, RUN, log, 0);
    counts.begin({ mapId: 1, mapName: 'Map 1' });
    counts.batch(2000, 0);
    store.closeRun(RUN);
    counts.batch(4000, 0);
    expect(store.committed(RUN)).toEqual({ at: null, statistics: [] });
    // The same run ID opened again starts from nothing.
    store.openRun({
      runId: RUN,
      solutionId: SOLUTION,
      trigger: 'start',
      startedAt: '2024-05-01T11:00:00.000Z',
      dueAt: null,
    });
    expect(store.committed(RUN)).toEqual({ at: null, statistics: [] });
  });

  it('never fails the run when the count cannot be written', () => {
    const failing = {
      saveCommitted: () => {
        throw new Error('disk I/O error');
      },
    };
    const counts = new CommittedCounts(failing, RUN, log, 0);
    expect(() => {
      counts.begin({ mapId: 1, mapName: 'Map 1' });
      counts.batch(1, 0);
      counts.end(finishedMap(1, 1, 0));
    }).not.toThrow();
  });

  it('opens a store file written before open runs had counts', () => {
    store.close();
    const old = path.join(dir, 'old.db');
    const db = new Database(old);
    db.exec(`CREATE TABLE solutions (solution_id TEXT PRIMARY KEY, version TEXT NOT NULL, body BLOB NOT NULL);
             CREATE TABLE open_runs (run_id TEXT PRIMARY KEY, solution_id TEXT NOT NULL, trigger TEXT NOT NULL, started_at TEXT NOT NULL, due_at TEXT);`);
    db.prepare('INSERT INTO open_runs VALUES (?, ?, ?, ?, NULL)').run(
      RUN,
      SOLUTION,
      'start',
      '2024-05-01T10:00:00.000Z',
    );
    db.close();
    store = new SolutionStore(old, 'agent-secret');
    expect(store.openRuns().map((r) => r.runId)).toEqual([RUN]);
    expect(store.committed(RUN)).toEqual({ at: null, statistics: [] });
  });
});
