import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Backoff, sleep } from '../../../src/channel/backoff.js';

describe('capped exponential back-off with jitter', () => {
  it('doubles the ceiling per failure up to the cap', () => {
    const top = new Backoff(1000, 30_000, () => 1);
    expect([1, 2, 3, 4, 5, 6, 7].map(() => top.next())).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
  });

  it('jitters between half the base and the ceiling', () => {
    const low = new Backoff(1000, 30_000, () => 0);
    expect([1, 2, 3].map(() => low.next())).toEqual([500, 500, 500]);
    const mid = new Backoff(1000, 30_000, () => 0.5);
    expect([1, 2, 3].map(() => mid.next())).toEqual([750, 1250, 2250]);
  });

  it('spreads real random delays below the cap', () => {
    const b = new Backoff(100, 1000);
    for (let i = 0; i < 50; i++) {
      const d = b.next();
      expect(d).toBeGreaterThanOrEqual(50);
      expect(d).toBeLessThanOrEqual(1000);
    }
  });

  it('starts again from the base after reset', () => {
    const b = new Backoff(1000, 30_000, () => 1);
    b.next();
    b.next();
    b.reset();
    expect(b.attempts).toBe(0);
    expect(b.next()).toBe(1000);
  });
});

describe('sleep', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('waits the delay, and rejects at once on abort', async () => {
    let done = false;
    const p = sleep(1000).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await p;
    expect(done).toBe(true);

    const ac = new AbortController();
    const aborted = sleep(60_000, ac.signal);
    ac.abort(new Error('stop'));
    await expect(aborted).rejects.toThrow('stop');
  });
});
