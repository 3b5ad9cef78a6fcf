import { describe, expect, it, vi } from 'vitest';
import { MAX_MISSED_REPORTED } from '../../../src/solutions/scheduler.js';
import {
  DAY,
  HOUR,
  MINUTE,
  at,
  daily,
  everyMinute,
  everyMinutes,
  hourlyAt,
  iso,
  solution,
  useSchedulerHarness,
} from '../../helpers/scheduler.js';

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('the Agent scheduler', () => {
  const { make } = useSchedulerHarness();

  it('fires every minute for 10 minutes: 10 runs, each due time once, each with its own run ID', () => {
    const a = make();
    a.scheduler.set([solution('s1', everyMinute)]);
    a.scheduler.start();
    vi.advanceTimersByTime(10 * MINUTE);
    expect(a.fired.map((f) => f.dueAt)).toEqual(
      Array.from({ length: 10 }, (_, i) => iso(at('2026-03-02T10:01Z') + i * MINUTE)),
    );
    expect(new Set(a.fired.map((f) => f.runId)).size).toBe(10);
    for (const f of a.fired) expect(f.runId).toMatch(GUID);
    expect(a.skipped).toEqual([]);
  });

  it('records a due time before it fires it, with the run ID', () => {
    const seen: unknown[] = [];
    const a = make({ onFire: (f) => seen.push({ recorded: a.scheduler.lastFired(f.solutionId), f }) });
    a.scheduler.set([solution('s1', everyMinute)]);
    a.scheduler.start();
    vi.advanceTimersByTime(MINUTE);
    const [f] = a.fired;
    expect(seen).toEqual([
      { recorded: { dueAt: new Date(f?.dueAt ?? ''), runId: f?.runId, at: new Date('2026-03-02T10:01:00Z') }, f },
    ]);
  });

  it('fires nothing twice across a restart on the same file', () => {
    const a = make();
    a.scheduler.set([solution('s1', everyMinute)]);
    a.scheduler.start();
    vi.advanceTimersByTime(5 * MINUTE);
    a.scheduler.stop();
    // Restarted at once: the due time just fired is not due again.
    const b = make();
    b.scheduler.set([solution('s1', everyMinute)]);
    b.scheduler.start();
    expect(b.fired).toEqual([]);
    vi.advanceTimersByTime(5 * MINUTE);
    const all = [...a.fired, ...b.fired].map((f) => f.dueAt);
    expect(all).toHaveLength(10);
    expect(new Set(all).size).toBe(10);
    expect(b.skipped).toEqual([]);
  });

  it('loses the run, not doubles it, when the Agent dies between the record and the start; the run ID stays known', () => {
    const a = make({
      onFire: (f) => {
        if (f.dueAt === '2026-03-02T10:02:00.000Z') throw new Error('the process died here');
      },
    });
    a.scheduler.set([solution('s1', everyMinute)]);
    a.scheduler.start();
    vi.advanceTimersByTime(2 * MINUTE);
    const lost = a.fired[1];
    a.scheduler.stop();
    const b = make();
    b.scheduler.set([solution('s1', everyMinute)]);
    b.scheduler.start();
    expect(b.fired).toEqual([]);
    expect(b.scheduler.lastFired('s1')).toMatchObject({ dueAt: new Date('2026-03-02T10:02:00Z'), runId: lost?.runId });
    vi.advanceTimersByTime(MINUTE);
    expect(b.fired.map((f) => f.dueAt)).toEqual(['2026-03-02T10:03:00.000Z']);
  });

  it('after 5 minutes down with a 10-minute grace: the latest due time fires once, the others are missed, once', () => {
    const a = make();
    a.scheduler.set([solution('s1', everyMinute)]);
    a.scheduler.start();
    vi.advanceTimersByTime(3 * MINUTE);
    a.scheduler.stop();
    vi.setSystemTime(new Date('2026-03-02T10:08:30Z'));
    const b = make();
    b.scheduler.set([solution('s1', everyMinute)]);
    b.scheduler.start();
    expect(b.fired.map((f) => f.dueAt)).toEqual(['2026-03-02T10:08:00.000Z']);
    expect(b.skipped).toEqual(
      ['10:04', '10:05', '10:06', '10:07'].map((t) => ({
        solutionId: 's1',
        dueAt: `2026-03-02T${t}:00.000Z`,
        reason: 'missed',
      })),
    );
    b.scheduler.stop();
    const c = make();
    c.scheduler.set([solution('s1', everyMinute)]);
    c.scheduler.start();
    expect(c.fired).toEqual([]);
    expect(c.skipped).toEqual([]);
  });

  it('beyond the grace period: every due time of the downtime is missed and none fires', () => {
    vi.setSystemTime(new Date('2026-03-02T07:30:00Z'));
    const a = make();
    a.scheduler.set([solution('s1', hourlyAt(0))]);
    a.scheduler.start();
    a.scheduler.stop();
    vi.setSystemTime(new Date('2026-03-02T10:15:00Z'));
    const b = make();
    b.scheduler.set([solution('s1', hourlyAt(0))]);
    b.scheduler.start();
    expect(b.fired).toEqual([]);
    expect(b.skipped.map((s) => [s.dueAt, s.reason])).toEqual(
      ['08', '09', '10'].map((h) => [`2026-03-02T${h}:00:00.000Z`, 'missed']),
    );
    vi.advanceTimersByTime(HOUR);
    expect(b.fired.map((f) => f.dueAt)).toEqual(['2026-03-02T11:00:00.000Z']);
  });

  it('reports at most the latest 100 missed due times and a count of the others: a month offline', () => {
    const a = make();
    a.scheduler.set([solution('s1', everyMinute)]);
    a.scheduler.start();
    a.scheduler.stop();
    vi.setSystemTime(new Date(at('2026-03-02T10:00:30Z') + 30 * DAY));
    const b = make();
    b.scheduler.set([solution('s1', everyMinute)]);
    // How long the catch-up takes is measured by the schedules bench (docs/benchmarks.md), not here.
    b.scheduler.start();
    const newest = at('2026-03-02T10:00Z') + 30 * DAY;
    expect(b.fired.map((f) => f.dueAt)).toEqual([iso(newest)]);
    expect(b.skipped).toHaveLength(MAX_MISSED_REPORTED);
    expect(b.skipped.map((s) => s.dueAt)).toEqual(
      Array.from({ length: 100 }, (_, i) => iso(newest - (100 - i) * MINUTE)),
    );
    // One Solution catching up may count them all: 43,200 due times, one run, 100 reported.
    expect(b.skipped[0]?.earlier).toEqual({ count: 43_200 - 1 - 100, exact: true });
    expect(b.skipped.slice(1).every((s) => s.earlier === undefined)).toBe(true);
  });

  it("skips a due time while the previous run goes on ('running') and while the Agent waits to restart ('paused')", () => {
    const a = make();
    a.scheduler.set([solution('s1', everyMinute), solution('s2', everyMinute)]);
    a.scheduler.start();
    a.running.add('s1');
    vi.advanceTimersByTime(MINUTE);
    expect(a.fired.map((f) => f.solutionId)).toEqual(['s2']);
    expect(a.skipped).toEqual([{ solutionId: 's1', dueAt: '2026-03-02T10:01:00.000Z', reason: 'running' }]);
    a.running.clear();
    a.state.paused = true;
    vi.advanceTimersByTime(MINUTE);
    expect(a.fired).toHaveLength(1);
    expect(a.skipped.slice(1).map((s) => [s.solutionId, s.reason])).toEqual([
      ['s1', 'paused'],
      ['s2', 'paused'],
    ]);
    a.state.paused = false;
    vi.advanceTimersByTime(MINUTE);
    expect(a.fired.slice(1).map((f) => [f.solutionId, f.dueAt])).toEqual([
      ['s1', '2026-03-02T10:03:00.000Z'],
      ['s2', '2026-03-02T10:03:00.000Z'],
    ]);
  });

  it('never fires a disabled Solution, and once enabled again starts from that moment', () => {
    const a = make();
    a.scheduler.set([solution('s1', everyMinute, 'v1', true)]);
    a.scheduler.start();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(10 * MINUTE);
    expect(a.fired).toEqual([]);
    expect(a.skipped).toEqual([]);
    a.scheduler.set([solution('s1', everyMinute, 'v1', false)]);
    vi.advanceTimersByTime(MINUTE);
    expect(a.fired.map((f) => f.dueAt)).toEqual(['2026-03-02T10:11:00.000Z']);
    expect(a.skipped).toEqual([]);
  });

  it('drops a Solution left out of the set at once, timer included, and never fires it', () => {
    const a = make();
    a.scheduler.set([solution('s1', everyMinute), solution('s2', everyMinute)]);
    a.scheduler.start();
    expect(vi.getTimerCount()).toBe(1);
    a.scheduler.set([solution('s2', everyMinute)]);
    vi.advanceTimersByTime(3 * MINUTE);
    expect(a.fired.map((f) => f.solutionId)).toEqual(['s2', 's2', 's2']);
    a.scheduler.set([]);
    expect(vi.getTimerCount()).toBe(0);
    expect(a.scheduler.nextDueAt('s2')).toBeUndefined();
    vi.advanceTimersByTime(3 * MINUTE);
    expect(a.fired).toHaveLength(3);
  });

  it('fires nothing before set: a started scheduler without an assignment has nothing to fire', () => {
    const a = make();
    a.scheduler.set([solution('s1', everyMinute)]);
    a.scheduler.stop();
    vi.advanceTimersByTime(5 * MINUTE);
    const b = make();
    b.scheduler.start();
    vi.advanceTimersByTime(5 * MINUTE);
    expect(b.fired).toEqual([]);
    expect(b.skipped).toEqual([]);
  });

  it('first fires a newly scheduled Solution at its first due time after that moment, never an earlier one today', () => {
    vi.setSystemTime(new Date('2026-03-02T12:00:00Z'));
    const a = make();
    a.scheduler.set([solution('s1', daily(9 * 60))]);
    a.scheduler.start();
    expect(a.fired).toEqual([]);
    expect(a.skipped).toEqual([]);
    expect(a.scheduler.nextDueAt('s1')).toEqual(new Date('2026-03-03T09:00:00Z'));
    vi.advanceTimersByTime(DAY);
    expect(a.fired.map((f) => f.dueAt)).toEqual(['2026-03-03T09:00:00.000Z']);
  });

  it('starts a Solution afresh at a new version or rule: no catch-up of the time before', () => {
    const a = make();
    a.scheduler.set([solution('s1', everyMinute), solution('s2', everyMinute)]);
    a.scheduler.start();
    vi.advanceTimersByTime(2 * MINUTE);
    a.scheduler.stop();
    vi.setSystemTime(new Date('2026-03-02T10:07:30Z'));
    const b = make();
    // s1 comes back at a new version (moved away and back); s2 with another rule.
    b.scheduler.set([solution('s1', everyMinute, 'v2'), solution('s2', everyMinutes(5))]);
    b.scheduler.start();
    expect(b.fired).toEqual([]);
    expect(b.skipped).toEqual([]);
    vi.advanceTimersByTime(3 * MINUTE);
    expect(b.fired.map((f) => [f.solutionId, f.dueAt])).toEqual([
      ['s1', '2026-03-02T10:08:00.000Z'],
      ['s1', '2026-03-02T10:09:00.000Z'],
      ['s1', '2026-03-02T10:10:00.000Z'],
      ['s2', '2026-03-02T10:10:00.000Z'],
    ]);
    // A new version while running: the next due time after that moment, the one in progress kept.
    vi.advanceTimersByTime(20_000);
    b.scheduler.set([solution('s1', daily(9 * 60), 'v3'), solution('s2', everyMinutes(5))]);
    expect(b.scheduler.nextDueAt('s1')).toEqual(new Date('2026-03-03T09:00:00Z'));
    expect(b.scheduler.nextDueAt('s2')).toEqual(new Date('2026-03-02T10:15:00Z'));
  });

  it('never lets two Agents fire the same due time when a Solution moves', () => {
    const a = make();
    const b = make({ fileName: 'agent-b.db' });
    a.scheduler.set([solution('x', everyMinute)]);
    a.scheduler.start();
    b.scheduler.set([]);
    b.scheduler.start();
    vi.advanceTimersByTime(5 * MINUTE);
    // 10:05:30: the Service moves x to b, sending each Agent its full set (b gets a new version).
    a.scheduler.set([]);
    b.scheduler.set([solution('x', everyMinute, 'v2')]);
    vi.advanceTimersByTime(5 * MINUTE);
    const byA = a.fired.map((f) => f.dueAt);
    const byB = b.fired.map((f) => f.dueAt);
    expect(byA).toHaveLength(5);
    expect(byB).toEqual(Array.from({ length: 5 }, (_, i) => iso(at('2026-03-02T10:06Z') + i * MINUTE)));
    expect(byA.filter((d) => byB.includes(d))).toEqual([]);
  });

  it('an Agent that was down when its Solution moved fires nothing of it on restart: the set at connect comes first', () => {
    const a = make();
    a.scheduler.set([solution('x', everyMinute)]);
    a.scheduler.start();
    vi.advanceTimersByTime(2 * MINUTE);
    a.scheduler.stop();
    vi.advanceTimersByTime(4 * MINUTE);
    const again = make();
    again.scheduler.set([]);
    again.scheduler.start();
    vi.advanceTimersByTime(5 * MINUTE);
    expect(again.fired).toEqual([]);
    expect(again.skipped).toEqual([]);
  });

  it('keeps one timer for 1,000 Solutions and fires exactly 10,000 runs in 10 minutes', () => {
    const a = make();
    const solutions = Array.from({ length: 1000 }, (_, i) => solution(`s${i}`, everyMinute));
    a.scheduler.set(solutions);
    a.scheduler.start();
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(10 * MINUTE);
    expect(a.fired).toHaveLength(10_000);
    expect(new Set(a.fired.map((f) => `${f.solutionId} ${f.dueAt}`)).size).toBe(10_000);
    expect(new Set(a.fired.map((f) => f.runId)).size).toBe(10_000);
    expect(vi.getTimerCount()).toBe(1);
  });

  it('never fires a rule this Agent cannot compute, and fires the others', () => {
    const a = make();
    a.scheduler.set([solution('mars', everyMinutes(1, 'Mars/Olympus_Mons')), solution('s1', everyMinute)]);
    a.scheduler.start();
    vi.advanceTimersByTime(2 * MINUTE);
    expect(a.fired.map((f) => f.solutionId)).toEqual(['s1', 's1']);
  });
});
