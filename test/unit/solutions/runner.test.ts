import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WorkRegistry } from '../../../src/agent/work.js';
import type { ConnectorHost } from '../../../src/connectors/host.js';
import { isFerryError } from '../../../src/errors/ferry-error.js';
import type { ReportBody } from '../../../src/protocol/channel.js';
import type { PreparedMap, PreparedSolution } from '../../../src/protocol/solutions.js';
import { SolutionRunner, type SolutionRunnerOptions } from '../../../src/solutions/runner.js';
import { SolutionStore } from '../../../src/solutions/solution-store.js';
import {
  peopleMap,
  peopleSolution,
  rowCount,
  sqliteTarget,
  usePluginHost,
  writePeople,
} from '../../helpers/people-solution.js';

const log = pino({ level: 'silent' });
type Of<K extends ReportBody['kind']> = Extract<ReportBody, { kind: K }>;

/**
 * The plugin host as runs ask for it before their first Map, handed over only once the test opens
 * the gate: until then a run that has left the queue waits there, so the test sees which runs
 * execute and which still wait, without timing anything.
 */
class HostGate {
  #open = false;
  #failure: Error | undefined;
  readonly #waiting: Array<{ resolve: (host: ConnectorHost) => void; reject: (err: Error) => void }> = [];
  /** How many runs have asked for the host: those that left the queue. */
  asked = 0;

  constructor(
    private readonly host: () => ConnectorHost,
    private readonly events: string[],
  ) {}

  readonly get = (): Promise<ConnectorHost> => {
    this.asked++;
    this.events.push('host asked');
    if (this.#open) return Promise.resolve(this.host());
    if (this.#failure) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  };

  /** Hands the host to every run waiting for it and to every later one. */
  open(): void {
    this.#open = true;
    for (const w of this.#waiting.splice(0)) w.resolve(this.host());
  }

  /** Fails every run waiting for the host and every later one, as a process that ends leaves them. */
  fail(err: Error): void {
    this.#failure = err;
    for (const w of this.#waiting.splice(0)) w.reject(err);
  }
}

/** The FerryError code `fn` throws, or undefined when it throws none. */
function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return isFerryError(err) ? err.code : `not a FerryError: ${String(err)}`;
  }
  return undefined;
}

/**
 * The Agent's Solution runner through its public methods, on a real Solution store file, a real
 * work registry and the real csv and sqlite plugins: what a run reports and writes, the queue and
 * its concurrency, a second start of a running Solution, stop, and the runs a previous process
 * left open.
 */
describe('SolutionRunner', () => {
  const plugins = usePluginHost('runner');
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  interface Agent {
    runner: SolutionRunner;
    work: WorkRegistry;
    reports: ReportBody[];
    /** Host requests and run ends, in the order they happened. */
    events: string[];
    gate: HostGate;
    dataDir: string;
  }

  /**
   * An Agent's runner on its own data folder (or `dataDir`, as the next process on the same
   * folder), holding `solutions`. With `gated`, runs wait for the host until `gate.open()`.
   */
  function agent(
    solutions: PreparedSolution[],
    opts: { gated?: boolean; dataDir?: string } & Partial<SolutionRunnerOptions> = {},
  ): Agent {
    const { gated, dataDir: reuse, ...options } = opts;
    const dataDir = reuse ?? fs.mkdtempSync(path.join(plugins.tmp(), 'agent-'));
    const store = new SolutionStore(path.join(dataDir, 'solutions.db'), 'agent-secret');
    for (const s of solutions) store.put(s);
    const reports: ReportBody[] = [];
    const events: string[] = [];
    const gate = new HostGate(plugins.host, events);
    if (!gated) gate.open();
    const work = new WorkRegistry();
    const runner = new SolutionRunner({
      store,
      host: gate.get,
      work,
      report: (body) => {
        reports.push(body);
        if (body.kind === 'runFinished') events.push(`finished ${body.runId}`);
      },
      log,
      dataDir,
      runsOn: 'local',
      progressMs: 0,
      ...options,
    });
    cleanups.push(async () => {
      gate.fail(new Error('the test ended'));
      await runner.idle();
      runner.close();
      store.close();
    });
    return { runner, work, reports, events, gate, dataDir };
  }

  /** The table a people Map creates its records in. */
  const tableOf = (map: PreparedMap): string => (map.model['blocks'] as Array<{ entity: string }>)[1]?.entity ?? '';

  /**
   * A Solution of `maps` over `people` people, and its SQLite target made with `ddl` (by default,
   * for each Map, its table keyed by id).
   */
  function solutionOf(
    people: number,
    maps: PreparedMap[],
    ddl = maps.map((m) => `CREATE TABLE ${tableOf(m)} (id INTEGER PRIMARY KEY, name TEXT);`).join('\n'),
  ): { solution: PreparedSolution; target: string } {
    const folder = fs.mkdtempSync(path.join(plugins.tmp(), 'data-'));
    writePeople(folder, people);
    const target = path.join(folder, 'target.db');
    sqliteTarget(target, ddl);
    return { solution: peopleSolution(folder, target, maps), target };
  }

  const finished = (reports: readonly ReportBody[]): Array<Of<'runFinished'>> =>
    reports.filter((r): r is Of<'runFinished'> => r.kind === 'runFinished');
  const kinds = (reports: readonly ReportBody[], runId: string): string[] =>
    reports.filter((r) => 'runId' in r && r.runId === runId).map((r) => r.kind);

  it("runs the enabled Maps in order and reports the run: started at once, progress counting up, then its end with each Map's statistics", async () => {
    const { solution, target } = solutionOf(1_200, [
      peopleMap(1, 'first_copy'),
      peopleMap(2, 'skipped', { enabled: false }),
      peopleMap(3, 'third_copy', { batchSize: 300 }),
    ]);
    const a = agent([solution]);
    const dueAt = new Date(Date.UTC(2024, 5, 1, 8, 0));

    expect(a.runner.start(solution.solutionId, 'run-1', 'schedule', dueAt)).toEqual({ started: true, runId: 'run-1' });
    // Reported before the run leaves the queue, with why it started and the due time it fired for.
    expect(a.reports).toEqual([
      {
        kind: 'runStarted',
        runId: 'run-1',
        solutionId: solution.solutionId,
        trigger: 'schedule',
        dueAt: dueAt.toISOString(),
        at: expect.any(String),
      },
    ]);
    expect(a.runner.isRunning(solution.solutionId)).toBe(true);
    expect(a.runner.runningCount).toBe(1);
    await a.runner.idle();

    expect(a.runner.isRunning(solution.solutionId)).toBe(false);
    expect(a.runner.runningCount).toBe(0);
    const ks = kinds(a.reports, 'run-1');
    expect(ks[0]).toBe('runStarted');
    expect(ks.at(-1)).toBe('runFinished');
    expect(new Set(ks.slice(1, -1))).toEqual(new Set(['runProgress']));
    const progress = a.reports.filter((r): r is Of<'runProgress'> => r.kind === 'runProgress').map((r) => r.processed);
    expect(progress).toEqual([...progress].sort((x, y) => x - y));
    expect(progress.at(-1)).toBe(2_400);

    const [end] = finished(a.reports);
    const started = a.reports[0] as Of<'runStarted'>;
    expect(end).toMatchObject({
      runId: 'run-1',
      solutionId: solution.solutionId,
      trigger: 'schedule',
      startedAt: started.at,
      result: 'CompletedSuccessfully',
      processed: 2_400,
      failed: 0,
      stopped: false,
    });
    expect(end?.details).toBeUndefined();
    expect(Date.parse(end?.at ?? '')).toBeGreaterThanOrEqual(Date.parse(started.at));
    expect(end?.statistics.map((s) => [s.mapId, s.mapName, s.processed, s.failed])).toEqual([
      [1, 'People into first_copy', 1_200, 0],
      [3, 'People into third_copy', 1_200, 0],
    ]);
    expect(end?.statistics[0]?.blocks.map((b) => b.name)).toEqual(['Q', 'Put']);
    expect([rowCount(target, 'first_copy'), rowCount(target, 'skipped'), rowCount(target, 'third_copy')]).toEqual([
      1_200, 0, 1_200,
    ]);
    // The end is reported, so the next process has no run of this one to end.
    expect(agent([], { dataDir: a.dataDir }).runner.recover()).toBe(0);
  });

  it('runs only the Maps a start names, a disabled one too', async () => {
    const { solution, target } = solutionOf(100, [
      peopleMap(1, 'first_copy'),
      peopleMap(2, 'second_copy', { enabled: false }),
    ]);
    const a = agent([solution]);

    expect(a.runner.start(solution.solutionId, 'run-1', 'start', undefined, undefined, [2]).started).toBe(true);
    await a.runner.idle();

    expect(finished(a.reports)).toMatchObject([
      { runId: 'run-1', result: 'CompletedSuccessfully', processed: 100, statistics: [{ mapId: 2, processed: 100 }] },
    ]);
    expect([rowCount(target, 'first_copy'), rowCount(target, 'second_copy')]).toEqual([0, 100]);
  });

  it('reports the records the target refuses in runErrors, before the end, which counts them', async () => {
    // Every 50th person breaks the target's CHECK.
    const { solution, target } = solutionOf(
      500,
      [peopleMap(1, 'first_copy', { batchSize: 100 })],
      'CREATE TABLE first_copy (id INTEGER PRIMARY KEY, name TEXT, CHECK (id % 50 <> 0));',
    );
    const a = agent([solution]);

    a.runner.start(solution.solutionId, 'run-1', 'start');
    await a.runner.idle();

    const errorReports = a.reports.filter((r): r is Of<'runErrors'> => r.kind === 'runErrors');
    const errors = errorReports.flatMap((r) => r.errors.map((e) => ({ ...r.shared, ...e })));
    expect(errors).toHaveLength(10);
    expect(errors.every((e) => e.mapId === 1 && e.blockName === 'Put' && typeof e.code === 'string')).toBe(true);
    expect(new Set(errors.map((e) => e.id)).size).toBe(10);
    const ks = kinds(a.reports, 'run-1');
    expect(ks.lastIndexOf('runErrors')).toBeLessThan(ks.indexOf('runFinished'));
    expect(finished(a.reports)).toMatchObject([
      {
        result: 'CompletedWithErrors',
        processed: 500,
        failed: 10,
        statistics: [{ mapId: 1, processed: 500, failed: 10 }],
      },
    ]);
    expect(rowCount(target, 'first_copy')).toBe(490);
  });

  it('goes on with the next Map when one cannot run, and ends with a fatal error that names it', async () => {
    const { solution, target } = solutionOf(
      200,
      [peopleMap(1, 'nowhere'), peopleMap(2, 'second_copy')],
      'CREATE TABLE second_copy (id INTEGER PRIMARY KEY, name TEXT);',
    );
    const a = agent([solution]);

    a.runner.start(solution.solutionId, 'run-1', 'start');
    await a.runner.idle();

    const [end] = finished(a.reports);
    expect(end).toMatchObject({ result: 'FatalError', processed: 200, failed: 0 });
    expect(end?.details).toMatch(/^Map People into nowhere \(1\): /);
    expect(end?.statistics).toMatchObject([
      { mapId: 1, processed: 0, fatal: expect.stringMatching(/^Map People into nowhere \(1\): /) },
      { mapId: 2, processed: 200, failed: 0 },
    ]);
    expect(rowCount(target, 'second_copy')).toBe(200);
  });

  it('holds one run of a Solution at a time: a second start, a single-Map start or a reprocess is ignored with the run in progress', async () => {
    const { solution, target } = solutionOf(300, [peopleMap(1, 'first_copy')]);
    const a = agent([solution], { gated: true });

    expect(a.runner.start(solution.solutionId, 'run-1', 'start')).toEqual({ started: true, runId: 'run-1' });
    expect(a.runner.start(solution.solutionId, 'run-2', 'schedule', new Date())).toEqual({
      started: false,
      runId: 'run-1',
    });
    expect(a.runner.start(solution.solutionId, 'run-3', 'start', undefined, undefined, [1])).toEqual({
      started: false,
      runId: 'run-1',
    });
    expect(a.runner.reprocess(solution.solutionId, 'run-4', [{ mapId: 1, records: 1 }])).toEqual({
      started: false,
      runId: 'run-1',
    });
    expect(a.runner.monitor(solution.solutionId)).toMatchObject({ running: true, runId: 'run-1' });
    expect(a.runner.runningCount).toBe(1);
    a.gate.open();
    await a.runner.idle();

    // The ignored starts left no trace: one run, reported once, and every record written once.
    expect(
      a.reports
        .filter((r) => r.kind === 'runStarted' || r.kind === 'runFinished')
        .map((r) => [r.kind, 'runId' in r ? r.runId : '']),
    ).toEqual([
      ['runStarted', 'run-1'],
      ['runFinished', 'run-1'],
    ]);
    expect(finished(a.reports)).toMatchObject([{ result: 'CompletedSuccessfully', processed: 300 }]);
    expect(rowCount(target, 'first_copy')).toBe(300);
    expect(a.runner.monitor(solution.solutionId)).toEqual({ running: false, processed: 0, failed: 0 });
    // Once it ended, the Solution starts again.
    expect(a.runner.start(solution.solutionId, 'run-5', 'start').started).toBe(true);
    await a.runner.idle();
    expect(finished(a.reports).map((e) => [e.runId, e.result])).toEqual([
      ['run-1', 'CompletedSuccessfully'],
      ['run-5', 'CompletedSuccessfully'],
    ]);
  });

  it('executes at most `concurrency` runs at once (two by default); the others wait in the queue, counted as running', async () => {
    const solutions = [1, 2, 3].map((n) => solutionOf(200, [peopleMap(n, `copy_${n}`)]).solution);
    const a = agent(solutions, { gated: true });

    for (const [i, s] of solutions.entries())
      expect(a.runner.start(s.solutionId, `run-${i + 1}`, 'start').started).toBe(true);
    // Each start is reported at once, queued or not.
    expect(a.reports.map((r) => r.kind)).toEqual(['runStarted', 'runStarted', 'runStarted']);
    expect(a.runner.runningCount).toBe(3);
    expect(solutions.every((s) => a.runner.isRunning(s.solutionId))).toBe(true);
    // Two leave the queue; the third cannot until one of them ends.
    await vi.waitFor(() => expect(a.gate.asked).toBe(2));
    expect(a.gate.asked).toBe(2);

    a.gate.open();
    await a.runner.idle();
    expect(a.runner.runningCount).toBe(0);
    expect(finished(a.reports).map((e) => e.result)).toEqual([
      'CompletedSuccessfully',
      'CompletedSuccessfully',
      'CompletedSuccessfully',
    ]);
    // The third asked for the host only after a run had ended.
    const third = a.events.lastIndexOf('host asked');
    expect(a.events.findIndex((e) => e.startsWith('finished '))).toBeLessThan(third);
  });

  it('with a concurrency of one, runs queued Solutions one after the other, in the order they were started', async () => {
    const solutions = [1, 2].map((n) => solutionOf(200, [peopleMap(n, `copy_${n}`)]).solution);
    const a = agent(solutions, { gated: true, concurrency: 1 });

    a.runner.start(solutions[0]?.solutionId ?? '', 'run-1', 'start');
    a.runner.start(solutions[1]?.solutionId ?? '', 'run-2', 'start');
    await vi.waitFor(() => expect(a.gate.asked).toBe(1));
    expect(a.runner.runningCount).toBe(2);
    a.gate.open();
    await a.runner.idle();

    expect(a.events).toEqual(['host asked', 'finished run-1', 'host asked', 'finished run-2']);
  });

  it('stop: a queued run ends stopped before its first Map, not complete and having written nothing', async () => {
    const { solution, target } = solutionOf(300, [peopleMap(1, 'first_copy')]);
    const a = agent([solution], { gated: true });
    a.runner.start(solution.solutionId, 'run-1', 'start');

    expect(a.runner.stop(solution.solutionId)).toEqual({ stopping: true, runId: 'run-1' });
    a.gate.open();
    await a.runner.idle();

    const [end] = finished(a.reports);
    expect(end).toMatchObject({ runId: 'run-1', stopped: true, result: 'FatalError', processed: 0 });
    expect(end?.details).toMatch(/^RUN_STOPPED: /);
    expect(rowCount(target, 'first_copy')).toBe(0);
    expect(a.runner.isRunning(solution.solutionId)).toBe(false);
  });

  it('stop: a run stopped between batches ends stopped with what it wrote, and the next run continues where it stopped', async () => {
    const PEOPLE = 3_000;
    const { solution, target } = solutionOf(PEOPLE, [peopleMap(1, 'first_copy', { batchSize: 100 })]);
    let stopAnswer: ReturnType<SolutionRunner['stop']> | undefined;
    const a = agent([solution], {
      report: (body) => {
        a.reports.push(body);
        // A user's stop arrives while the first batches are written.
        if (body.kind === 'runProgress' && body.processed > 0 && !stopAnswer)
          stopAnswer = a.runner.stop(solution.solutionId);
      },
    });

    a.runner.start(solution.solutionId, 'run-1', 'start');
    await a.runner.idle();
    expect(stopAnswer).toEqual({ stopping: true, runId: 'run-1' });
    const [first] = finished(a.reports);
    expect(first).toMatchObject({ runId: 'run-1', stopped: true, result: 'FatalError', failed: 0 });
    expect(first?.details).toMatch(/^RUN_STOPPED: /);
    const written = rowCount(target, 'first_copy');
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(PEOPLE);
    expect(first?.processed).toBe(written);

    a.runner.start(solution.solutionId, 'run-2', 'start');
    await a.runner.idle();
    // The people left, each once: a record written twice would fail on the key.
    expect(finished(a.reports)[1]).toMatchObject({
      runId: 'run-2',
      stopped: false,
      result: 'CompletedSuccessfully',
      processed: PEOPLE - written,
      failed: 0,
    });
    expect(rowCount(target, 'first_copy')).toBe(PEOPLE);
  });

  it('stop of a Solution that does not run answers that nothing is stopping', () => {
    const { solution } = solutionOf(10, [peopleMap(1, 'first_copy')]);
    const a = agent([solution]);
    expect(a.runner.stop(solution.solutionId)).toEqual({ stopping: false });
    expect(a.reports).toEqual([]);
  });

  it('ends a run interrupted by an Agent restart with a fatal error, never as a success', async () => {
    const { solution, target } = solutionOf(300, [peopleMap(1, 'first_copy')]);
    const a = agent([solution], { gated: true });
    a.runner.start(solution.solutionId, 'run-1', 'start');
    await vi.waitFor(() => expect(a.gate.asked).toBe(1));

    a.work.interruptAll('the Agent restarts');
    a.gate.open();
    await a.runner.idle();

    const [end] = finished(a.reports);
    expect(end).toMatchObject({ runId: 'run-1', stopped: false, result: 'FatalError', processed: 0 });
    expect(end?.details).toMatch(/AGT_INTERRUPTED/);
    expect(rowCount(target, 'first_copy')).toBe(0);
  });

  it('refuses, by code and reporting nothing, a start while the Agent drains and one of a Solution, version or Map it does not hold', () => {
    const { solution } = solutionOf(10, [peopleMap(1, 'first_copy')]);
    const a = agent([solution]);

    expect(codeOf(() => a.runner.start('b0000000-0000-4000-8000-000000000009', 'run-1', 'start'))).toBe(
      'AGT_SOLUTION_NOT_HELD',
    );
    expect(codeOf(() => a.runner.start(solution.solutionId, 'run-2', 'start', undefined, 'an older version'))).toBe(
      'AGT_SOLUTION_NOT_HELD',
    );
    expect(codeOf(() => a.runner.start(solution.solutionId, 'run-3', 'start', undefined, undefined, [1, 99]))).toBe(
      'AGT_SOLUTION_NOT_HELD',
    );
    a.work.drain('restarting');
    expect(codeOf(() => a.runner.start(solution.solutionId, 'run-4', 'start'))).toBe('AGT_DRAINING');

    expect(a.reports).toEqual([]);
    expect(a.runner.isRunning(solution.solutionId)).toBe(false);
    expect(a.runner.runningCount).toBe(0);
  });

  it('recover: the next process on the data folder ends the run its predecessor left open, and the Solution runs again', async () => {
    const { solution, target } = solutionOf(400, [peopleMap(1, 'first_copy')]);
    // The first process starts a run and ends (killed) before the run writes anything.
    const first = agent([solution], { gated: true });
    first.runner.start(solution.solutionId, 'run-1', 'schedule');
    await vi.waitFor(() => expect(first.gate.asked).toBe(1));

    const next = agent([], { dataDir: first.dataDir });
    expect(next.runner.recover()).toBe(1);
    expect(finished(next.reports)).toMatchObject([
      {
        runId: 'run-1',
        solutionId: solution.solutionId,
        trigger: 'schedule',
        result: 'FatalError',
        processed: 0,
        failed: 0,
        stopped: false,
      },
    ]);
    expect(finished(next.reports)[0]?.details).toMatch(/^RUN_AGENT_ENDED: /);

    // The Solution it holds runs again on the next process, and a later start recovers nothing more.
    expect(next.runner.start(solution.solutionId, 'run-2', 'start').started).toBe(true);
    await next.runner.idle();
    expect(finished(next.reports).map((e) => [e.runId, e.result, e.processed])).toEqual([
      ['run-1', 'FatalError', 0],
      ['run-2', 'CompletedSuccessfully', 400],
    ]);
    expect(rowCount(target, 'first_copy')).toBe(400);
    expect(agent([], { dataDir: first.dataDir }).runner.recover()).toBe(0);
  });
});
