import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { MAX_KNOWN_RUNS, type KnownRunsResult } from '../../src/protocol/reprocess.js';
import type { AgentCommand } from '../gateway/agent-command.js';
import { PeriodicJob } from '../jobs/periodic-job.js';
import { undoReprocessRun } from '../store/repos/error-marks.repo.js';
import { unendedReprocessRuns } from '../store/repos/executions.repo.js';
import type { Database } from '../store/schema.js';
import type { Store } from '../store/store.js';

/** The channel to the Agents, as the check needs it (passed in by build-service.ts). */
export interface LostRunsChannel {
  /** The Agents connected to this Service process now. */
  connected(): readonly string[];
  /** Sends the command and resolves with its parsed result (AgentCommands.send). */
  send(agentId: string, command: AgentCommand<'knownRuns'>): Promise<KnownRunsResult>;
}

export interface LostReprocessRunsOptions {
  readonly db: Kysely<Database>;
  /** The transaction that gives a run's errors back, a write of every one of them (Reprocessing's). */
  readonly bulkTransaction: Store['bulkTransaction'];
  readonly channel: LostRunsChannel;
  readonly log: FastifyBaseLogger;
  /** Whether this process still waits for the Agent's answer to the run's reprocessRun (Reprocessing.isSending). */
  readonly sending: (runId: string) => boolean;
  /** A run younger than this is not asked about (default 10 s: how long the Service waits for the answer to reprocessRun). */
  readonly graceMs?: number;
  /** Time between two checks of every connected Agent (default 1 minute). */
  readonly intervalMs?: number;
  readonly now?: () => Date;
}

/**
 * Reprocess runs whose Agent never answered reprocessRun (the send timed out, the channel dropped)
 * have taken their records and show as in progress. Whether the Agent started one is known only to
 * the Agent, so the Service asks it — when it connects, and every minute while it is connected:
 *
 *   runs of the Agent: isReprocessJob, no result, older than the grace, not being sent now
 *     ─▶ knownRuns {runIds} ─▶ Agent: open here, or a report of it still in the outbox?
 *     ◀── {known}               the others it gives up for good: it never starts them
 *     ─▶ known: nothing; the run reports its own end (a killed Agent ends it as RUN_AGENT_ENDED)
 *     ─▶ not known: in one transaction, the execution removed while it has no result and its
 *        errors given back — marked and reprocessable, as when an Agent answers "not started"
 *
 * Records of a run the Agent started are never given back: the Agent writes the open run and its
 * runStarted report durably before it answers reprocessRun, and keeps one of them until the Service
 * has acknowledged the run's end, which sets the execution's result. An Agent that cannot be asked
 * (not connected, an older version, no answer) changes nothing: it is asked again later.
 */
export class LostReprocessRuns {
  readonly #opts: LostReprocessRunsOptions;
  readonly #log: FastifyBaseLogger;
  readonly #job: PeriodicJob;
  readonly #now: () => Date;
  /** Checks started by a connect, awaited by stop(). */
  readonly #checks = new Set<Promise<unknown>>();

  constructor(opts: LostReprocessRunsOptions) {
    this.#opts = opts;
    this.#log = opts.log.child({ component: 'lost-reprocess-runs' });
    this.#now = opts.now ?? (() => new Date());
    this.#job = new PeriodicJob({
      intervalMs: opts.intervalMs ?? 60_000,
      tick: () => this.sweep(),
      log: this.#log,
      failed: 'lost reprocess run check failed',
    });
  }

  start(): void {
    this.#job.start();
  }

  /** Stops the timer and waits for the checks in progress. */
  async stop(): Promise<void> {
    await this.#job.stop();
    await Promise.allSettled([...this.#checks]);
  }

  /** The Agent connected: checks its runs now, in the background. */
  connected(agentId: string): void {
    const check = this.check(agentId).catch((err: unknown) =>
      this.#log.error({ err, agentId }, 'lost reprocess run check failed'),
    );
    this.#checks.add(check);
    void check.finally(() => this.#checks.delete(check));
  }

  /** Checks every connected Agent; resolves to the number of runs undone. */
  async sweep(): Promise<number> {
    let undone = 0;
    for (const agentId of this.#opts.channel.connected()) undone += await this.check(agentId);
    return undone;
  }

  /** Asks the Agent about its unanswered reprocess runs and undoes those it never started; resolves to how many. */
  async check(agentId: string): Promise<number> {
    const { db, channel, sending } = this.#opts;
    const before = new Date(this.#now().getTime() - (this.#opts.graceMs ?? 10_000)).toISOString();
    const runs = (await unendedReprocessRuns(db, agentId, before, MAX_KNOWN_RUNS)).filter((r) => !sending(r.runId));
    if (runs.length === 0) return 0;
    let known: Set<string>;
    try {
      const answer = await channel.send(agentId, { type: 'knownRuns', runIds: runs.map((r) => r.runId) });
      known = new Set(answer.known.map((id) => id.toLowerCase()));
    } catch (err) {
      this.#log.debug(
        { err, agentId, runs: runs.length },
        'agent not asked about its reprocess runs; asked again at the next check',
      );
      return 0;
    }
    let undone = 0;
    for (const run of runs) {
      if (known.has(run.runId.toLowerCase())) continue;
      const records = await this.#opts.bulkTransaction((tx) => undoReprocessRun(tx, run.runId));
      if (records === undefined) continue;
      undone += 1;
      this.#log.warn(
        { agentId, solutionId: run.solutionId, runId: run.runId, start: run.start, records },
        'reprocess run never started by its agent: records given back, still marked',
      );
    }
    return undone;
  }
}
