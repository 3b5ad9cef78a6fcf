import { FerryError } from '../../src/errors/ferry-error.js';

interface Window {
  start: number;
  count: number;
}

/** How many times the per-minute limit a minute's polling of POLL operations may use. */
export const POLL_FACTOR = 10;

/**
 * Per-Organization request limits in fixed windows (a minute and a day), held in memory. With
 * several Service replicas each enforces its own share; the limits are set per replica.
 *
 * Calls to POLL operations count in a bucket of their own, POLL_FACTOR times the per-minute limit
 * and outside the daily one: a client waiting for a result repeats the call every few seconds, and
 * that alone should not use up the minute's calls.
 */
export class RateLimiter {
  readonly #perMinute: number;
  readonly #perDay: number;
  readonly #minute = new Map<number, Window>();
  readonly #day = new Map<number, Window>();
  readonly #poll = new Map<number, Window>();
  readonly #now: () => number;

  constructor(perMinute: number, perDay: number, now: () => number = Date.now) {
    this.#perMinute = perMinute;
    this.#perDay = perDay;
    this.#now = now;
  }

  /** Counts one request of `orgId`; throws API_RATE_LIMITED with the seconds to wait when over a limit. */
  take(orgId: number, bucket: 'call' | 'poll' = 'call'): void {
    const now = this.#now();
    if (bucket === 'poll') {
      const poll = this.#window(this.#poll, orgId, now, 60_000);
      check(poll, now, 60_000, this.#perMinute * POLL_FACTOR, 'minute', 'polling calls');
      poll.count += 1;
      return;
    }
    const day = this.#window(this.#day, orgId, now, 86_400_000);
    const minute = this.#window(this.#minute, orgId, now, 60_000);
    check(day, now, 86_400_000, this.#perDay, 'day', 'API calls');
    check(minute, now, 60_000, this.#perMinute, 'minute', 'API calls');
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

function check(w: Window, now: number, length: number, limit: number, unit: string, what: string): void {
  if (w.count < limit) return;
  const retryAfterSeconds = Math.max(1, Math.ceil((w.start + length - now) / 1000));
  throw new FerryError(
    'API_RATE_LIMITED',
    `The Organization has made ${limit} ${what} this ${unit}, its limit; retry in ${retryAfterSeconds} seconds.`,
    {
      details: { retryAfterSeconds },
    },
  );
}
