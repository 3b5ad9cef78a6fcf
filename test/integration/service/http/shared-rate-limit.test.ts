/**
 * The API rate limits of replicas on one PostgreSQL (SharedRateLimiter, service/http/rate-limit.ts):
 * two limiters on two pools of one database, as two replicas, share each Organization's budget.
 * The limiter of the single process: test/unit/service/http/rate-limit.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MemoryRateLimiter,
  POLL_FACTOR,
  rateLimiterFor,
  SharedRateLimiter,
  type RateLimiter,
} from '../../../../service/http/rate-limit.js';
import { LimitWindows } from '../../../../service/store/limit-windows.js';
import type { Store } from '../../../../service/store/store.js';
import type { FerryError } from '../../../../src/errors/ferry-error.js';
import { replicaStores } from '../../../helpers/replica-stores.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

/** The refusal of a take, or undefined when it passed. */
const refusal = (p: Promise<void>): Promise<FerryError | undefined> =>
  p.then(
    () => undefined,
    (err: unknown) => err as FerryError,
  );

describe.skipIf(!STORE_TARGETS.some((t) => t.name === 'postgres'))('rate limits shared by replicas', () => {
  let stores: [Store, Store];
  let close: (() => Promise<void>) | undefined;
  // Each test its own Organization IDs: the windows live in one database for the whole file.
  let nextOrg = 1;
  const org = (): number => nextOrg++;
  let now = Date.parse('2030-01-01T00:00:00Z');
  const clock = (): number => now;

  /** Limiters of replicas A and B with these limits. */
  const replicas = (perMinute: number, perDay: number): [RateLimiter, RateLimiter] => [
    new SharedRateLimiter(new LimitWindows(stores[0].db), perMinute, perDay, clock),
    new SharedRateLimiter(new LimitWindows(stores[1].db), perMinute, perDay, clock),
  ];

  beforeAll(async () => {
    const opened = await replicaStores(2);
    stores = opened.stores as [Store, Store];
    close = opened.close;
  });
  afterAll(async () => {
    await close?.();
  });

  it('give an Organization one budget: N calls across both pass, call N+1 is refused on either', async () => {
    const [a, b] = replicas(5, 1_000);
    const o = org();
    now = Date.parse('2030-01-01T10:00:15Z');
    for (let i = 0; i < 5; i++) await (i % 2 ? a : b).take(o);
    for (const replica of [a, b]) {
      const err = await refusal(replica.take(o));
      expect(err?.code).toBe('API_RATE_LIMITED');
      expect(err?.message).toBe('The Organization has made 5 API calls this minute, its limit; retry in 45 seconds.');
      expect(err?.details?.['retryAfterSeconds']).toBe(45);
    }
    // Another Organization has its own budget.
    await expect(b.take(org())).resolves.toBeUndefined();
  });

  it('let exactly the limit through when 40 calls arrive at once, 20 on each replica', async () => {
    const [a, b] = replicas(13, 1_000);
    const o = org();
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => refusal((i % 2 ? a : b).take(o))));
    expect(results.filter((r) => r === undefined)).toHaveLength(13);
    expect(new Set(results.filter((r) => r !== undefined).map((r) => r.code))).toEqual(new Set(['API_RATE_LIMITED']));
  });

  it('count polling calls in their own bucket, neither using up nor used up by the other calls', async () => {
    const [a, b] = replicas(2, 1_000);
    const o = org();
    now = Date.parse('2030-01-01T11:00:00Z');
    for (let i = 0; i < 2 * POLL_FACTOR; i++) await (i % 2 ? a : b).take(o, 'poll');
    const polled = await refusal(a.take(o, 'poll'));
    expect(polled?.message).toMatch(/20 polling calls this minute/);
    expect(polled?.details?.['retryAfterSeconds']).toBe(60);
    await a.take(o);
    await b.take(o);
    expect((await refusal(b.take(o)))?.message).toMatch(/API calls this minute/);
  });

  it('start every minute fresh, and do not count refused calls against the day', async () => {
    const [a, b] = replicas(1, 2);
    const o = org();
    now = Date.parse('2030-01-02T00:00:00Z');
    await a.take(o);
    now += 15_000;
    expect((await refusal(b.take(o)))?.details?.['retryAfterSeconds']).toBe(45);
    expect((await refusal(a.take(o)))?.code).toBe('API_RATE_LIMITED');
    // A new minute: the refusals above took nothing from the day, which has room for one more.
    now += 45_000;
    await b.take(o);
    // The minute and the day are both full: the day, the longer wait, is named.
    const both = await refusal(a.take(o));
    expect(both?.message).toBe('The Organization has made 2 API calls this day, its limit; retry in 86340 seconds.');
    expect(both?.details?.['retryAfterSeconds']).toBe(86_400 - 60);
    now += 60_000;
    const day = await refusal(b.take(o));
    expect(day?.message).toMatch(/2 API calls this day/);
    expect(day?.details?.['retryAfterSeconds']).toBe(86_400 - 120);
    // The next UTC day.
    now = Date.parse('2030-01-03T00:00:00Z');
    await expect(a.take(o)).resolves.toBeUndefined();
  });

  it('are the limiter of a Service on PostgreSQL, unless FERRY_LIMIT_COUNTS=memory', () => {
    const limits = { rateLimitPerMinute: 1, rateLimitPerDay: 1 };
    expect(rateLimiterFor(stores[0], limits)).toBeInstanceOf(SharedRateLimiter);
    expect(rateLimiterFor(stores[0], { ...limits, limitCounts: 'memory' })).toBeInstanceOf(MemoryRateLimiter);
  });
});
