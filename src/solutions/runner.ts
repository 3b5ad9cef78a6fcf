/**
 * The Agent's Solution runs: one queue per Agent (p-queue, configurable concurrency), one run at
 * a time per Solution, every report through the durable outbox.
 *
 *   startSolution / scheduler ─▶ start(): held? running? (ignored) ─▶ open run recorded ─▶ runStarted
 *        ─▶ queue ─▶ WorkRegistry (a restart waits for it) ─▶ IS/MS: each enabled Map in order
 *                                                           │   (or only the Maps asked for)
 *                                                           └▶ RS: replicate each entity
 *        ─▶ runErrors (reports of ≤ 200 errors, a batch's written together; ./error-reports.ts),
 *           runProgress (at most every progressMs)
 *           and after each batch its counts in the open run (./committed.ts)
 *        ─▶ runFinished (result, statistics) ─▶ open run removed
 *   next start after a kill -9 ─▶ recover(): every open run ends as RUN_AGENT_ENDED, with the
 *        counts, statistics and time of what it had committed
 *   reprocessRun ─▶ reprocess(): a run like the others (its own execution, ignored while one runs)
 *        whose Maps read the stored copies of failed records instead of their source (./reprocess-copies.ts)
 *   knownRuns ─▶ knownRuns(): the runs open here or still in the outbox; the others are given up
 *        (never started by this process: the Service gives their records back)
 *
 * Stop aborts the run's signal: the Map or entity stops between batches (a batch cut short is not
 * checkpointed), so the next run continues where this one stopped.
 */
import PQueue from 'p-queue';
import type { Logger } from 'pino';
import { FerryError, isFerryError } from '../errors/ferry-error.js';
import { captureSink } from '../failures/capture.js';
import { FailedRecordStore } from '../failures/store.js';
import { openRun, type ConnectionSpec } from '../maps/open-run.js';
import { hms } from '../maps/runtime/stats.js';
import { runMap } from '../maps/runtime/run.js';
import { FileWatermark } from '../maps/runtime/watermark.js';
import { checkpointKeyOf } from '../maps/runtime/checkpoint.js';
import { MapModel } from '../protocol/map.js';
import type { ReportBody } from '../protocol/channel.js';
import {
  shareErrorFields,
  type PreparedSolution,
  type RunMapStats,
  type RunRecordError,
  type RunResult,
  type RunTrigger,
} from '../protocol/solutions.js';
import { mkdirPrivate } from '../util/private-files.js';
import { ErrorBatcher } from './error-reports.js';
import { FailedRecordBatcher, mapRunStats, toFailedRecord, toRunError } from './run-reports.js';
import { CommittedCounts } from './committed.js';
import type { RunCounts } from '../maps/runtime/run-counts.js';
import { replicateSolution } from './replicate-run.js';
import { reprocessCopies, type ReprocessCopies } from '../failures/copies.js';
import type { ReprocessMap } from '../protocol/reprocess.js';
import { agentDataLayout } from '../agent/state.js';
import type { RunRequestResult } from '../protocol/events.js';
import type { PumpMessage } from './message-pump.js';
import { eventPump, EventRuns, isMessageMap, noteRequestError, requestEnd, requestOptions } from './event-runs.js';
import type { ActiveRun, RequestRun, SolutionRunnerOptions } from './runner-types.js';

export type { SolutionRunnerOptions } from './runner-types.js';

export interface StartResult {
  started: boolean;
  runId: string;
}

/** Runs Solutions on this Agent; see the diagram at the top of the file. */
export class SolutionRunner {
  readonly #queue: PQueue;
  readonly #active = new Map<string, ActiveRun>();
  readonly #done = new Set<Promise<void>>();
  /** Runs this process told the Service it does not know: it never starts them. */
  readonly #givenUp = new Set<string>();
  #failures: FailedRecordStore | undefined;
  readonly #now: () => Date;
  readonly #events: EventRuns | undefined;
  /** Request/reply runs, at most 8 at once, beside the run queue. */
  readonly #requests = new PQueue({ concurrency: 8 });

  constructor(private readonly opts: SolutionRunnerOptions) {
    this.#queue = new PQueue({ concurrency: opts.concurrency ?? 2 });
    this.#now = opts.now ?? (() => new Date());
    this.#events = opts.messages
      ? new EventRuns(
          {
            active: (id) => {
              const trigger = this.#active.get(id)?.trigger;
              return trigger && (trigger === 'event' ? 'event' : 'other');
            },
            wake: (id) => {
              for (const pump of this.#active.get(id)?.pumps ?? []) pump.wake();
            },
            messageMaps: (id) =>
              this.opts.store
                .get(id)
                ?.maps.filter((m) => m.enabled && isMessageMap(m.model))
                .map((m) => m.mapId),
            begin: (id, runId, first) => {
              const solution = this.opts.store.get(id);
              if (!solution || this.#active.has(id) || this.opts.work.refusing)
                throw new FerryError('AGT_DRAINING', `The event run of Solution ${id} could not begin now.`);
              this.#begin(solution, { runId, trigger: 'event', first });
            },
          },
          opts.messages,
          opts.log.child({ component: 'events' }),
        )
      : undefined;
  }

  /**
   * runRequest: runs the request/reply Map on the request as a run of its own (beside any other
   * run of the Solution) and resolves with the reply as soon as Send Reply sends it, or with why
   * there is none when the run ends without one. Throws like {@link start}.
   */
  request(
    solutionId: string,
    mapId: number,
    requestId: string,
    body: Record<string, unknown>,
  ): Promise<RunRequestResult> {
    const solution = this.opts.store.get(solutionId);
    if (!solution?.maps.some((m) => m.mapId === mapId))
      throw new FerryError(
        'AGT_SOLUTION_NOT_HELD',
        `This Agent does not hold Map ${mapId} of Solution ${solutionId}; it is sent when the Solution is prepared for this Agent.`,
        { details: { solutionId, mapId } },
      );
    if (this.opts.work.refusing)
      throw new FerryError(
        'AGT_DRAINING',
        'The Agent is waiting to restart or to update a Connector; send the request again shortly.',
      );
    return new Promise((resolve) => {
      let settled = false;
      const settle = (r: RunRequestResult) => {
        if (settled) return;
        settled = true;
        resolve(r);
      };
      this.#begin(solution, { runId: requestId, trigger: 'event', mapIds: [mapId], request: { body, settle } });
    });
  }

  /** messagesWaiting: a run takes the Solution's queued messages (event-runs.ts); AGT_SOLUTION_NOT_HELD when not held. */
  messagesWaiting(solutionId: string): { draining: boolean } {
    if (!this.#events)
      throw new FerryError('AGT_SERVICE_UNREACHABLE', 'This Agent has no way to take messages from the Service.');
    return this.#events.waiting(solutionId);
  }

  /** Whether a run of the Solution is queued or executing. */
  isRunning(solutionId: string): boolean {
    return this.#active.has(solutionId);
  }

  get runningCount(): number {
    return this.#active.size;
  }

  /**
   * Ends every run a previous process left open (killed mid-run) with RUN_AGENT_ENDED. Called once
   * at start, before any new run. The end is what the run had committed when it was last counted:
   * its counts and statistics per Map or entity, and that time as its stop (not now: the process
   * may have been down for hours).
   */
  recover(): number {
    const open = this.opts.store.openRuns();
    for (const r of open) {
      const done = this.opts.store.committed(r.runId);
      const processed = done.statistics.reduce((n, s) => n + s.processed, 0);
      const failed = done.statistics.reduce((n, s) => n + s.failed, 0);
      const at = done.at !== null && done.at > r.startedAt ? done.at : r.startedAt;
      this.opts.report({
        kind: 'runFinished',
        runId: r.runId,
        solutionId: r.solutionId,
        trigger: r.trigger,
        startedAt: r.startedAt,
        at,
        result: failed > 0 ? 'RecordErrorsAndFatalErrors' : 'FatalError',
        processed,
        failed,
        details: `RUN_AGENT_ENDED: The Agent process ended during this run (killed or crashed); its stop time and counts are those of the last batch it committed. ${RESUMES}`,
        stopped: false,
        sourceDataLocal: this.opts.store.get(r.solutionId)?.capture.isSourceDataLocal ?? true,
        statistics: done.statistics.slice(0, 1000),
      });
      this.opts.store.closeRun(r.runId, true);
      this.opts.log.warn(
        { runId: r.runId, solutionId: r.solutionId, startedAt: r.startedAt, stoppedAt: at, processed, failed },
        'run ended with the previous Agent process',
      );
    }
    return open.length;
  }

  /**
   * Starts a run of the Solution unless one is in progress (then `started` is false and `runId`
   * is the one in progress). Throws AGT_SOLUTION_NOT_HELD when the Agent does not hold the Solution
   * (or one of `mapIds`) and AGT_DRAINING while the Agent waits to restart or update. With `mapIds`
   * only those Maps run, disabled or not: a run of one Map is a run of its Solution, so it is
   * ignored while the Solution runs and the Solution's start is ignored while it runs.
   */
  start(
    solutionId: string,
    runId: string,
    trigger: RunTrigger,
    dueAt?: Date,
    version?: string,
    mapIds?: readonly number[],
  ): StartResult {
    const active = this.#active.get(solutionId);
    if (active) return { started: false, runId: active.runId };
    const solution = this.opts.store.get(solutionId);
    if (!solution || (version !== undefined && solution.version !== version)) {
      throw new FerryError(
        'AGT_SOLUTION_NOT_HELD',
        `This Agent does not hold Solution ${solutionId}${solution ? ' at its current version' : ''}; it is sent when the Solution is prepared for this Agent.`,
        { details: { solutionId } },
      );
    }
    const missing = mapIds?.filter((id) => !solution.maps.some((m) => m.mapId === id)) ?? [];
    if (missing.length > 0) {
      throw new FerryError(
        'AGT_SOLUTION_NOT_HELD',
        `This Agent's copy of Solution ${solutionId} has no Map ${missing.join(', ')}; it is sent when the Solution is prepared for this Agent.`,
        { details: { solutionId, mapIds: missing } },
      );
    }
    if (this.opts.work.refusing)
      throw new FerryError(
        'AGT_DRAINING',
        'The Agent is waiting to restart or to update a Connector and starts no new run; start it again shortly.',
        { details: { solutionId } },
      );
    return this.#begin(solution, { runId, trigger, ...(mapIds ? { mapIds: [...mapIds] } : {}) }, dueAt);
  }

  /**
   * Starts a run that reprocesses failed records of `maps` from their stored copies (the local
   * store, or pages from the Service), with the Maps as prepared now; ignored (started false) while
   * a run of the Solution is in progress. Throws like {@link start}.
   */
  reprocess(solutionId: string, runId: string, maps: readonly ReprocessMap[], version?: string): StartResult {
    const active = this.#active.get(solutionId);
    if (active) return { started: false, runId: active.runId };
    const solution = this.opts.store.get(solutionId);
    if (!solution || (version !== undefined && solution.version !== version)) {
      throw new FerryError(
        'AGT_SOLUTION_NOT_HELD',
        `This Agent does not hold Solution ${solutionId}${solution ? ' at its current version' : ''}; it is sent when the Solution is prepared for this Agent.`,
        { details: { solutionId } },
      );
    }
    if (this.opts.work.refusing)
      throw new FerryError(
        'AGT_DRAINING',
        'The Agent is waiting to restart or to update a Connector and starts no new run; reprocess again shortly.',
        { details: { solutionId } },
      );
    return this.#begin(solution, { runId, trigger: 'start', reprocess: [...maps] });
  }

  /**
   * Which of `runIds` this Agent has or had: a run queued or executing, one recorded open (its end
   * not yet in the outbox), or one named by a report still in the outbox (`reported`). Every other
   * one is given up: this process never starts it, so the Service may give its records back. The
   * answer and the giving up happen in one synchronous step, so no start slips in between.
   */
  knownRuns(runIds: readonly string[], reported: ReadonlySet<string>): string[] {
    const active = new Set([...this.#active.values()].map((r) => r.runId.toLowerCase()));
    const open = new Set(this.opts.store.openRuns().map((r) => r.runId.toLowerCase()));
    const known: string[] = [];
    for (const runId of runIds) {
      const id = runId.toLowerCase();
      if (active.has(id) || open.has(id) || reported.has(id)) known.push(runId);
      else this.#givenUp.add(id);
    }
    return known;
  }

  #begin(
    solution: PreparedSolution,
    what: {
      runId: string;
      trigger: RunTrigger;
      mapIds?: number[];
      reprocess?: ReprocessMap[];
      first?: ReadonlyMap<number, PumpMessage[]>;
      request?: RequestRun;
    },
    dueAt?: Date,
  ): StartResult {
    const { runId, trigger, mapIds } = what;
    const solutionId = solution.solutionId;
    if (this.#givenUp.has(runId.toLowerCase())) {
      throw new FerryError(
        'AGT_RUN_ABANDONED',
        `Run ${runId} arrived after this Agent told the Service it never started it; the Service gave its records back, still marked. Reprocess them again.`,
        { details: { solutionId, runId } },
      );
    }
    const startedAt = this.#now().toISOString();
    const run: ActiveRun = {
      ...what,
      solutionId,
      startedAt,
      controller: new AbortController(),
      processed: 0,
      failed: 0,
      stopped: false,
      incomplete: false,
      notices: [],
      pumps: [],
    };
    // Requests run beside the Solution's other runs and each other (a queue of their own).
    if (!what.request) this.#active.set(solutionId, run);
    this.opts.store.openRun({ runId, solutionId, trigger, startedAt, dueAt: dueAt?.toISOString() ?? null });
    this.opts.report({
      kind: 'runStarted',
      runId,
      solutionId,
      trigger,
      ...(dueAt ? { dueAt: dueAt.toISOString() } : {}),
      at: startedAt,
    });
    this.opts.log.info(
      {
        runId,
        solutionId,
        trigger,
        ...(mapIds ? { mapIds } : {}),
        ...(what.reprocess ? { reprocess: what.reprocess } : {}),
      },
      'solution run queued',
    );
    const done = (what.request ? this.#requests : this.#queue)
      .add(async () => {
        // Queued before a Connector update paused new work: wait for it rather than fail.
        await this.opts.work.unpaused();
        return this.opts.work.run('solution', (handle) => this.#execute(solution, run, handle.signal));
      })
      .catch((err: unknown) => this.#finish(solution, run, [], { fatal: errorText(err) }))
      .finally(() => {
        this.#done.delete(done);
        if (what.request) return what.request.settle(requestEnd(run));
        this.#active.delete(solutionId);
        this.#events?.ended(solutionId, {
          event: trigger === 'event',
          more: run.pumps.some((p) => p.more),
          fatal: run.fatal === true,
          serviceUnreachable: run.fatalText?.includes('AGT_SERVICE_UNREACHABLE') === true,
        });
      });
    this.#done.add(done);
    return { started: true, runId };
  }

  /** Stops the Solution's run between batches; false when none is in progress. */
  stop(solutionId: string): { stopping: boolean; runId?: string } {
    const run = this.#active.get(solutionId);
    if (!run) return { stopping: false };
    run.stopped = true;
    run.controller.abort(new FerryError('RUN_CANCELLED', 'Stopped by a user.'));
    this.opts.log.info({ runId: run.runId, solutionId }, 'solution run stop requested');
    return { stopping: true, runId: run.runId };
  }

  monitor(solutionId: string): {
    running: boolean;
    runId?: string;
    startedAt?: string;
    processed: number;
    failed: number;
  } {
    const run = this.#active.get(solutionId);
    if (!run) return { running: false, processed: 0, failed: 0 };
    return { running: true, runId: run.runId, startedAt: run.startedAt, processed: run.processed, failed: run.failed };
  }

  /** Resolves when every queued and running run has ended (the Agent stops). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.#done]);
  }

  close(): void {
    this.#events?.close();
    this.#failures?.close();
  }

  /**
   * A target checkpoint names another run with its counts (maps/runtime/run-counts.ts): when that
   * run ended with an earlier Agent process and these counts were not reported yet, History is told
   * (runCommitted; the Service keeps the larger figures).
   */
  #correct(
    solutionId: string,
    c: RunCounts,
    part: { mapId?: number; mapName: string; entity?: string },
    log: Logger,
  ): void {
    const key = part.mapId !== undefined ? `map:${part.mapId}` : `entity:${part.entity ?? part.mapName}`;
    try {
      if (!this.opts.store.claimCorrection(c.run, key, c.processed)) return;
    } catch (err) {
      log.warn({ err, runId: c.run }, 'the counts of an earlier run in the target checkpoint were not compared');
      return;
    }
    log.info(
      { runId: c.run, ...part, processed: c.processed, failed: c.failed },
      'an earlier run, ended with its Agent process, had committed more than it was counted with: History is told',
    );
    this.opts.report({
      kind: 'runCommitted',
      runId: c.run,
      solutionId,
      ...part,
      processed: c.processed,
      failed: c.failed,
      at: c.at,
    });
  }

  #reportAll(bodies: ReportBody[]): void {
    if (this.opts.reportAll) this.opts.reportAll(bodies);
    else for (const body of bodies) this.opts.report(body);
  }

  #failureStore(): FailedRecordStore {
    this.#failures ??= new FailedRecordStore(agentDataLayout(this.opts.dataDir).failures);
    return this.#failures;
  }

  /** The stored copies of a reprocess run's records of one Map, pulled page by page as the Map reads them. */
  #copies(
    run: ActiveRun,
    map: PreparedSolution['maps'][number],
    batchSize: number,
    onMissing: (e: RunRecordError) => void,
  ): ReprocessCopies {
    const pages = this.opts.reprocessPages;
    if (!pages)
      throw new FerryError(
        'AGT_SERVICE_UNREACHABLE',
        'This Agent has no way to read the records to reprocess from the Service.',
      );
    return reprocessCopies({
      runId: run.runId,
      mapId: map.mapId,
      pages,
      local: this.#failureStore(),
      signal: run.controller.signal,
      batchSize,
      onMissing: (r) =>
        onMissing({
          id: globalThis.crypto.randomUUID(),
          mapId: map.mapId,
          mapName: map.name.slice(0, 500),
          sourceEntity: '',
          code: 'RUN_FAILED_RECORD_NOT_FOUND',
          errorMessage: `The stored copy of the failed record of error ${r.errorId} is neither on the Service nor in this Agent's failed-record store (it was kept on another Agent, or removed); it was not reprocessed.`,
          errorDetail: JSON.stringify({ errorId: r.errorId, failedRecordId: r.failedRecordId }),
          canReprocess: false,
        }),
    });
  }

  async #execute(solution: PreparedSolution, run: ActiveRun, workSignal: AbortSignal): Promise<void> {
    const signal = AbortSignal.any([workSignal, run.controller.signal]);
    // Every line of the run, down to its Connections', carries both IDs: Solution logs filter on them.
    const log = this.opts.log.child({ solutionId: solution.solutionId, runId: run.runId, executionId: run.runId });
    log.info({ type: solution.solutionType }, 'solution run started');
    const errors = new ErrorBatcher((batches) =>
      this.#reportAll(
        batches.map((batch) => ({
          kind: 'runErrors',
          runId: run.runId,
          solutionId: solution.solutionId,
          ...shareErrorFields(batch),
        })),
      ),
    );
    const committed = new CommittedCounts(this.opts.store, run.runId, log);
    // An event run's messages are acknowledged only once their record errors and counts are kept.
    run.flushErrors = () => {
      errors.flush();
      committed.flush();
    };
    let lastProgress = 0;
    const progress = (processed: number, failed: number): void => {
      run.processed = processed;
      run.failed = failed;
      const t = Date.now();
      if (t - lastProgress < (this.opts.progressMs ?? 5_000)) return;
      lastProgress = t;
      // The open run first: a kill right after the report is recovered with no fewer records than it said.
      committed.flush();
      this.opts.report({
        kind: 'runProgress',
        runId: run.runId,
        solutionId: solution.solutionId,
        at: this.#now().toISOString(),
        processed,
        failed,
      });
    };
    const statistics: RunMapStats[] = [];
    let fatal: string | undefined;
    try {
      if (solution.solutionType === 'Replication') {
        const r = await replicateSolution({
          solution,
          host: await this.opts.host(),
          signal,
          dataDir: this.opts.dataDir,
          log,
          onProgress: (processed, failed) => {
            this.opts.onBatch?.();
            progress(processed, failed);
          },
          onRecordError: (e) => errors.add(e),
          committed,
          runId: run.runId,
          onEarlierRun: (entity, c) => this.#correct(solution.solutionId, c, { mapName: entity, entity }, log),
          targetRetryMs: this.opts.targetRetryMs,
        });
        statistics.push(...r.statistics);
        fatal = r.fatal;
        run.incomplete ||= r.cancelled;
        if (r.retainedBytes !== undefined) this.opts.onChangeCapture?.(solution.solutionId, r.retainedBytes);
      } else {
        fatal = await this.#runMaps(
          solution,
          run,
          workSignal,
          log,
          statistics,
          progress,
          (e) => errors.add(e),
          committed,
        );
      }
    } finally {
      errors.flush();
      committed.close();
    }
    // An interruption (a restart with restartNow=true, a stop past its grace) ends the Maps and
    // entities between batches without an error of their own, like a user's stop: without this the
    // run would be reported CompletedSuccessfully although it did not copy everything.
    if (workSignal.aborted) {
      const interrupted = `${errorText(workSignal.reason)} ${RESUMES}`;
      fatal = fatal === undefined ? interrupted : `${interrupted}\n${fatal}`;
    }
    this.#finish(solution, run, statistics, { ...(fatal !== undefined ? { fatal } : {}) });
  }

  /**
   * Runs the enabled Maps in order; a Map that cannot run is recorded and the next one runs.
   * Returns the fatal errors' text. A user's stop ends the Map between batches (the batch in
   * progress is written and checkpointed); `signal` (an Agent restart with restartNow) aborts at once.
   */
  async #runMaps(
    solution: PreparedSolution,
    run: ActiveRun,
    signal: AbortSignal,
    log: Logger,
    statistics: RunMapStats[],
    progress: (processed: number, failed: number) => void,
    onError: (e: RunRecordError) => void,
    committed: CommittedCounts,
  ): Promise<string | undefined> {
    const host = await this.opts.host();
    const specs: Record<string, ConnectionSpec> = {};
    for (const c of solution.connections)
      specs[c.connectionId] = { connector: c.connectorId, properties: c.properties };
    const tables =
      solution.lookupTables.length > 0 && this.opts.lookupTables
        ? await this.opts.lookupTables(solution.orgId, solution.lookupTables)
        : [];
    const cloud = new FailedRecordBatcher((records) =>
      this.opts.report({ kind: 'runFailedRecords', runId: run.runId, solutionId: solution.solutionId, records }),
    );
    const sink = captureSink(
      solution.capture,
      this.opts.runsOn,
      solution.capture.captureOnFailedRecordsForReprocessing ? this.#failureStore() : undefined,
      (rec) => {
        cloud.add(toFailedRecord(rec));
        return Promise.resolve();
      },
    );
    const fatals: string[] = [];
    let processed = 0;
    let failed = 0;
    const only = run.reprocess ? run.reprocess.map((m) => m.mapId) : run.mapIds;
    for (const mapId of (run.reprocess ?? [])
      .map((m) => m.mapId)
      .filter((id) => !solution.maps.some((m) => m.mapId === id))) {
      fatals.push(`Map ${mapId}: not in the Solution any more; its marked records were not reprocessed.`);
    }
    for (const map of solution.maps) {
      if (only ? !only.includes(map.mapId) : !map.enabled) continue;
      // An event run takes the messages of the message Maps; the other Maps run on a start.
      if (run.trigger === 'event' && !run.request && !isMessageMap(map.model)) continue;
      if (signal.aborted || run.controller.signal.aborted) {
        // A Map left unrun by a stop: the run is not complete.
        run.incomplete = true;
        break;
      }
      try {
        const model = MapModel.parse(map.model);
        const handle = await openRun(model, { host, connections: specs, runLog: log });
        committed.begin({ mapId: map.mapId, mapName: map.name, entity: handle.plan.starter.entity });
        try {
          // A reprocess run reads the stored copies of its records instead of the source, and moves no watermark.
          const copies = run.reprocess
            ? this.#copies(run, map, handle.plan.model.batchSize ?? 2000, onError)
            : undefined;
          const pump = eventPump(run, this.opts.messages, { solution, map, handle, signal, onError, cloud });
          const state = agentDataLayout(this.opts.dataDir);
          mkdirPrivate(state.checkpoints);
          const result = await runMap(handle.plan, {
            connections: handle.connections,
            executionId: run.runId,
            signal,
            stop: run.controller.signal,
            ...(this.opts.stopGraceMs !== undefined ? { stopGraceMs: this.opts.stopGraceMs } : {}),
            ...(this.opts.targetRetryMs !== undefined ? { targetRetry: { budgetMs: this.opts.targetRetryMs } } : {}),
            onRetry: (n) =>
              log.warn(
                {
                  mapId: map.mapId,
                  block: n.blockName,
                  attempt: n.attempt,
                  waitMs: n.waitMs,
                  code: n.error.code,
                  err: { message: n.error.message },
                },
                'write failed as a whole: the datastore is tried again',
              ),
            lookupTables: tables,
            ...(pump
              ? { source: pump.batches() }
              : copies
                ? { source: copies.batches }
                : {
                    watermark: new FileWatermark(state.mapCheckpoint(solution.solutionId, map.mapId)),
                    checkpoint: checkpointKeyOf({ kind: 'map', solutionId: solution.solutionId, mapId: map.mapId }),
                  }),
            ...(sink ? { failures: sink } : {}),
            onProgress: (p) => {
              this.opts.onBatch?.();
              const missing = (copies?.missing ?? 0) + (pump?.invalid ?? 0);
              committed.batch(p.processed + missing, p.failed + missing, p.saving);
              pump?.progress(p.processed);
              progress(processed + p.processed + missing, failed + p.failed + missing);
            },
            ...requestOptions(run),
            onRecordError: (e) => onError(toRunError(noteRequestError(run, e), map.mapId)),
            onEarlierRun: (c) => this.#correct(solution.solutionId, c, { mapId: map.mapId, mapName: map.name }, log),
          });
          // Records without a stored copy, and unreadable messages, failed before the Map saw them: processed and failed.
          const missing = (copies?.missing ?? 0) + (pump?.invalid ?? 0);
          run.incomplete ||= result.stats.cancelled;
          if (result.notice) {
            run.notices.push(`Map ${map.name} (${map.mapId}): ${result.notice}`);
            log.warn({ mapId: map.mapId }, result.notice);
          }
          const entry = mapRunStats(map, result.stats, missing);
          processed += entry.processed;
          failed += entry.failed;
          statistics.push(entry);
          committed.end(entry);
          await pump
            ?.flush()
            .catch((err: unknown) =>
              log.warn(
                { err, mapId: map.mapId },
                'written messages not acknowledged: they are taken again after the run',
              ),
            );
        } finally {
          await handle.close();
        }
      } catch (err) {
        if (signal.aborted) break;
        const text = `Map ${map.name} (${map.mapId}): ${errorText(err)}`;
        fatals.push(text);
        log.warn({ mapId: map.mapId, code: isFerryError(err) ? err.code : undefined }, 'map could not run');
        // What it committed before it failed stands, and is counted, with the time of those batches.
        const before = committed.current ?? { processed: 0, failed: 0, minMs: 0, maxMs: 0, avgMs: 0, totalMs: 0 };
        processed += before.processed;
        failed += before.failed;
        const entry: RunMapStats = {
          mapId: map.mapId,
          mapName: map.name,
          ...before,
          totalTime: hms(before.totalMs),
          fatal: text,
          blocks: [],
        };
        statistics.push(entry);
        committed.end(entry);
      }
      // Before the Map's record errors leave: the errors name these records.
      cloud.flush();
      progress(processed, failed);
    }
    cloud.flush();
    return fatals.length > 0 ? fatals.join('\n') : undefined;
  }

  #finish(solution: PreparedSolution, run: ActiveRun, statistics: RunMapStats[], end: { fatal?: string }): void {
    const processed = statistics.length > 0 ? statistics.reduce((n, s) => n + s.processed, 0) : run.processed;
    const failed = statistics.length > 0 ? statistics.reduce((n, s) => n + s.failed, 0) : run.failed;
    // A run a user stopped before its end did not copy everything: not a success a client can take for one.
    const cut =
      run.stopped && run.incomplete && end.fatal === undefined
        ? `RUN_STOPPED: Stopped by a user before the run was complete (${processed} records processed). ${RESUMES}`
        : undefined;
    const fatal = end.fatal ?? cut;
    run.fatal = end.fatal !== undefined;
    if (fatal !== undefined) run.fatalText = fatal;
    const result: RunResult =
      fatal !== undefined
        ? failed > 0
          ? 'RecordErrorsAndFatalErrors'
          : 'FatalError'
        : failed > 0
          ? 'CompletedWithErrors'
          : 'CompletedSuccessfully';
    const notices = run.notices.length > 0 ? run.notices.join('\n') : undefined;
    const details =
      fatal !== undefined
        ? [fatal, ...run.notices].join('\n')
        : (notices ?? (run.stopped ? 'Stopped by a user after the last batch; the run is complete.' : undefined));
    this.opts.report({
      kind: 'runFinished',
      runId: run.runId,
      solutionId: solution.solutionId,
      trigger: run.trigger,
      startedAt: run.startedAt,
      at: this.#now().toISOString(),
      result,
      processed,
      failed,
      ...(details !== undefined ? { details: details.slice(0, 10_000) } : {}),
      stopped: run.stopped,
      sourceDataLocal: solution.capture.isSourceDataLocal,
      statistics,
    });
    // After the end is in the outbox: a kill between the two reports the end twice, which the Service counts once.
    this.opts.store.closeRun(run.runId);
    this.opts.log.info(
      { runId: run.runId, solutionId: solution.solutionId, result, processed, failed, stopped: run.stopped },
      'solution run finished',
    );
  }
}

function errorText(err: unknown): string {
  if (isFerryError(err)) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * What the next run does after one cut short: said as it is, since not every Map can resume (a
 * Map without net change into a keyed table reads its source again, and the key refuses what is
 * written already; docs/reliability.md).
 */
const RESUMES =
  'The next run continues from the last written batch for Replications, Maps with net change and Maps that create records in a PostgreSQL or SQLite table without a key; other Maps read their source again from the start.';
