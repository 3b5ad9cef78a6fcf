/**
 * Capped exponential back-off with full jitter (AWS Architecture Blog, "Exponential Backoff And
 * Jitter"): the n-th delay is uniform in [0, min(cap, base·2ⁿ)], so that many Agents cut off by
 * one Service restart do not reconnect in lock-step. A floor of base/2 keeps a tight loop from
 * hammering a Service that refuses at once.
 */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next attempt; each call counts one failure. */
  next(): number {
    const ceiling = Math.min(this.maxMs, this.baseMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    const floor = Math.min(ceiling, this.baseMs / 2);
    return Math.round(floor + this.random() * (ceiling - floor));
  }

  /** After a success the next failure starts from the base again. */
  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}

/** Resolves after `ms`, or rejects at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
