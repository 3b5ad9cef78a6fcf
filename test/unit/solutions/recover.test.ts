import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkRegistry } from '../../../src/agent/work.js';
import type { ReportBody } from '../../../src/protocol/channel.js';
import type { PreparedSolution, RunMapStats } from '../../../src/protocol/solutions.js';
import { CommittedCounts } from '../../../src/solutions/committed.js';
import { SolutionRunner } from '../../../src/solutions/runner.js';
import { SolutionStore } from '../../../src/solutions/solution-store.js';

const SOLUTION: PreparedSolution = {
  solutionId: 'a0000000-0000-4000-8000-000000000001',
  orgId: 1,
  name: 'Accounts',
  solutionType: 'Integration',
  version: 'v1',
  isDisabled: false,
  schedule: null,
  connections: [],
  maps: [],
  replication: null,
  capture: {
    captureOnFailedRecordsForReprocessing: true,
    captureDuringCloudAppRuns: false,
    captureDuringLocalAgentAppRuns: true,
    isSourceDataLocal: false,
  },
  lookupTables: [],
};
const STARTED = new Date(Date.now() - 4_000).toISOString();
const log = pino({ level: 'silent' });

const FIRST: RunMapStats = {
  mapId: 1,
  mapName: 'Accounts',
  entity: 'accounts',
  processed: 30_000,
  failed: 2,
  minMs: 5,
  maxMs: 30,
  avgMs: 8,
  totalMs: 1200,
  totalTime: '00:00:01',
  blocks: [
    {
      blockId: 'b1',
      name: 'Put',
      blockType: 'Create',
      processed: 30_000,
      failed: 2,
      minMs: 4,
      maxMs: 25,
      avgMs: 6,
      totalMs: 900,
    },
  ],
};

/**
 * recover() at the start of an Agent process, on the Solution store file a killed process left:
 * each run still open ends as RUN_AGENT_ENDED with what it had committed — its counts, its
 * statistics per Map, and the time of its last counted batch as its stop — and is closed.
 */
describe('recover() of runs a killed Agent left open', () => {
  let dir: string;
  let file: string;
  let reports: ReportBody[];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-recover-'));
    file = path.join(dir, 'solutions.db');
    reports = [];
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** The next process: a new store on the same file and a runner that recovers. */
  function nextProcess(now = new Date(Date.now() + 97_000)): { count: number; store: SolutionStore } {
    const store = new SolutionStore(file, 'agent-secret');
    const runner = new SolutionRunner({
      store,
      host: () => Promise.reject(new Error('no connectors in this test')),
      work: new WorkRegistry(),
      report: (body) => void reports.push(body),
      log,
      dataDir: dir,
      runsOn: 'local',
      now: () => now,
    });
    return { count: runner.recover(), store };
  }

  it('reports the counts, statistics and time of the last committed batch, not zero and the restart time', () => {
    // The killed process: one Map done, the second one 12,000 records in, two of them refused.
    const killed = new SolutionStore(file, 'agent-secret');
    killed.put(SOLUTION);
    killed.openRun({
      runId: 'killed-run',
      solutionId: SOLUTION.solutionId,
      trigger: 'schedule',
      startedAt: STARTED,
      dueAt: STARTED,
    });
    const counts = new CommittedCounts(killed, 'killed-run', log, 0);
    counts.begin({ mapId: 1, mapName: 'Accounts', entity: 'accounts' });
    counts.batch(30_000, 2);
    counts.end(FIRST);
    counts.begin({ mapId: 2, mapName: 'Contacts', entity: 'contacts' });
    counts.batch(10_000, 0);
    counts.batch(12_000, 2);
    const lastBatch = killed.committed('killed-run').at as string;
    // kill -9: nothing more is written, nothing is closed.

    // It comes back 97 s later.
    const restart = new Date(Date.now() + 97_000);
    const { count, store } = nextProcess(restart);
    expect(count).toBe(1);
    expect(reports).toHaveLength(1);
    const end = reports[0] as Extract<ReportBody, { kind: 'runFinished' }>;
    expect(end).toMatchObject({
      kind: 'runFinished',
      runId: 'killed-run',
      solutionId: SOLUTION.solutionId,
      trigger: 'schedule',
      startedAt: STARTED,
      result: 'RecordErrorsAndFatalErrors',
      processed: 42_000,
      failed: 4,
      stopped: false,
      sourceDataLocal: false,
    });
    expect(end.at).toBe(lastBatch);
    expect(Date.parse(end.at)).toBeLessThan(restart.getTime() - 90_000);
    expect(end.details).toMatch(/^RUN_AGENT_ENDED: /);
    expect(end.details).not.toMatch(/no record is lost or written twice/);
    expect(end.statistics).toHaveLength(2);
    expect(end.statistics[0]).toEqual(FIRST);
    expect(end.statistics[1]).toMatchObject({
      mapId: 2,
      mapName: 'Contacts',
      entity: 'contacts',
      processed: 12_000,
      failed: 2,
      blocks: [],
    });
    // Closed: a second start reports nothing again.
    expect(store.openRuns()).toEqual([]);
    expect(store.committed('killed-run')).toEqual({ at: null, statistics: [] });
    store.close();
    killed.close();
    expect(nextProcess().count).toBe(0);
  });

  it('ends a run killed before its first batch at its start, with nothing counted', () => {
    const killed = new SolutionStore(file, 'agent-secret');
    killed.openRun({
      runId: 'early-run',
      solutionId: SOLUTION.solutionId,
      trigger: 'start',
      startedAt: STARTED,
      dueAt: null,
    });
    killed.close();
    const { store } = nextProcess();
    expect(reports[0]).toMatchObject({
      kind: 'runFinished',
      runId: 'early-run',
      at: STARTED,
      result: 'FatalError',
      processed: 0,
      failed: 0,
      statistics: [],
    });
    store.close();
  });
});
