import type { FastifyBaseLogger } from 'fastify';
import type { JobClaims } from './claims.js';
import type { CloudAgentHost, CloudAgentSupervisor } from './cloud-agents.js';
import { PeriodicJob } from './periodic-job.js';

export interface ClaimedCloudAgentsOptions {
  readonly supervisor: CloudAgentSupervisor;
  readonly claims: JobClaims;
  /** The Cloud Agents that exist (their records). */
  readonly list: () => Promise<readonly string[]>;
  readonly log: FastifyBaseLogger;
  /** Time between two checks of the claim and of the records (default 5 s). */
  readonly intervalMs?: number;
}

/**
 * Cloud Agents run under one Service process at a time (docs/deploy.md, "Work runs once"):
 *
 *   every 5 s ─▶ claim 'cloud-agents' ─ mine ─▶ run every Cloud Agent whose record exists,
 *                                      │        stop (and remove) those whose record is gone
 *                                      └ another replica's ─▶ stop those this process still ran
 *
 * A Cloud Agent created or deleted through another replica is started or removed here within an
 * interval. When the holder dies, its claim passes (two intervals and a margin) and the next
 * replica to check starts the Cloud Agents; they register again from a new home there, as the one
 * on the dead replica's disk cannot be reached. A replica that stops gives the claim up first.
 */
export class ClaimedCloudAgents implements CloudAgentHost {
  readonly enabled = true;
  readonly #opts: ClaimedCloudAgentsOptions;
  readonly #job: PeriodicJob;
  readonly #log: FastifyBaseLogger;
  #active = false;

  constructor(opts: ClaimedCloudAgentsOptions) {
    this.#opts = opts;
    this.#log = opts.log.child({ component: 'cloud-agents' });
    this.#job = new PeriodicJob({
      intervalMs: opts.intervalMs ?? 5_000,
      tick: () => this.#reconcile(),
      log: this.#log,
      failed: 'cloud agent check failed',
      level: 'warn',
      once: { claims: opts.claims, name: 'cloud-agents', unclaimed: () => this.#standBy() },
    });
  }

  /** Whether this process runs the Cloud Agents now. */
  get active(): boolean {
    return this.#active;
  }

  /** Begins checking, with a first check at once; Cloud Agents reach the Service at `url`. */
  async begin(url: string): Promise<void> {
    this.#opts.supervisor.setServiceUrl(url);
    this.#job.start();
    await this.#job.tickNow();
  }

  start(agentId: string): void {
    // Elsewhere the replica that runs Cloud Agents starts it at its next check.
    if (this.#active) this.#opts.supervisor.start(agentId);
  }

  remove(agentId: string): Promise<void> {
    // Not running here: only its folder, if any, goes; the holder removes the process at its next check.
    return this.#opts.supervisor.remove(agentId);
  }

  /** Stops checking and every Cloud Agent this process runs. */
  async close(): Promise<void> {
    await this.#job.stop();
    await this.#opts.supervisor.close();
  }

  async #reconcile(): Promise<void> {
    if (!this.#active) this.#log.info('this Service process runs the Cloud Agents');
    this.#active = true;
    const { supervisor } = this.#opts;
    const ids = new Set(await this.#opts.list());
    for (const id of ids) supervisor.start(id);
    for (const id of supervisor.running()) if (!ids.has(id)) await supervisor.remove(id);
  }

  async #standBy(): Promise<void> {
    if (!this.#active) return;
    this.#active = false;
    this.#log.info('another Service replica runs the Cloud Agents now: stopping those here');
    await this.#opts.supervisor.stopAll();
  }
}
