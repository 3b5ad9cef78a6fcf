import type { FastifyBaseLogger } from 'fastify';
import type { JobClaims } from './claims.js';

export interface PeriodicJobOptions {
  /** Time between two ticks. */
  readonly intervalMs: number;
  /** One pass of the job; its value is ignored. */
  readonly tick: () => Promise<unknown>;
  /** Where a failed tick is logged (a child with the job's `component`). */
  readonly log: Pick<FastifyBaseLogger, 'warn' | 'error'>;
  /** The constant message of a failed tick's log line. */
  readonly failed: string;
  /** The level of that line: `warn` for a job whose failures are expected outages (default `error`). */
  readonly level?: 'warn' | 'error';
  /**
   * A job that runs on one replica at a time: each tick first claims `name` (service/jobs/claims.ts)
   * for two intervals, and runs `tick` only when this process holds it (`unclaimed` otherwise).
   */
  readonly once?: { readonly claims: JobClaims; readonly name: string; readonly unclaimed?: () => Promise<unknown> };
}

/** How long a claimed job's lease lasts past a tick: two intervals and a margin, renewed at each tick. */
export function claimLeaseMs(intervalMs: number): number {
  return 2 * intervalMs + 10_000;
}

/**
 * A job on an interval timer, for the Service's background loops (the heartbeat sweeper, Agent
 * housekeeping, History retention, the mail sender, lost reprocess runs):
 *
 *   start() ─▶ every intervalMs ─▶ a tick in flight? ─ yes ─▶ skipped (ticks never overlap)
 *                                        │ no
 *                                        └▶ tick() ─▶ rejects? logged under `err`, never thrown
 *   stop()  ─▶ timer cleared ─▶ resolves once the tick in flight, if any, has ended
 *
 * With `once`, a tick another replica holds the job for does `unclaimed` (or nothing) instead.
 * The timer is unref'd: a job never keeps the process alive. start() after start() does nothing;
 * start() after stop() starts again.
 */
export class PeriodicJob {
  readonly #opts: PeriodicJobOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(opts: PeriodicJobOptions) {
    this.#opts = opts;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => this.#tick(), this.#opts.intervalMs);
    this.#timer.unref();
  }

  /** Stops the timer and waits for the tick in flight. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** Runs a tick now (or waits for the one in flight), beside the timer. */
  async tickNow(): Promise<void> {
    this.#tick();
    await this.#running;
  }

  #tick(): void {
    if (this.#running) return;
    const { log, failed, level } = this.#opts;
    // A tick that throws before its first await is a failed tick too, not an uncaught exception.
    this.#running = new Promise<unknown>((resolve) => resolve(this.#pass()))
      .then(
        () => undefined,
        (err: unknown) => log[level ?? 'error']({ err }, failed),
      )
      .finally(() => (this.#running = undefined));
  }

  async #pass(): Promise<unknown> {
    const { once, intervalMs, tick } = this.#opts;
    if (!once || (await once.claims.claim(once.name, claimLeaseMs(intervalMs)))) return tick();
    return once.unclaimed?.();
  }
}
