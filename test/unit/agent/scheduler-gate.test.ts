import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SchedulerGate, type GatedScheduler, type HeldSolution } from '../../../src/agent/scheduler-gate.js';
import type { ScheduleRule } from '../../../src/protocol/schedule.js';
import type { ScheduledSolution } from '../../../src/solutions/scheduler.js';

const every5Minutes: ScheduleRule = {
  kind: 'Recurring',
  days: { kind: 'weekdays', weekdays: [0, 1, 2, 3, 4, 5, 6] },
  times: { kind: 'every', minutes: 5 },
  timeZone: 'UTC',
};

/** A scheduler that records what the gate asks of it. */
class FakeScheduler implements GatedScheduler {
  readonly sets: ScheduledSolution[][] = [];
  starts = 0;
  stops = 0;
  #state: 'new' | 'started' | 'stopped' = 'new';

  get started(): boolean {
    return this.#state === 'started';
  }

  set(solutions: ScheduledSolution[]): void {
    this.sets.push(solutions);
  }

  start(): void {
    if (this.#state === 'stopped') throw new Error('started after stop');
    this.starts++;
    this.#state = 'started';
  }

  stop(): void {
    this.stops++;
    this.#state = 'stopped';
  }
}

function setup(opts: { requestTimeoutMs?: number; graceMs?: number } = {}) {
  const scheduler = new FakeScheduler();
  let held: HeldSolution[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const log = pino(
    { level: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const gate = new SchedulerGate({
    scheduler,
    held: () => held,
    requestTimeoutMs: opts.requestTimeoutMs ?? 30_000,
    graceMs: opts.graceMs ?? 600_000,
    log,
  });
  const hold = (...solutions: HeldSolution[]): void => {
    held = solutions;
  };
  return { scheduler, gate, hold, lines };
}

const solution = (solutionId: string, version: string, more: Partial<HeldSolution> = {}): HeldSolution => ({
  solutionId,
  version,
  schedule: every5Minutes,
  isDisabled: false,
  ...more,
});

describe('the scheduler gate', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("starts the scheduler once the Service's first list is held at the versions it names", () => {
    const { scheduler, gate, hold, lines } = setup();
    hold(solution('a', 'v1'), solution('b', 'v1'));
    gate.start();
    expect(scheduler.starts).toBe(0);
    gate.received([
      { solutionId: 'a', version: 'v2' },
      { solutionId: 'b', version: 'v1' },
    ]);
    // The list applied: 'a' is held at an older version, so its new one is still to come.
    gate.assigned();
    expect(scheduler.starts).toBe(0);
    hold(solution('a', 'v2'), solution('b', 'v1'));
    gate.assigned();
    expect(scheduler.starts).toBe(1);
    expect(lines.map((l) => [l['msg'], l['why']])).toEqual([
      ['scheduler starting', 'holding the assignment of the Service'],
    ]);
  });

  it('starts at once on an empty list', () => {
    const { scheduler, gate, hold } = setup();
    hold(solution('a', 'v1'));
    gate.start();
    gate.received([]);
    hold();
    gate.assigned();
    expect(scheduler.starts).toBe(1);
  });

  it('fires from the local copy when no list comes within the request time-out', () => {
    const { scheduler, gate, lines } = setup({ requestTimeoutMs: 1_000, graceMs: 60_000 });
    gate.start();
    vi.advanceTimersByTime(999);
    expect(scheduler.starts).toBe(0);
    vi.advanceTimersByTime(1);
    expect(scheduler.starts).toBe(1);
    expect(lines.at(-1)?.['why']).toBe('no assignment list from the Service in time; firing from the local copy');
  });

  it('waits no longer than the grace period', () => {
    const { scheduler, gate } = setup({ requestTimeoutMs: 30_000, graceMs: 2_000 });
    gate.start();
    vi.advanceTimersByTime(1_999);
    expect(scheduler.starts).toBe(0);
    vi.advanceTimersByTime(1);
    expect(scheduler.starts).toBe(1);
  });

  it('arms no wait before start and starts the scheduler once', () => {
    const { scheduler, gate } = setup({ requestTimeoutMs: 1_000 });
    vi.advanceTimersByTime(10_000);
    expect(scheduler.starts).toBe(0);
    gate.start();
    gate.received([]);
    gate.assigned();
    vi.advanceTimersByTime(10_000);
    gate.received([]);
    gate.assigned();
    expect(scheduler.starts).toBe(1);
  });

  it('starts nothing once stopped, neither the wait nor a list', () => {
    const { scheduler, gate, hold } = setup({ requestTimeoutMs: 1_000 });
    hold(solution('a', 'v1'));
    gate.start();
    gate.stop();
    expect(scheduler.stops).toBe(1);
    vi.advanceTimersByTime(10_000);
    gate.received([{ solutionId: 'a', version: 'v1' }]);
    gate.assigned();
    expect(scheduler.starts).toBe(0);
  });

  it('has the scheduler follow every change of the held Solutions, before and after it started', () => {
    const { scheduler, gate, hold } = setup({ requestTimeoutMs: 1_000 });
    hold(solution('a', 'v1'), solution('b', 'v3', { schedule: null, isDisabled: true }));
    gate.start();
    expect(scheduler.sets).toEqual([
      [
        { solutionId: 'a', version: 'v1', rule: every5Minutes, disabled: false },
        { solutionId: 'b', version: 'v3', rule: null, disabled: true },
      ],
    ]);
    vi.advanceTimersByTime(1_000);
    expect(scheduler.starts).toBe(1);
    hold(solution('b', 'v4'));
    gate.assigned();
    expect(scheduler.sets.at(-1)).toEqual([{ solutionId: 'b', version: 'v4', rule: every5Minutes, disabled: false }]);
  });
});
