import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryWatchdog } from '../../../src/agent/watchdog.js';

describe('the memory watchdog', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('samples every interval and fires once above the limit', () => {
    let rss = 100;
    const fired: number[] = [];
    const dog = new MemoryWatchdog({
      limitBytes: 500,
      intervalMs: 1000,
      readRss: () => rss,
      onExceeded: (r) => fired.push(r),
    });
    dog.start();
    vi.advanceTimersByTime(5000);
    expect(fired).toEqual([]);
    rss = 600;
    vi.advanceTimersByTime(999);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([600]);
    rss = 900;
    vi.advanceTimersByTime(10_000);
    expect(fired).toEqual([600]);
  });

  it('does nothing at the limit itself or after stop', () => {
    const fired: number[] = [];
    let rss = 500;
    const dog = new MemoryWatchdog({
      limitBytes: 500,
      intervalMs: 100,
      readRss: () => rss,
      onExceeded: (r) => fired.push(r),
    });
    dog.start();
    vi.advanceTimersByTime(1000);
    dog.stop();
    rss = 10_000;
    vi.advanceTimersByTime(1000);
    expect(fired).toEqual([]);
  });
});
