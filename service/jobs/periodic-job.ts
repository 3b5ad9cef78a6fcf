import type { FastifyBaseLogger } from 'fastify';

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

  #tick(): void {
    if (this.#running) return;
    const { log, failed, level } = this.#opts;
    // A tick that throws before its first await is a failed tick too, not an uncaught exception.
    this.#running = new Promise<unknown>((resolve) => resolve(this.#opts.tick()))
      .then(
        () => undefined,
        (err: unknown) => log[level ?? 'error']({ err }, failed),
      )
      .finally(() => (this.#running = undefined));
  }
}
