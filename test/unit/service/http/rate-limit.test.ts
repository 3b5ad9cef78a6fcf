import { describe, expect, it } from 'vitest';
import { MemoryRateLimiter, POLL_FACTOR, rateLimiterFor } from '../../../../service/http/rate-limit.js';
import { parseServiceConfig } from '../../../../service/config.js';
import type { Store } from '../../../../service/store/store.js';
import { FerryError } from '../../../../src/errors/ferry-error.js';

// The limiter shared by replicas on PostgreSQL: test/integration/service/http/shared-rate-limit.test.ts.
describe('MemoryRateLimiter', () => {
  it('limits per minute and per Organization, and resets with the window', async () => {
    let now = 120_000;
    const limiter = new MemoryRateLimiter(2, 100, () => now);
    await limiter.take(1);
    await limiter.take(1);
    await expect(limiter.take(1)).rejects.toThrow(FerryError);
    await limiter.take(2);
    now += 60_000;
    await expect(limiter.take(1)).resolves.toBeUndefined();
  });

  it('says how long to wait and does not count refused calls against the day', async () => {
    let now = 0;
    const limiter = new MemoryRateLimiter(1, 2, () => now);
    await limiter.take(1);
    now = 15_000;
    const err = await limiter.take(1).then(
      () => undefined,
      (e: unknown) => e as FerryError,
    );
    expect(err?.code).toBe('API_RATE_LIMITED');
    expect(err?.details?.['retryAfterSeconds']).toBe(45);
    now = 60_000;
    await limiter.take(1);
    now = 120_000;
    await expect(limiter.take(1)).rejects.toThrow(/this day/);
  });

  it('counts POLL calls in their own, larger bucket that neither uses up nor is used up by other calls', async () => {
    const now = 0;
    const limiter = new MemoryRateLimiter(2, 100, () => now);
    for (let i = 0; i < 2 * POLL_FACTOR; i++) await limiter.take(1, 'poll');
    await expect(limiter.take(1, 'poll')).rejects.toThrow(/polling calls this minute/);
    await limiter.take(1);
    await limiter.take(1);
    await expect(limiter.take(1)).rejects.toThrow(/API calls this minute/);
  });

  it('is the limiter of a Service on SQLite, the single process, which cannot count in its database', () => {
    const store = { dialect: 'sqlite' } as Pick<Store, 'db' | 'dialect'>;
    expect(rateLimiterFor(store, { rateLimitPerMinute: 1, rateLimitPerDay: 1 })).toBeInstanceOf(MemoryRateLimiter);
    expect(() => parseServiceConfig({ FERRY_LIMIT_COUNTS: 'database' }, { dataDir: '/tmp/x' })).toThrow(
      /limitCounts: `database` needs PostgreSQL/,
    );
    expect(parseServiceConfig({ FERRY_LIMIT_COUNTS: 'memory' }, { dataDir: '/tmp/x' }).limitCounts).toBe('memory');
  });
});
