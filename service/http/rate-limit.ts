import { FerryError } from '../../src/errors/ferry-error.js';
import type { ServiceConfig } from '../config.js';
import { LimitWindows, limitsInDatabase } from '../store/limit-windows.js';
import type { Store } from '../store/store.js';

/** How many times the per-minute limit a minute's polling of POLL operations may use. */
export const POLL_FACTOR = 10;

const MINUTE = 60_000;
const DAY = 86_400_000;

/**
 * Per-Organization request limits in fixed windows (a minute and a UTC day). Calls to POLL
 * operations count in a bucket of their own, POLL_FACTOR times the per-minute limit and outside the
 * daily one: a client waiting for a result repeats the call every few seconds, and that alone
 * should not use up the minute's calls. A refused call counts on nothing.
 *
 * Two implementations, one per store ({@link rateLimiterFor}): in memory for the single process on
 * SQLite, and in the database for replicas on PostgreSQL, so that a client calling through a load
 * balancer has one budget, not one per replica (docs/decisions.md, "Rate limits and the login
 * throttle count in the database on PostgreSQL").
 */
export interface RateLimiter {
  /** Counts one request of `orgId`; rejects with API_RATE_LIMITED and the seconds to wait when over a limit. */
  take(orgId: number, bucket?: 'call' | 'poll'): Promise<void>;
}

/**
 * The limiter of a Service: shared through `limit_windows` on PostgreSQL, in memory on SQLite (one
 * process) or when the configuration says so (`FERRY_LIMIT_COUNTS=memory`).
 */
export function rateLimiterFor(
  store: Pick<Store, 'db' | 'dialect'>,
  config: Pick<ServiceConfig, 'rateLimitPerMinute' | 'rateLimitPerDay' | 'limitCounts'>,
): RateLimiter {
  return limitsInDatabase(store.dialect, config.limitCounts)
    ? new SharedRateLimiter(new LimitWindows(store.db), config.rateLimitPerMinute, config.rateLimitPerDay)
    : new MemoryRateLimiter(config.rateLimitPerMinute, config.rateLimitPerDay);
}

interface Window {
  start: number;
  count: number;
}

/** The limits of one Service process, held in its memory. */
export class MemoryRateLimiter implements RateLimiter {
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

  async take(orgId: number, bucket: 'call' | 'poll' = 'call'): Promise<void> {
    const now = this.#now();
    if (bucket === 'poll') {
      const poll = this.#window(this.#poll, orgId, now, MINUTE);
      check(poll, now, MINUTE, this.#perMinute * POLL_FACTOR, 'minute', 'polling calls');
      poll.count += 1;
      return;
    }
    const day = this.#window(this.#day, orgId, now, DAY);
    const minute = this.#window(this.#minute, orgId, now, MINUTE);
    check(day, now, DAY, this.#perDay, 'day', 'API calls');
    check(minute, now, MINUTE, this.#perMinute, 'minute', 'API calls');
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

/**
 * The limits of every replica on one PostgreSQL, counted in `limit_windows` (store/limit-windows.ts):
 * one statement per call, counting it in its minute and its day where each has room. A call refused
 * by its minute alone is then taken back from its day (a second statement, on refusals only). A
 * call refused by its day alone stays counted in its minute, which no one sees: the day refuses
 * every call until its end, and the last minute of a UTC day ends with it.
 */
export class SharedRateLimiter implements RateLimiter {
  readonly #windows: LimitWindows;
  readonly #perMinute: number;
  readonly #perDay: number;
  readonly #now: () => number;

  constructor(windows: LimitWindows, perMinute: number, perDay: number, now: () => number = Date.now) {
    this.#windows = windows;
    this.#perMinute = perMinute;
    this.#perDay = perDay;
    this.#now = now;
  }

  async take(orgId: number, bucket: 'call' | 'poll' = 'call'): Promise<void> {
    const now = this.#now();
    const minuteStart = now - (now % MINUTE);
    if (bucket === 'poll') {
      const limit = this.#perMinute * POLL_FACTOR;
      const [poll] = await this.#windows.take(now, [{ key: `rate:${orgId}:poll`, endMs: minuteStart + MINUTE, limit }]);
      if (poll === undefined) throw refusal(minuteStart, now, MINUTE, limit, 'minute', 'polling calls');
      return;
    }
    const dayStart = now - (now % DAY);
    const dayKey = `rate:${orgId}:day`;
    const [minute, day] = await this.#windows.take(now, [
      { key: `rate:${orgId}:minute`, endMs: minuteStart + MINUTE, limit: this.#perMinute },
      { key: dayKey, endMs: dayStart + DAY, limit: this.#perDay },
    ]);
    // As in memory, a full day is named before a full minute: its wait is the one that matters.
    if (day === undefined) throw refusal(dayStart, now, DAY, this.#perDay, 'day', 'API calls');
    if (minute === undefined) {
      await this.#windows.takeBack(now, dayKey);
      throw refusal(minuteStart, now, MINUTE, this.#perMinute, 'minute', 'API calls');
    }
  }
}

function check(w: Window, now: number, length: number, limit: number, unit: string, what: string): void {
  if (w.count < limit) return;
  throw refusal(w.start, now, length, limit, unit, what);
}

function refusal(start: number, now: number, length: number, limit: number, unit: string, what: string): FerryError {
  const retryAfterSeconds = Math.max(1, Math.ceil((start + length - now) / 1000));
  return new FerryError(
    'API_RATE_LIMITED',
    `The Organization has made ${limit} ${what} this ${unit}, its limit; retry in ${retryAfterSeconds} seconds.`,
    {
      details: { retryAfterSeconds },
    },
  );
}
