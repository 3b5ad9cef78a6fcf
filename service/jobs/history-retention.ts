import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { AgentCommand } from '../gateway/agent-command.js';
import {
  deleteEndedExecution,
  deleteErrorsChunk,
  deleteScheduleSkipsChunk,
  expiredExecutions,
} from '../store/repos/executions.repo.js';
import { deleteFailedRecordsOfRun, deleteOrphanFailedRecords } from '../store/repos/failed-records.repo.js';
import { pruneHistoryExports } from '../store/repos/history-exports.repo.js';
import type { Store } from '../store/store.js';
import type { JobClaims } from './claims.js';
import { PeriodicJob } from './periodic-job.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export interface HistoryRetentionOptions {
  readonly store: Store;
  readonly log: FastifyBaseLogger;
  /** Days of History kept (FERRY_HISTORY_RETENTION_DAYS). */
  readonly retentionDays: number;
  /** The connected Agents, told the window's start so they prune their local failed records. */
  readonly agents?: {
    readonly connected: () => readonly string[];
    readonly send: (agentId: string, command: AgentCommand) => Promise<unknown>;
  };
  /** Time between two passes (default 1 hour). */
  readonly intervalMs?: number;
  /** Rows one DELETE removes at most (default 5,000). */
  readonly chunk?: number;
  readonly now?: () => Date;
  /**
   * With replicas: which of them removes History (service/jobs/claims.ts); every replica still
   * tells the Agents it holds the window's start at each pass.
   */
  readonly claims?: JobClaims;
}

/** What one pass removed. */
export interface RetentionResult {
  executions: number;
  errors: number;
  failedRecords: number;
  skips: number;
  exports: number;
}

/**
 * Removes History past the window (SPEC.md "Limits": 45 days, FERRY_HISTORY_RETENTION_DAYS), on a
 * timer like the Agent housekeeping:
 *
 *   pass ─▶ ended executions that started before the window, oldest first, 100 at a time
 *            └▶ each: its errors, top seq first, a chunk per DELETE ─▶ its cloud failed records,
 *                     a chunk per DELETE ─▶ the execution row (its exports cascade)
 *        ─▶ cloud failed records before the window that no kept execution owns (a chunk per DELETE)
 *        ─▶ skipped due times before the window ─▶ expired exports
 *        ─▶ pruneFailedRecords {before} to every connected Agent (and to each Agent as it connects)
 *
 * Every DELETE is its own statement of at most `chunk` rows and the loop yields between them, so
 * an execution with a million errors never holds the store (on SQLite, its one writer) for more
 * than one chunk: requests and Agent reports interleave. A run still going is never removed,
 * whatever its age, nor an execution of a Solution while one of its runs that started inside the
 * window is going (a reprocess run reads the errors of an older execution). An execution removed
 * halfway (the Service stopped) is finished by the next pass.
 */
export class HistoryRetention {
  readonly #opts: HistoryRetentionOptions;
  readonly #now: () => Date;
  readonly #job: PeriodicJob;

  constructor(opts: HistoryRetentionOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? (() => new Date());
    this.#job = new PeriodicJob({
      intervalMs: opts.intervalMs ?? 60 * 60 * 1000,
      tick: () => this.run(),
      log: opts.log.child({ component: 'history-retention' }),
      failed: 'history retention failed',
      ...(opts.claims
        ? { once: { claims: opts.claims, name: 'history-retention', unclaimed: () => this.#tellAgents(this.#now()) } }
        : {}),
    });
  }

  start(): void {
    this.#job.start();
  }

  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void> {
    return this.#job.stop();
  }

  /** The start of the window at `now`: History that started before it is removed. */
  windowStart(now: Date = this.#now()): string {
    return new Date(now.getTime() - this.#opts.retentionDays * DAY_MS).toISOString();
  }

  /** One pass; also tells the connected Agents the window's start. */
  async run(now: Date = this.#now()): Promise<RetentionResult> {
    const { db } = this.#opts.store;
    const before = this.windowStart(now);
    const chunk = this.#opts.chunk ?? 5000;
    const result: RetentionResult = { executions: 0, errors: 0, failedRecords: 0, skips: 0, exports: 0 };
    for (;;) {
      const batch = await expiredExecutions(db, before, 100);
      if (batch.length === 0) break;
      let removed = 0;
      for (const execution of batch) {
        result.errors += await untilDone(() => deleteErrorsChunk(db, execution.id, chunk), chunk);
        result.failedRecords += await untilDone(() => deleteFailedRecordsOfRun(db, execution.runId, chunk), chunk);
        if (await deleteEndedExecution(db, execution.id)) removed += 1;
      }
      result.executions += removed;
      if (removed === 0) break;
    }
    result.failedRecords += await untilDone(() => deleteOrphanFailedRecords(db, before, chunk), chunk);
    result.skips += await untilDone(() => deleteScheduleSkipsChunk(db, before, chunk), chunk);
    result.exports = await pruneHistoryExports(db, now.toISOString());
    await this.#tellAgents(now);
    if (result.executions + result.failedRecords + result.skips > 0)
      this.#opts.log.info({ component: 'history-retention', before, ...result }, 'history past the window removed');
    return result;
  }

  /** Tells every Agent this process holds the channel of the window's start. */
  #tellAgents(now: Date): Promise<void> {
    for (const agentId of this.#opts.agents?.connected() ?? []) this.pruneAgent(agentId, now);
    return Promise.resolve();
  }

  /** Tells an Agent the window's start, so it removes its local failed records of the runs before it; never throws. */
  pruneAgent(agentId: string, now: Date = this.#now()): void {
    const send = this.#opts.agents?.send;
    if (!send) return;
    send(agentId, { type: 'pruneFailedRecords', before: this.windowStart(now) }).catch((err: unknown) =>
      this.#opts.log.debug(
        { err, agentId, component: 'history-retention' },
        'agent did not prune its failed records; the next pass asks again',
      ),
    );
  }
}

/** Runs `step` (one bounded DELETE) until it removes less than `chunk`, yielding between steps; answers the total. */
async function untilDone(step: () => Promise<number>, chunk: number): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await step();
    total += n;
    await yieldToLoop();
    if (n < chunk) return total;
  }
}
