import type { FastifyBaseLogger } from 'fastify';
import { listSilentAgents, updateAgentIfUnchanged } from '../store/repos/agents.repo.js';
import type { AgentRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import type { Store } from '../store/store.js';
import type { JobClaims } from '../jobs/claims.js';
import { PeriodicJob } from '../jobs/periodic-job.js';
import { STOPPED_STATUSES, sweepStatus } from './agent-state.js';

export interface SweeperOptions {
  store: Store;
  log: FastifyBaseLogger;
  /** No contact this long: HeartbeatLate (FERRY_HEARTBEAT_LATE_AFTER). */
  lateAfterMs: number;
  /** No contact this long: HeartbeatFailed (FERRY_HEARTBEAT_FAILED_AFTER). */
  failedAfterMs: number;
  /**
   * Called once per move to HeartbeatFailed, in the move's transaction, with the record as it was
   * before (notification mails); when it throws, the move is undone and tried at the next sweep.
   */
  onHeartbeatFailed?: ((tx: Db, agent: SilentAgent) => Promise<void>) | undefined;
  /** With replicas: which of them sweeps (service/jobs/claims.ts). */
  claims?: JobClaims;
}

/** What the sweeper knows of a silent Agent. */
export type SilentAgent = Pick<AgentRow, 'id' | 'orgId' | 'status' | 'lastContactTime'>;

/** How often the sweeper looks: a quarter of the late threshold, at most every 30 s. */
export function sweepIntervalMs(lateAfterMs: number): number {
  return Math.max(50, Math.min(Math.floor(lateAfterMs / 4), 30_000));
}

/**
 * Derives HeartbeatLate and HeartbeatFailed from lastContactTime. It moves only Agents that are
 * silent, not stopped, and unchanged since it read them, so a heartbeat that lands meanwhile wins.
 * With replicas, one of them sweeps at a time (`claims`); were two to sweep at once, the
 * conditional update would still move each Agent once.
 */
export class HeartbeatSweeper {
  readonly #opts: SweeperOptions;
  readonly #log: FastifyBaseLogger;
  readonly #job: PeriodicJob;

  constructor(opts: SweeperOptions) {
    this.#opts = opts;
    this.#log = opts.log.child({ component: 'sweeper' });
    this.#job = new PeriodicJob({
      intervalMs: sweepIntervalMs(opts.lateAfterMs),
      tick: () => this.sweep(),
      log: this.#log,
      failed: 'heartbeat sweep failed',
      ...(opts.claims ? { once: { claims: opts.claims, name: 'heartbeat-sweep' } } : {}),
    });
  }

  start(): void {
    this.#job.start();
  }

  /** Stops the timer and waits for a sweep in progress. */
  stop(): Promise<void> {
    return this.#job.stop();
  }

  /** One pass; resolves to the number of Agents moved. */
  async sweep(nowMs: number = Date.now()): Promise<number> {
    const { db } = this.#opts.store;
    const { lateAfterMs, failedAfterMs } = this.#opts;
    const silent = await listSilentAgents(db, new Date(nowMs - lateAfterMs).toISOString(), [
      ...STOPPED_STATUSES,
      'HeartbeatFailed',
    ]);
    let moved = 0;
    for (const agent of silent) {
      const next = sweepStatus(agent.status, agent.lastContactTime, nowMs, lateAfterMs, failedAfterMs);
      if (!next) continue;
      const hook = next === 'HeartbeatFailed' ? this.#opts.onHeartbeatFailed : undefined;
      const movedIt = hook
        ? await db
            .transaction()
            .execute(async (tx) => {
              if (!(await updateAgentIfUnchanged(tx, agent.id, agent, { status: next }))) return false;
              await hook(tx, agent);
              return true;
            })
            .catch((err: unknown) => {
              this.#log.warn(
                { err, agentId: agent.id },
                'agent not moved to HeartbeatFailed: its notification failed; next sweep retries',
              );
              return false;
            })
        : await updateAgentIfUnchanged(db, agent.id, agent, { status: next });
      if (movedIt) {
        moved += 1;
        this.#log.warn(
          {
            agentId: agent.id,
            orgId: agent.orgId,
            from: agent.status,
            to: next,
            lastContactTime: agent.lastContactTime,
          },
          'agent heartbeat missing',
        );
      }
    }
    return moved;
  }
}
