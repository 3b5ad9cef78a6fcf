import { FerryError } from '../../src/errors/ferry-error.js';

interface Window {
  start: number;
  count: number;
}

/**
 * Per-Organization request limits in fixed windows (a minute and a day), held in memory. With
 * several Service replicas each enforces its own share; the limits are set per replica.
 */
export class RateLimiter {
  readonly #perMinute: number;
  readonly #perDay: number;
  readonly #minute = new Map<number, Window>();
  readonly #day = new Map<number, Window>();
  readonly #now: () => number;

  constructor(perMinute: number, perDay: number, now: () => number = Date.now) {
    this.#perMinute = perMinute;
    this.#perDay = perDay;
    this.#now = now;
  }

  /** Counts one request of `orgId`; throws API_RATE_LIMITED with the seconds to wait when over a limit. */
  take(orgId: number): void {
    const now = this.#now();
    const day = this.#window(this.#day, orgId, now, 86_400_000);
    const minute = this.#window(this.#minute, orgId, now, 60_000);
    check(day, now, 86_400_000, this.#perDay, 'day');
    check(minute, now, 60_000, this.#perMinute, 'minute');
    day.count += 1;
    minute.count += 1;
  }

  #window(windows: Map<number, Window>, orgId: number, now: number, length: number): Window {
    let w = windows.get(orgId);
    if (!w || now - w.start >= length) {
      w = { start: now - (now % length), count: 0 };
      windows.set(orgId, w);
    }
    return w;
  }
}

function check(w: Window, now: number, length: number, limit: number, unit: string): void {
  if (w.count < limit) return;
  const retryAfterSeconds = Math.max(1, Math.ceil((w.start + length - now) / 1000));
  throw new FerryError('API_RATE_LIMITED', `The Organization has made ${limit} API calls this ${unit}, its limit; retry in ${retryAfterSeconds} seconds.`, {
    details: { retryAfterSeconds },
  });
}
