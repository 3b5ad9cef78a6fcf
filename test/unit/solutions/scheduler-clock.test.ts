import { describe, expect, it, vi } from 'vitest';
import type { ScheduleRule } from '../../../src/protocol/schedule.js';
import { nextDueTimes } from '../../../src/solutions/schedule.js';
import {
  DAY,
  MINUTE,
  at,
  daily,
  everyMinute,
  everyMinutes,
  solution,
  useSchedulerHarness,
} from '../../helpers/scheduler.js';

describe('the Agent scheduler and clocks', () => {
  const { make } = useSchedulerHarness();

  it('handles a clock that jumps: the machine slept past due times, or the clock went back', () => {
    const a = make();
    a.scheduler.set([solution('s1', everyMinute)]);
    a.scheduler.start();
    vi.advanceTimersByTime(MINUTE);
    // Slept 5 minutes: the wall clock jumped, the timer's own count did not move.
    vi.setSystemTime(new Date('2026-03-02T10:06:30Z'));
    vi.advanceTimersByTime(30_000);
    expect(a.fired.map((f) => f.dueAt)).toEqual(['2026-03-02T10:01:00.000Z', '2026-03-02T10:07:00.000Z']);
    expect(a.skipped.map((s) => s.dueAt)).toEqual(
      ['10:02', '10:03', '10:04', '10:05', '10:06'].map((t) => `2026-03-02T${t}:00.000Z`),
    );
    // The clock set back 5 minutes: the due times already handled do not fire again.
    vi.setSystemTime(new Date('2026-03-02T10:02:00Z'));
    vi.advanceTimersByTime(6 * MINUTE);
    expect(a.fired.map((f) => f.dueAt).slice(2)).toEqual(['2026-03-02T10:08:00.000Z']);
  });

  it('notices within a minute that the machine slept through a due time hours away', () => {
    const a = make();
    a.scheduler.set([solution('s1', daily(18 * 60 + 2))]);
    a.scheduler.start();
    // Asleep from 10:00:30 to 18:05: timers did not count those hours, the wall clock did.
    vi.setSystemTime(new Date('2026-03-02T18:05:00Z'));
    vi.advanceTimersByTime(MINUTE);
    expect(a.fired.map((f) => f.dueAt)).toEqual(['2026-03-02T18:02:00.000Z']);
  });

  it('waits longer than setTimeout can: a RunOnce 60 days ahead fires once, on time', () => {
    const once: ScheduleRule = {
      kind: 'RunOnce',
      date: '2026-05-01',
      second: 8 * 3600,
      offsetMinutes: 0,
      timeZone: 'UTC',
    };
    const a = make();
    a.scheduler.set([solution('s1', once)]);
    a.scheduler.start();
    vi.advanceTimersByTime(at('2026-05-01T07:59:59Z') - Date.now());
    expect(a.fired).toEqual([]);
    vi.advanceTimersByTime(10 * DAY);
    expect(a.fired.map((f) => f.dueAt)).toEqual(['2026-05-01T08:00:00.000Z']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it.each([
    ['Berlin, spring forward (02:30 does not exist on 29 March)', 'Europe/Berlin', 150, '2026-03-26T12:00:00Z'],
    ['Berlin, fall back (02:30 happens twice on 25 October)', 'Europe/Berlin', 150, '2026-10-22T12:00:00Z'],
    ['New York, spring forward (8 March)', 'America/New_York', 150, '2026-03-05T12:00:00Z'],
    ['New York, fall back (01:30 happens twice on 1 November)', 'America/New_York', 90, '2026-10-29T12:00:00Z'],
  ])('fires a daily rule once a day across a clock change: %s', (_name, zone, minute, from) => {
    vi.setSystemTime(new Date(from));
    const rule = daily(minute, zone);
    const a = make();
    a.scheduler.set([solution('s1', rule)]);
    a.scheduler.start();
    vi.advanceTimersByTime(7 * DAY);
    const expected = nextDueTimes(rule, new Date(from), 7).map((d) => d.toISOString());
    expect(a.fired.map((f) => f.dueAt)).toEqual(expected);
    // One a day: seven distinct local days.
    const days = new Set(
      a.fired.map((f) => new Intl.DateTimeFormat('en-CA', { timeZone: zone }).format(new Date(f.dueAt))),
    );
    expect(days.size).toBe(7);
    expect(a.skipped).toEqual([]);
  });

  it('fires each wall time once through the repeated hour of a fall-back day (New York, every 30 minutes)', () => {
    const from = '2026-10-31T12:00:00Z';
    vi.setSystemTime(new Date(from));
    const rule = everyMinutes(30, 'America/New_York');
    const a = make();
    a.scheduler.set([solution('s1', rule)]);
    a.scheduler.start();
    vi.advanceTimersByTime(2 * DAY);
    const expected = nextDueTimes(rule, new Date(from), 1000)
      .filter((d) => d.getTime() <= Date.now())
      .map((d) => d.toISOString());
    expect(a.fired.map((f) => f.dueAt)).toEqual(expected);
    expect(new Set(expected).size).toBe(expected.length);
  });
});
