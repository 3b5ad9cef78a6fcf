import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { knownRunsCommand } from '../../../src/agent/commands/known-runs.command.js';
import { WorkRegistry } from '../../../src/agent/work.js';
import { Outbox } from '../../../src/channel/outbox.js';
import { isFerryError } from '../../../src/errors/ferry-error.js';
import type { PreparedSolution } from '../../../src/protocol/solutions.js';
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
    captureOnFailedRecordsForReprocessing: false,
    captureDuringCloudAppRuns: false,
    captureDuringLocalAgentAppRuns: false,
    isSourceDataLocal: true,
  },
  lookupTables: [],
};
const MAPS = [{ mapId: 7, records: 2 }];

/**
 * The Agent's answer to knownRuns, on its real outbox, Solution store and run queue: a run it has
 * open, or one a report still in the outbox names (waiting or set aside), is known; any other is
 * given up for good, so a reprocessRun for it that arrives later is refused.
 */
describe('knownRuns on the Agent', () => {
  let dir: string;
  let outbox: Outbox;
  let store: SolutionStore;
  let runner: SolutionRunner;
  let ask: ReturnType<typeof knownRunsCommand>;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-known-runs-'));
    outbox = new Outbox(path.join(dir, 'outbox.db'));
    store = new SolutionStore(path.join(dir, 'solutions.db'), 'agent-secret');
    store.put(SOLUTION);
    runner = new SolutionRunner({
      store,
      // No Connector host: a run that starts ends at once with a fatal error, which is enough here.
      host: () => Promise.reject(new Error('no connectors in this test')),
      work: new WorkRegistry(),
      report: (body) => void outbox.enqueue(body),
      log: pino({ level: 'silent' }),
      dataDir: dir,
      runsOn: 'local',
    });
    ask = knownRunsCommand({ runner, outbox });
  });
  afterEach(async () => {
    await runner.idle();
    runner.close();
    store.close();
    outbox.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('knows a run open in its store, one a waiting report names and one a report set aside names; gives up the others', async () => {
    // Left open by a killed process (its end not reported yet).
    store.openRun({
      runId: 'open-run',
      solutionId: SOLUTION.solutionId,
      trigger: 'start',
      startedAt: new Date().toISOString(),
      dueAt: null,
    });
    // Ended, its end not yet acknowledged by the Service.
    outbox.enqueue(finished('reported-run'));
    // Ended, its end refused by the Service as invalid and set aside: never delivered.
    outbox.reject(outbox.enqueue(finished('dead-run')).id, 'refused');
    // Acknowledged: the Service has its end, and the Agent forgets it.
    outbox.acknowledge(outbox.enqueue(finished('delivered-run')).id);

    const answer = await ask({
      id: 'c1',
      type: 'knownRuns',
      runIds: ['OPEN-RUN', 'reported-run', 'dead-run', 'delivered-run', 'never-arrived'],
    });
    expect(answer).toEqual({ known: ['OPEN-RUN', 'reported-run', 'dead-run'] });
  });

  it('knows a run it has started, and never starts a run it said it does not know', async () => {
    expect(runner.reprocess(SOLUTION.solutionId, 'started-run', MAPS)).toEqual({ started: true, runId: 'started-run' });
    expect(await ask({ id: 'c1', type: 'knownRuns', runIds: ['started-run', 'lost-run'] })).toEqual({
      known: ['started-run'],
    });
    await runner.idle();

    // The reprocessRun for the lost run arrives after the answer: refused, with nothing reported.
    const before = outbox.size;
    let refused: unknown;
    try {
      runner.reprocess(SOLUTION.solutionId, 'LOST-RUN', MAPS);
    } catch (err) {
      refused = err;
    }
    expect(isFerryError(refused) && refused.code).toBe('AGT_RUN_ABANDONED');
    expect(outbox.size).toBe(before);
    expect(store.openRuns()).toEqual([]);

    // The started run ended: its end stays known until the Service acknowledges it.
    expect(await ask({ id: 'c2', type: 'knownRuns', runIds: ['started-run'] })).toEqual({ known: ['started-run'] });
    for (const p of outbox.pending()) outbox.acknowledge(p.report.id);
    expect(await ask({ id: 'c3', type: 'knownRuns', runIds: ['started-run'] })).toEqual({ known: [] });
  });
});

function finished(runId: string) {
  const at = new Date().toISOString();
  return {
    kind: 'runFinished' as const,
    runId,
    solutionId: SOLUTION.solutionId,
    trigger: 'start' as const,
    startedAt: at,
    at,
    result: 'CompletedSuccessfully' as const,
    processed: 0,
    failed: 0,
    stopped: false,
    sourceDataLocal: true,
    statistics: [],
  };
}
