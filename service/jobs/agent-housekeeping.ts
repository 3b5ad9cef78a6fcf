import type { FastifyBaseLogger } from 'fastify';
import type { LogArchives } from '../store/log-archives.js';
import { deleteAgentLogs, listAgentLogsBefore } from '../store/repos/agent-logs.repo.js';
import { deleteExpiredInstallationKeys, pruneReports } from '../store/repos/agents.repo.js';
import type { Store } from '../store/store.js';
import type { JobClaims } from './claims.js';
import { PeriodicJob } from './periodic-job.js';

const DAY = 24 * 60 * 60 * 1000;

export interface HousekeepingOptions {
  store: Store;
  log: FastifyBaseLogger;
  logArchives: LogArchives;
  /** Dedupe rows are kept this long: a report resent later than this would count again (default 30 days). */
  reportRetentionMs?: number;
  /** Log requests (and any zip never downloaded) are removed after this (default 7 days). */
  logRetentionMs?: number;
  /** Expired installation keys are removed this long after expiry (default 7 days). */
  keyRetentionMs?: number;
  intervalMs?: number;
  /** With replicas: which of them runs the pass (service/jobs/claims.ts). */
  claims?: JobClaims;
}

/** Removes what the Agent features leave behind: old dedupe rows, expired keys, stale log archives. */
export class AgentHousekeeping {
  readonly #opts: HousekeepingOptions;
  readonly #job: PeriodicJob;

  constructor(opts: HousekeepingOptions) {
    this.#opts = opts;
    this.#job = new PeriodicJob({
      intervalMs: opts.intervalMs ?? 60 * 60 * 1000,
      tick: () => this.run(),
      log: opts.log.child({ component: 'housekeeping' }),
      failed: 'agent housekeeping failed',
      ...(opts.claims ? { once: { claims: opts.claims, name: 'agent-housekeeping' } } : {}),
    });
  }

  start(): void {
    this.#job.start();
  }

  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void> {
    return this.#job.stop();
  }

  async run(nowMs: number = Date.now()): Promise<void> {
    const { db } = this.#opts.store;
    const iso = (ms: number) => new Date(nowMs - ms).toISOString();
    const reports = await pruneReports(db, iso(this.#opts.reportRetentionMs ?? 30 * DAY));
    const keys = await deleteExpiredInstallationKeys(db, iso(this.#opts.keyRetentionMs ?? 7 * DAY));
    const stale = await listAgentLogsBefore(db, iso(this.#opts.logRetentionMs ?? 7 * DAY));
    for (const id of stale) await this.#opts.logArchives.remove(id);
    await deleteAgentLogs(db, stale);
    if (reports + keys + stale.length > 0)
      this.#opts.log.info({ component: 'housekeeping', reports, keys, logs: stale.length }, 'agent housekeeping done');
  }
}
