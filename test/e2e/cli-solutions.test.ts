/**
 * `ferry solutions list|show|stop|watch|history|errors` run as real processes against a real
 * Service, with History written by an Agent the test plays (its run reports, as an Agent sends
 * them). A start watched to its end through a real Agent: solutions/cli-start-watch.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MonitorSolutionResult } from '../../src/protocol/solutions.js';
import { connectPlayedAgent, OpenChannels, type TestAgent, type TestChannel } from '../helpers/agent-client.js';
import { CLI_SUITE_TIMEOUT_MS, ferry, HAS_SCRIPT, loginEnv, parse, startFerry } from '../helpers/cli.js';
import { recordError, seedRun } from '../helpers/history.js';
import { startService, type TestService } from '../helpers/service.js';
import { STORE_TARGETS } from '../helpers/stores.js';
import type { Execution } from './solutions/harness.js';

describe('ferry solutions against a real Service', { timeout: CLI_SUITE_TIMEOUT_MS }, () => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  const channels = new OpenChannels();
  /** What the played Agent answers to monitorSolution. */
  let onAgent: MonitorSolutionResult = { running: false, processed: 0, failed: 0 };
  let copyId: string;
  let syncId: string;

  beforeAll(async () => {
    svc = await startService(STORE_TARGETS[0] ?? { name: 'sqlite' }, { cloudAgents: 'off' });
    ({ agent, ch } = await connectPlayedAgent(svc, channels, {
      name: 'Played',
      results: { stopSolution: { stopping: false } },
      reply: (cmd) => (cmd['type'] === 'monitorSolution' ? { re: cmd['id'], ok: true, result: onAgent } : undefined),
    }));
    const create = async (name: string): Promise<string> => {
      const res = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/solutions`, {
        body: { name, solutionType: 'Integration', agentId: agent.agentId },
      });
      expect(res.status, res.text).toBe(201);
      return res.body.id;
    };
    copyId = await create('Copy accounts');
    syncId = await create('Sync contacts');
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it('lists Solutions as JSON when piped, filtered by part of the name', async () => {
    const all = await ferry(svc, ['solutions', 'list']);
    expect(all.code, all.stderr).toBe(0);
    expect(parse<Array<{ name: string }>>(all.stdout).map((s) => s.name)).toEqual(['Copy accounts', 'Sync contacts']);
    const some = await ferry(svc, ['solutions', 'list', '--name', 'SYNC']);
    expect(parse<Array<{ id: string }>>(some.stdout).map((s) => s.id)).toEqual([syncId]);
  });

  it('shows a Solution by name in any case or by ID, and says when none has the name (exit 1)', async () => {
    const byName = await ferry(svc, ['solutions', 'show', 'copy ACCOUNTS']);
    expect(byName.code, byName.stderr).toBe(0);
    expect(parse<{ id: string; status: string }>(byName.stdout)).toMatchObject({ id: copyId, status: 'Incomplete' });
    const byId = await ferry(svc, ['solutions', 'show', syncId, '--json']);
    expect(parse<{ name: string }>(byId.stdout).name).toBe('Sync contacts');
    const none = await ferry(svc, ['solutions', 'show', 'Copy']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe(
      'ferry: No Solution named "Copy" in Organization 1; names containing it: "Copy accounts"\n',
    );
    const missing = await ferry(svc, ['solutions', 'show']);
    expect(missing.code).toBe(2);
  });

  it('answers an API refusal with its problem code on stderr and exit 1', async () => {
    const run = await ferry(svc, ['solutions', 'show', '00000000-0000-4000-8000-000000000000']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^ferry: 404 .*\(API_NOT_FOUND\)\n$/);
  });

  let failedRun: string;
  it('lists the runs newest first, by result and with a limit', async () => {
    await seedRun(ch, { solutionId: copyId, start: new Date(Date.now() - 3_600_000).toISOString() });
    failedRun = await seedRun(ch, {
      solutionId: copyId,
      errors: [recordError(1, { sourceKey: { AccountId: 'A-1' } }), recordError(2, { sourceRow: 7 })],
    });
    const all = await ferry(svc, ['solutions', 'history', 'Copy accounts']);
    expect(all.code, all.stderr).toBe(0);
    expect(parse<Execution[]>(all.stdout).map((e) => e.result)).toEqual([
      'CompletedWithErrors',
      'CompletedSuccessfully',
    ]);
    const one = await ferry(svc, ['solutions', 'history', 'Copy accounts', '--limit', '1']);
    expect(parse<Execution[]>(one.stdout).map((e) => e.processExecutionId)).toEqual([failedRun]);
    const ok = await ferry(svc, ['solutions', 'history', 'Copy accounts', '--result', 'completedsuccessfully']);
    expect(parse<Execution[]>(ok.stdout).map((e) => e.result)).toEqual(['CompletedSuccessfully']);
    const bad = await ferry(svc, ['solutions', 'history', 'Copy accounts', '--result', 'Fine']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('(API_VALIDATION)');
  });

  it("lists a run's record errors with the failed record's key or row: the latest run, or the one given", async () => {
    const latest = await ferry(svc, ['solutions', 'errors', 'Copy accounts']);
    expect(latest.code, latest.stderr).toBe(0);
    const shown = parse<{
      processExecutionId: string;
      total: number;
      errors: Array<{ errorMessage: string; sourceKey: unknown; sourceRow: unknown }>;
    }>(latest.stdout);
    expect(shown).toMatchObject({ processExecutionId: failedRun, total: 2 });
    expect(shown.errors.map((e) => [e.errorMessage, e.sourceKey, e.sourceRow])).toEqual([
      ['record 1 refused', { AccountId: 'A-1' }, null],
      ['record 2 refused', null, 7],
    ]);
    const paged = await ferry(svc, [
      'solutions',
      'errors',
      'Copy accounts',
      '--run',
      failedRun,
      '--offset',
      '1',
      '--limit',
      '1',
    ]);
    expect(parse<{ errors: Array<{ errorMessage: string }> }>(paged.stdout).errors.map((e) => e.errorMessage)).toEqual([
      'record 2 refused',
    ]);
    const never = await ferry(svc, ['solutions', 'errors', 'Sync contacts']);
    expect(never.code).toBe(1);
    expect(never.stderr).toContain('has not run yet');
  });

  it('stops: says when nothing runs, exit 0', async () => {
    const run = await ferry(svc, ['solutions', 'stop', 'Sync contacts']);
    expect(run.code, run.stderr).toBe(0);
    expect(parse<{ stopping: boolean }>(run.stdout).stopping).toBe(false);
  });

  it('watches a run going until it ends, then prints its summary and exits 1 when it did not complete successfully', async () => {
    const runId = await seedRun(ch, { solutionId: syncId, finish: false });
    onAgent = { running: true, runId, startedAt: new Date().toISOString(), processed: 500, failed: 1 };
    let exited = false;
    const watch = ferry(svc, ['solutions', 'watch', 'Sync contacts', '--interval', '0.2']).finally(
      () => (exited = true),
    );
    // The watch polls History and the monitor: still watching while the run goes.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(exited).toBe(false);
    onAgent = { running: false, processed: 0, failed: 0 };
    expect(
      await ch.report({
        kind: 'runFinished',
        runId,
        solutionId: syncId,
        trigger: 'start',
        startedAt: new Date(Date.now() - 60_000).toISOString(),
        at: new Date().toISOString(),
        result: 'FatalError',
        processed: 500,
        failed: 1,
        stopped: false,
        sourceDataLocal: true,
        statistics: [],
        details: 'the target went away',
      }),
    ).toMatchObject({ ok: true });
    const run = await watch;
    expect(run.code).toBe(1);
    expect(parse<Execution & { details: string }>(run.stdout)).toMatchObject({
      processExecutionId: runId,
      result: 'FatalError',
      recordsProcessed: 500,
      recordsFailed: 1,
      details: 'the target went away',
    });
    expect(run.stderr).toContain(`ended FatalError with 1 failed records`);
  });

  it('watches a run that has ended: its summary at once, exit 0 when it completed successfully', async () => {
    const runId = await seedRun(ch, { solutionId: syncId });
    const run = await ferry(svc, ['solutions', 'watch', 'Sync contacts', '--run', runId]);
    expect(run.code, run.stderr).toBe(0);
    expect(parse<Execution>(run.stdout)).toMatchObject({ processExecutionId: runId, result: 'CompletedSuccessfully' });
  });

  it.skipIf(!HAS_SCRIPT)('prints tables on a terminal, and a live progress line while it watches', async () => {
    const list = await ferry(svc, ['solutions', 'list'], { terminal: true });
    expect(list.code, list.stdout).toBe(0);
    expect(list.stdout).toMatch(/ID\s+NAME\s+TYPE\s+STATUS\s+LAST RUN\s+NEXT RUN/);
    expect(list.stdout).toMatch(/Copy accounts\s+Integration\s+Incomplete/);
    const show = await ferry(svc, ['solutions', 'show', 'Copy accounts'], { terminal: true });
    expect(show.stdout).toMatch(/Type:\s+Integration/);
    const history = await ferry(svc, ['solutions', 'history', 'Copy accounts'], { terminal: true });
    expect(history.stdout).toMatch(/RESULT\s+PROCESSED\s+FAILED/);
    expect(history.stdout).toMatch(/CompletedWithErrors\s+2\s+2/);
    const errors = await ferry(svc, ['solutions', 'errors', 'Copy accounts'], { terminal: true });
    expect(errors.stdout).toContain('2 record errors');
    expect(errors.stdout).toMatch(/AccountId=A-1\s+RUN_WRITE_FAILED\s+Accounts \/ Create contact\s+record 1 refused/);
    expect(errors.stdout).toMatch(/row 7\s+RUN_WRITE_FAILED/);

    const runId = await seedRun(ch, { solutionId: syncId, finish: false });
    const startedAt = new Date().toISOString();
    onAgent = { running: true, runId, startedAt, processed: 100, failed: 0 };
    const watch = startFerry(['solutions', 'watch', 'Sync contacts', '--interval', '0.2'], {
      env: loginEnv(svc),
      terminal: true,
    });
    // Each change once the watch has shown the one before, however long the process takes to start.
    await watch.waitFor(/100 processed, 0 failed/);
    onAgent = { running: true, runId, startedAt, processed: 2_100, failed: 3 };
    await watch.waitFor(/2,100 processed, 3 failed/);
    onAgent = { running: false, processed: 0, failed: 0 };
    expect(
      await ch.report({
        kind: 'runFinished',
        runId,
        solutionId: syncId,
        trigger: 'start',
        startedAt: new Date(Date.now() - 3_000).toISOString(),
        at: new Date().toISOString(),
        result: 'CompletedSuccessfully',
        processed: 2_100,
        failed: 0,
        stopped: false,
        sourceDataLocal: true,
        statistics: [],
      }),
    ).toMatchObject({ ok: true });
    const run = await watch.done;
    const seen = run.stdout;
    expect(run.code, seen).toBe(0);
    expect(seen).toMatch(/100 processed, 0 failed/);
    expect(seen).toMatch(/2,100 processed, 3 failed, [1-9][0-9,]* records\/s/);
    expect(seen).toMatch(/Result:\s+CompletedSuccessfully/);
    expect(seen).toMatch(/Processed:\s+2,100/);
  });
});
