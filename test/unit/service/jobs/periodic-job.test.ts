import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PeriodicJob } from '../../../../service/jobs/periodic-job.js';

/** A tick the test ends by hand. */
interface Gate {
  readonly started: number;
  open(): void;
}

/** A job whose ticks wait for the test to open them; counts the ticks in flight at once. */
function gatedJob(intervalMs: number, log = pino({ level: 'silent' })) {
  const gates: Gate[] = [];
  let inFlight = 0;
  let most = 0;
  let ended = 0;
  const job = new PeriodicJob({
    intervalMs,
    log,
    failed: 'test job failed',
    tick: async () => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise<void>((resolve) => gates.push({ started: Date.now(), open: resolve }));
      inFlight -= 1;
      ended += 1;
    },
  });
  return { job, gates, inFlight: () => inFlight, most: () => most, ended: () => ended };
}

/** Lets the promise callbacks queued so far run. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
};

describe('a periodic job', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ticks on its interval, never two ticks at once: a tick still running when the next is due skips it', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    const t = gatedJob(1000);
    t.job.start();
    // start() twice keeps one timer.
    t.job.start();
    expect(t.gates).toHaveLength(0);

    await vi.advanceTimersByTimeAsync(1000);
    expect(t.gates).toHaveLength(1);
    // Three more intervals pass while the first tick runs: none of them starts another.
    await vi.advanceTimersByTimeAsync(3000);
    expect(t.gates).toHaveLength(1);
    expect(t.inFlight()).toBe(1);

    t.gates[0]?.open();
    await settle();
    expect(t.ended()).toBe(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(t.gates).toHaveLength(2);
    t.gates[1]?.open();
    await settle();
    await t.job.stop();
    expect(t.most()).toBe(1);
    expect(t.ended()).toBe(2);
  });

  it('stop() clears the timer and resolves only once the tick in flight has ended', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    const t = gatedJob(1000);
    t.job.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(t.inFlight()).toBe(1);

    let stopped = false;
    const stopping = t.job.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    t.gates[0]?.open();
    await stopping;
    expect(stopped).toBe(true);
    expect(t.ended()).toBe(1);

    // No tick after the stop.
    await vi.advanceTimersByTimeAsync(5000);
    expect(t.gates).toHaveLength(1);
    // A job stopped while idle stops at once, and starts again.
    await t.job.stop();
    t.job.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(t.gates).toHaveLength(2);
    t.gates[1]?.open();
    await t.job.stop();
  });

  it('logs a failed tick (also one that throws before its first await) and keeps ticking', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    const lines: Array<{ level: number; msg: string; err?: { message: string } }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as (typeof lines)[number]);
        done();
      },
    });
    const log = pino({ level: 'warn' }, sink);
    let calls = 0;
    const job = new PeriodicJob({
      intervalMs: 100,
      log,
      failed: 'test job failed',
      level: 'warn',
      tick: () => {
        calls += 1;
        if (calls === 1) throw new Error('thrown at once');
        return Promise.reject(new Error('rejected later'));
      },
    });
    job.start();
    await vi.advanceTimersByTimeAsync(250);
    await job.stop();
    vi.useRealTimers();
    await vi.waitFor(() => expect(lines).toHaveLength(2));
    expect(calls).toBe(2);
    expect(lines.map((l) => [l.level, l.msg, l.err?.message])).toEqual([
      [40, 'test job failed', 'thrown at once'],
      [40, 'test job failed', 'rejected later'],
    ]);
  });

  it("does not keep the process alive: its timer is unref'd", () => {
    const spy = vi.spyOn(globalThis, 'setInterval');
    const job = new PeriodicJob({
      intervalMs: 60_000,
      log: pino({ level: 'silent' }),
      failed: 'x',
      tick: () => Promise.resolve(),
    });
    job.start();
    const timer = spy.mock.results[0]?.value as NodeJS.Timeout;
    spy.mockRestore();
    expect(timer.hasRef()).toBe(false);
    return job.stop();
  });
});
