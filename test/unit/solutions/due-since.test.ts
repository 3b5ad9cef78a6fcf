import { describe, expect, it } from 'vitest';
import type { ScheduleRule } from '../../../src/protocol/schedule.js';
import { dueSince } from '../../../src/solutions/due-since.js';
import { nextDueTimes } from '../../../src/solutions/schedule.js';

const MINUTE = 60_000;
const DAY = 86_400_000;
const everyMinute: ScheduleRule = {
  kind: 'Recurring',
  days: { kind: 'interval', every: 1, start: '2020-01-01' },
  times: { kind: 'every', minutes: 1 },
  timeZone: 'UTC',
};
const monthly: ScheduleRule = {
  kind: 'Recurring',
  days: { kind: 'monthdays', days: [15], lastDay: true },
  times: { kind: 'at', minute: 9 * 60 },
  timeZone: 'Europe/Berlin',
};
const t = (iso: string): number => Date.parse(iso);

describe('the due times since the last one handled', () => {
  it('finds the one due time of a timer that fired on time', () => {
    expect(dueSince(everyMinute, t('2026-03-02T10:00Z'), t('2026-03-02T10:01:00.005Z'), 101, 1000)).toEqual({
      latest: [t('2026-03-02T10:01Z')],
      earlier: 0,
      exact: true,
    });
  });

  it('finds none before the first due time', () => {
    expect(dueSince(everyMinute, t('2026-03-02T10:00Z'), t('2026-03-02T10:00:59Z'), 101, 1000)).toEqual({
      latest: [],
      earlier: 0,
      exact: true,
    });
  });

  it('lists the latest ones and counts the others exactly within the scan limit', () => {
    const after = t('2026-03-02T10:00Z');
    const found = dueSince(everyMinute, after, after + 500 * MINUTE + 30_000, 101, 1000);
    expect(found.latest).toHaveLength(101);
    expect(found.latest.at(-1)).toBe(after + 500 * MINUTE);
    expect(found.latest[0]).toBe(after + 400 * MINUTE);
    expect(found).toMatchObject({ earlier: 399, exact: true });
  });

  it('bounds the work of a month offline: the latest found from now, the others a lower bound', () => {
    const after = t('2026-03-01T00:00Z');
    const now = after + 30 * DAY + 30_000;
    const started = performance.now();
    const found = dueSince(everyMinute, after, now, 101, 1000);
    const ms = performance.now() - started;
    const expected = Array.from({ length: 101 }, (_, i) => after + 30 * DAY - (100 - i) * MINUTE);
    expect(found.latest).toEqual(expected);
    expect(found.exact).toBe(false);
    // 43,200 due times in all: at least the thousand scanned were counted, never more than there are.
    expect(found.earlier).toBeGreaterThanOrEqual(1000 - 101);
    expect(found.earlier).toBeLessThanOrEqual(43_200 - 101);
    expect(ms).toBeLessThan(1000);
  });

  it('counts a month offline exactly when the scan limit allows', () => {
    const after = t('2026-03-01T00:00Z');
    const found = dueSince(everyMinute, after, after + 30 * DAY + 30_000, 101, 100_000);
    expect(found).toMatchObject({ earlier: 43_200 - 101, exact: true });
    expect(found.latest.at(-1)).toBe(after + 30 * DAY);
  });

  it('reaches back as far as a sparse rule needs, and counts exactly when a window covers the gap', () => {
    const after = t('2020-01-01T00:00Z');
    const now = t('2026-03-02T10:00Z');
    const all = nextDueTimes(monthly, new Date(after), 1000)
      .map((d) => d.getTime())
      .filter((x) => x <= now);
    const found = dueSince(monthly, after, now, 101, 10);
    expect(found.latest).toEqual(all.slice(-101));
    expect(all.length).toBeGreaterThan(140);
    // Past the scan limit of 10, the windows back from now grow until one reaches 2020: exact again.
    expect(found).toMatchObject({ earlier: all.length - 101, exact: true });
  });

  it('ends with a rule that ends: a RunOnce long past is one due time', () => {
    const once: ScheduleRule = { kind: 'RunOnce', date: '2026-01-10', second: 3600, offsetMinutes: 0, timeZone: 'UTC' };
    expect(dueSince(once, t('2026-01-01T00:00Z'), t('2026-03-01T00:00Z'), 101, 1000)).toEqual({
      latest: [t('2026-01-10T01:00Z')],
      earlier: 0,
      exact: true,
    });
  });
});
