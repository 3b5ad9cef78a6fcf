import { describe, expect, it } from 'vitest';
import { POLL_FACTOR, RateLimiter } from '../../../../service/http/rate-limit.js';
import { FerryError } from '../../../../src/errors/ferry-error.js';

describe('RateLimiter', () => {
  it('limits per minute and per Organization, and resets with the window', () => {
    let now = 120_000;
    const limiter = new RateLimiter(2, 100, () => now);
    limiter.take(1);
    limiter.take(1);
    expect(() => limiter.take(1)).toThrow(FerryError);
    limiter.take(2);
    now += 60_000;
    expect(() => limiter.take(1)).not.toThrow();
  });

  it('says how long to wait and does not count refused calls against the day', () => {
    let now = 0;
    const limiter = new RateLimiter(1, 2, () => now);
    limiter.take(1);
    now = 15_000;
    try {
      limiter.take(1);
      expect.unreachable();
    } catch (err) {
      expect((err as FerryError).code).toBe('API_RATE_LIMITED');
      expect((err as FerryError).details?.['retryAfterSeconds']).toBe(45);
    }
    now = 60_000;
    limiter.take(1);
    now = 120_000;
    expect(() => limiter.take(1)).toThrow(/this day/);
  });

  it('counts POLL calls in their own, larger bucket that neither uses up nor is used up by other calls', () => {
    const now = 0;
    const limiter = new RateLimiter(2, 100, () => now);
    for (let i = 0; i < 2 * POLL_FACTOR; i++) limiter.take(1, 'poll');
    expect(() => limiter.take(1, 'poll')).toThrow(/polling calls this minute/);
    limiter.take(1);
    limiter.take(1);
    expect(() => limiter.take(1)).toThrow(/API calls this minute/);
  });
});
