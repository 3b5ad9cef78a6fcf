import { describe, expect, it } from 'vitest';
import { Schedule } from '../../../src/protocol/schedule.js';
import {
  compileSchedule,
  MAX_DUE_TIMES,
  nextDue,
  nextDueTimes,
  requireSchedule,
} from '../../../src/solutions/schedule.js';
import type { ScheduleRule } from '../../../src/protocol/schedule.js';

// Schedule bodies as clients send them: every part present, the unused ones null.
type Days = Record<string, unknown>;
type Times = Record<string, unknown>;
const noDays = {
  daysOption: null,
  daysIntervalStartDate: null,
  daysInterval: null,
  daysOfMonth: null,
  daysOfWeek: null,
  lastDayOfMonth: null,
};
const noTimes = { timeOption: null, hourlyMinutes: null, timeOfDay: null, timeInterval: null, timeIntervalUnit: null };

const everyDays = (daysInterval: number, daysIntervalStartDate: string): Days => ({
  ...noDays,
  daysOption: 'DaysInterval',
  daysInterval,
  daysIntervalStartDate,
});
const daily: Days = everyDays(1, '2026-1-1');
const weekly = (...daysOfWeek: string[]): Days => ({ ...noDays, daysOption: 'DaysOfWeek', daysOfWeek });
const monthly = (daysOfMonth: number[], lastDayOfMonth = false): Days => ({
  ...noDays,
  daysOption: 'DaysOfMonth',
  daysOfMonth,
  lastDayOfMonth,
});
const at = (timeOfDay: string): Times => ({ ...noTimes, timeOption: 'TimeOfDay', timeOfDay });
const hourly = (hourlyMinutes: number): Times => ({ ...noTimes, timeOption: 'HourlyMinutes', hourlyMinutes });
const interval = (timeInterval: number, timeIntervalUnit: 'minutes' | 'hours'): Times => ({
  ...noTimes,
  timeOption: 'TimeInterval',
  timeInterval,
  timeIntervalUnit,
});

const recurring = (days: Days, times: Times, timeZone: string) => ({
  scheduleOption: 'Recurring',
  solutionId: '5f0c6d4e-2b1a-4c3d-9e8f-7a6b5c4d3e2f',
  runOnceOptions: null,
  recurringOptions: { days, times, timeZone },
});
const runOnce = (dateTime: string, timeZone: string | null = null) => ({
  scheduleOption: 'RunOnce',
  solutionId: null,
  runOnceOptions: { dateTime },
  recurringOptions: timeZone === null ? null : { days: null, times: null, timeZone },
});

function rule(body: unknown): ScheduleRule {
  const compiled = compileSchedule(Schedule.parse(body));
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.errors));
  return compiled.rule;
}

/** `2026-03-08T07:00:00.000Z` as `2026-03-08T07:00Z`. */
const short = (d: Date): string => d.toISOString().replace(':00.000Z', 'Z');

const NY = 'America/New_York';
const BERLIN = 'Europe/Berlin';

interface Row {
  name: string;
  schedule: unknown;
  after: string;
  expected: string[];
}

const rows: Row[] = [
  // --- Days, in UTC ---
  {
    name: 'every 3 days from the start date',
    schedule: recurring(everyDays(3, '2026-1-1'), at('09:00'), 'UTC'),
    after: '2026-01-01T00:00Z',
    expected: ['2026-01-01T09:00Z', '2026-01-04T09:00Z', '2026-01-07T09:00Z', '2026-01-10T09:00Z'],
  },
  {
    name: 'every 2 days, the start date still ahead',
    schedule: recurring(everyDays(2, '2026-1-10'), at('09:00'), 'UTC'),
    after: '2026-01-01T00:00Z',
    expected: ['2026-01-10T09:00Z', '2026-01-12T09:00Z', '2026-01-14T09:00Z'],
  },
  {
    name: 'strictly after: a due time equal to after is not due again',
    schedule: recurring(everyDays(2, '2026-1-10'), at('09:00'), 'UTC'),
    after: '2026-01-10T09:00Z',
    expected: ['2026-01-12T09:00Z', '2026-01-14T09:00Z'],
  },
  {
    name: 'every 7 days counted across a year end',
    schedule: recurring(everyDays(7, '2025-12-29'), at('0:00'), 'UTC'),
    after: '2025-12-30T00:00Z',
    expected: ['2026-01-05T00:00Z', '2026-01-12T00:00Z'],
  },
  {
    name: 'days of the week',
    schedule: recurring(weekly('Monday', 'Friday'), at('06:30'), 'UTC'),
    after: '2026-11-25T00:00Z',
    expected: ['2026-11-27T06:30Z', '2026-11-30T06:30Z', '2026-12-04T06:30Z', '2026-12-07T06:30Z'],
  },
  {
    name: 'one day of the week',
    schedule: recurring(weekly('sunday'), at('12:00'), 'UTC'),
    after: '2026-11-29T12:00Z',
    expected: ['2026-12-06T12:00Z', '2026-12-13T12:00Z'],
  },
  {
    name: 'the 31st: months without one are skipped',
    schedule: recurring(monthly([31]), at('12:00'), 'UTC'),
    after: '2026-01-31T12:00Z',
    expected: [
      '2026-03-31T12:00Z',
      '2026-05-31T12:00Z',
      '2026-07-31T12:00Z',
      '2026-08-31T12:00Z',
      '2026-10-31T12:00Z',
      '2026-12-31T12:00Z',
    ],
  },
  {
    name: 'the 30th and the last day: February 2026 has neither 29th nor 30th',
    schedule: recurring(monthly([30], true), at('00:00'), 'UTC'),
    after: '2026-01-29T00:00Z',
    expected: ['2026-01-30T00:00Z', '2026-01-31T00:00Z', '2026-02-28T00:00Z', '2026-03-30T00:00Z', '2026-03-31T00:00Z'],
  },
  {
    name: 'the 29th and the last day in leap year 2028: Feb 29 is both, due once',
    schedule: recurring(monthly([29], true), at('08:15'), 'UTC'),
    after: '2028-02-01T00:00Z',
    expected: ['2028-02-29T08:15Z', '2028-03-29T08:15Z', '2028-03-31T08:15Z', '2028-04-29T08:15Z', '2028-04-30T08:15Z'],
  },
  {
    name: 'the 29th without the last day: skipped in February 2027',
    schedule: recurring(monthly([29]), at('08:15'), 'UTC'),
    after: '2027-02-01T00:00Z',
    expected: ['2027-03-29T08:15Z', '2027-04-29T08:15Z'],
  },
  {
    name: 'the 29th in February 2028',
    schedule: recurring(monthly([29]), at('08:15'), 'UTC'),
    after: '2028-02-01T00:00Z',
    expected: ['2028-02-29T08:15Z', '2028-03-29T08:15Z'],
  },
  {
    name: 'the last day alone',
    schedule: recurring(monthly([], true), at('23:59'), 'UTC'),
    after: '2028-01-15T00:00Z',
    expected: ['2028-01-31T23:59Z', '2028-02-29T23:59Z', '2028-03-31T23:59Z', '2028-04-30T23:59Z'],
  },
  {
    name: 'several days of the month, listed out of order',
    schedule: recurring(monthly([15, 1]), at('7:05'), 'UTC'),
    after: '2026-02-01T07:05Z',
    expected: ['2026-02-15T07:05Z', '2026-03-01T07:05Z', '2026-03-15T07:05Z'],
  },
  // --- Times, in UTC ---
  {
    name: 'hourly minutes across midnight',
    schedule: recurring(daily, hourly(15), 'UTC'),
    after: '2026-05-01T22:20Z',
    expected: ['2026-05-01T23:15Z', '2026-05-02T00:15Z', '2026-05-02T01:15Z', '2026-05-02T02:15Z'],
  },
  {
    name: 'hourly minutes on due days only',
    schedule: recurring(weekly('Saturday'), hourly(45), 'UTC'),
    after: '2026-11-28T22:00Z',
    expected: ['2026-11-28T22:45Z', '2026-11-28T23:45Z', '2026-12-05T00:45Z', '2026-12-05T01:45Z'],
  },
  {
    name: 'every 90 minutes from midnight',
    schedule: recurring(daily, interval(90, 'minutes'), 'UTC'),
    after: '2026-05-01T20:00Z',
    expected: ['2026-05-01T21:00Z', '2026-05-01T22:30Z', '2026-05-02T00:00Z', '2026-05-02T01:30Z'],
  },
  {
    name: 'every 7 hours, restarting at each midnight',
    schedule: recurring(daily, interval(7, 'hours'), 'UTC'),
    after: '2026-05-01T15:00Z',
    expected: ['2026-05-01T21:00Z', '2026-05-02T00:00Z', '2026-05-02T07:00Z', '2026-05-02T14:00Z'],
  },
  {
    name: 'every 5 minutes',
    schedule: recurring(daily, interval(5, 'minutes'), 'UTC'),
    after: '2026-05-01T23:52Z',
    expected: ['2026-05-01T23:55Z', '2026-05-02T00:00Z', '2026-05-02T00:05Z'],
  },
  {
    name: 'every 24 hours: midnight only',
    schedule: recurring(weekly('Monday'), interval(24, 'hours'), 'UTC'),
    after: '2026-11-25T00:00Z',
    expected: ['2026-11-30T00:00Z', '2026-12-07T00:00Z'],
  },

  // --- New York: spring forward 2026-03-08 02:00 EST → 03:00 EDT, fall back 2026-11-01 02:00 EDT → 01:00 EST ---
  {
    name: 'NY: 02:30 does not exist on Mar 8: due at 03:00 EDT',
    schedule: recurring(daily, at('02:30'), 'Eastern Standard Time'),
    after: '2026-03-06T12:00Z',
    expected: ['2026-03-07T07:30Z', '2026-03-08T07:00Z', '2026-03-09T06:30Z'],
  },
  {
    name: 'NY: 01:30 happens twice on Nov 1: due once, the first (EDT)',
    schedule: recurring(daily, at('01:30'), NY),
    after: '2026-10-30T12:00Z',
    expected: ['2026-10-31T05:30Z', '2026-11-01T05:30Z', '2026-11-02T06:30Z'],
  },
  {
    name: 'NY: a time after the change keeps its wall time',
    schedule: recurring(daily, at('09:00'), NY),
    after: '2026-03-07T00:00Z',
    expected: ['2026-03-07T14:00Z', '2026-03-08T13:00Z', '2026-03-09T13:00Z'],
  },
  {
    name: 'NY: Sundays at 02:00 across the spring change',
    schedule: recurring(weekly('Sunday'), at('02:00'), NY),
    after: '2026-03-01T12:00Z',
    expected: ['2026-03-08T07:00Z', '2026-03-15T06:00Z', '2026-03-22T06:00Z'],
  },
  {
    name: 'NY: hourly at :30 over the spring change',
    schedule: recurring(daily, hourly(30), NY),
    after: '2026-03-08T05:00Z',
    expected: ['2026-03-08T05:30Z', '2026-03-08T06:30Z', '2026-03-08T07:00Z', '2026-03-08T07:30Z', '2026-03-08T08:30Z'],
  },
  {
    name: 'NY: hourly at :30 over the fall change: the repeated 01:30 once',
    schedule: recurring(daily, hourly(30), NY),
    after: '2026-11-01T03:00Z',
    expected: ['2026-11-01T03:30Z', '2026-11-01T04:30Z', '2026-11-01T05:30Z', '2026-11-01T07:30Z', '2026-11-01T08:30Z'],
  },
  {
    name: 'NY: every 30 minutes over the spring change: 02:00–03:00 collapse into one run',
    schedule: recurring(daily, interval(30, 'minutes'), NY),
    after: '2026-03-08T06:00Z',
    expected: ['2026-03-08T06:30Z', '2026-03-08T07:00Z', '2026-03-08T07:30Z', '2026-03-08T08:00Z'],
  },
  {
    name: 'NY: every 30 minutes over the fall change: each wall time once',
    schedule: recurring(daily, interval(30, 'minutes'), NY),
    after: '2026-11-01T04:00Z',
    expected: ['2026-11-01T04:30Z', '2026-11-01T05:00Z', '2026-11-01T05:30Z', '2026-11-01T07:00Z', '2026-11-01T07:30Z'],
  },
  {
    name: 'NY: every hour over the spring change',
    schedule: recurring(daily, interval(1, 'hours'), NY),
    after: '2026-03-08T05:00Z',
    expected: ['2026-03-08T06:00Z', '2026-03-08T07:00Z', '2026-03-08T08:00Z'],
  },
  {
    name: 'NY: every hour over the fall change',
    schedule: recurring(daily, interval(1, 'hours'), NY),
    after: '2026-11-01T04:00Z',
    expected: ['2026-11-01T05:00Z', '2026-11-01T07:00Z', '2026-11-01T08:00Z'],
  },
  {
    name: 'NY: the last day of the month in local time (Dec 31 22:00 EST is already Jan 1 in UTC)',
    schedule: recurring(monthly([], true), at('22:00'), NY),
    after: '2026-01-01T00:00Z',
    expected: ['2026-01-01T03:00Z', '2026-02-01T03:00Z', '2026-03-01T03:00Z', '2026-04-01T02:00Z'],
  },

  // --- Berlin: spring forward 2026-03-29 02:00 CET → 03:00 CEST, fall back 2026-10-25 03:00 CEST → 02:00 CET ---
  {
    name: 'Berlin: 02:30 does not exist on Mar 29: due at 03:00 CEST',
    schedule: recurring(daily, at('02:30'), 'W. Europe Standard Time'),
    after: '2026-03-27T12:00Z',
    expected: ['2026-03-28T01:30Z', '2026-03-29T01:00Z', '2026-03-30T00:30Z'],
  },
  {
    name: 'Berlin: 02:30 happens twice on Oct 25: due once, the first (CEST)',
    schedule: recurring(daily, at('02:30'), BERLIN),
    after: '2026-10-23T12:00Z',
    expected: ['2026-10-24T00:30Z', '2026-10-25T00:30Z', '2026-10-26T01:30Z'],
  },
  {
    name: 'Berlin: every 15 minutes over the spring change',
    schedule: recurring(daily, interval(15, 'minutes'), BERLIN),
    after: '2026-03-29T00:30Z',
    expected: ['2026-03-29T00:45Z', '2026-03-29T01:00Z', '2026-03-29T01:15Z', '2026-03-29T01:30Z'],
  },
  {
    name: 'Berlin: every 15 minutes over the fall change: the repeated hour runs once',
    schedule: recurring(daily, interval(15, 'minutes'), BERLIN),
    after: '2026-10-25T00:30Z',
    expected: ['2026-10-25T00:45Z', '2026-10-25T02:00Z', '2026-10-25T02:15Z'],
  },
  {
    name: 'Berlin: every 2 hours over the spring change',
    schedule: recurring(daily, interval(2, 'hours'), BERLIN),
    after: '2026-03-28T22:00Z',
    expected: ['2026-03-28T23:00Z', '2026-03-29T01:00Z', '2026-03-29T02:00Z', '2026-03-29T04:00Z'],
  },
  {
    name: 'Berlin: hourly at :00 over the fall change',
    schedule: recurring(daily, hourly(0), BERLIN),
    after: '2026-10-24T22:30Z',
    expected: ['2026-10-24T23:00Z', '2026-10-25T00:00Z', '2026-10-25T02:00Z', '2026-10-25T03:00Z'],
  },
  {
    name: 'Berlin: Sundays at 02:30 over the spring change',
    schedule: recurring(weekly('Sunday'), at('2:30'), 'w. europe standard time'),
    after: '2026-03-22T12:00Z',
    expected: ['2026-03-29T01:00Z', '2026-04-05T00:30Z'],
  },
  {
    name: 'Berlin: every 3 days from a winter start into summer',
    schedule: recurring(everyDays(3, '2026-3-26'), at('12:00'), BERLIN),
    after: '2026-03-26T00:00Z',
    expected: ['2026-03-26T11:00Z', '2026-03-29T10:00Z', '2026-04-01T10:00Z'],
  },

  // --- Lord Howe Island: a half-hour change (+10:30 ↔ +11), spring 2026-10-04 02:00 → 02:30, fall 2026-04-05 02:00 → 01:30 ---
  {
    name: 'Lord Howe: 02:15 does not exist on Oct 4: due at the jump',
    schedule: recurring(daily, at('02:15'), 'Lord Howe Standard Time'),
    after: '2026-10-03T00:00Z',
    expected: ['2026-10-03T15:30Z', '2026-10-04T15:15Z'],
  },
  {
    name: 'Lord Howe: 01:45 happens twice on Apr 5: the first',
    schedule: recurring(daily, at('01:45'), 'Australia/Lord_Howe'),
    after: '2026-04-03T00:00Z',
    expected: ['2026-04-03T14:45Z', '2026-04-04T14:45Z', '2026-04-05T15:15Z'],
  },

  // --- RunOnce and OnDemand ---
  {
    name: 'run once, UTC',
    schedule: runOnce('2099-1-31T10:00Z'),
    after: '2026-11-25T00:00Z',
    expected: ['2099-01-31T10:00Z'],
  },
  {
    name: 'run once: nothing after it',
    schedule: runOnce('2099-1-31T10:00Z'),
    after: '2099-01-31T10:00Z',
    expected: [],
  },
  {
    name: 'run once with an offset',
    schedule: runOnce('2026-6-1T12:00:00+02:00', 'Eastern Standard Time'),
    after: '2026-01-01T00:00Z',
    expected: ['2026-06-01T10:00Z'],
  },
  {
    name: 'run once without an offset and without a zone: UTC',
    schedule: runOnce('2026-6-1T12:00'),
    after: '2026-01-01T00:00Z',
    expected: ['2026-06-01T12:00Z'],
  },
  {
    name: 'run once in the zone, at a time that does not exist',
    schedule: runOnce('2026-3-8T2:30', 'Eastern Standard Time'),
    after: '2026-01-01T00:00Z',
    expected: ['2026-03-08T07:00Z'],
  },
  {
    name: 'run once in the zone, at a time that happens twice',
    schedule: runOnce('2026-11-1 1:30', NY),
    after: '2026-01-01T00:00Z',
    expected: ['2026-11-01T05:30Z'],
  },
  {
    name: 'run once in Berlin, summer',
    schedule: runOnce('2026-7-1T08:00', 'W. Europe Standard Time'),
    after: '2026-01-01T00:00Z',
    expected: ['2026-07-01T06:00Z'],
  },
  {
    name: 'on demand: never due',
    schedule: { scheduleOption: 'OnDemand', solutionId: null, runOnceOptions: null, recurringOptions: null },
    after: '2026-01-01T00:00Z',
    expected: [],
  },
];

describe('next due times', () => {
  it.each(rows)('$name', ({ schedule, after, expected }) => {
    const r = rule(schedule);
    const due = nextDueTimes(r, new Date(after), Math.max(expected.length, 1));
    expect(due.map(short)).toEqual(expected);
    expect(nextDue(r, new Date(after))?.toISOString()).toBe(
      expected[0] === undefined ? undefined : new Date(expected[0]).toISOString(),
    );
  });
});

describe('Windows time zone names', () => {
  const pairs: Array<[string, string]> = [
    ['Coordinated Universal Time', 'UTC'],
    ['Eastern Standard Time', 'America/New_York'],
    ['W. Europe Standard Time', 'Europe/Berlin'],
    ['GMT Standard Time', 'Europe/London'],
    ['Pacific Standard Time', 'America/Los_Angeles'],
    ['Central Standard Time', 'America/Chicago'],
    ['Mountain Standard Time', 'America/Denver'],
    ['India Standard Time', 'Asia/Kolkata'],
    ['AUS Eastern Standard Time', 'Australia/Sydney'],
    ['Tokyo Standard Time', 'Asia/Tokyo'],
    ['China Standard Time', 'Asia/Shanghai'],
  ];
  it.each(pairs)('%s is due when %s is, across both changes of 2026', (windows, iana) => {
    for (const times of [at('02:30'), hourly(30), interval(45, 'minutes')]) {
      for (const after of [
        '2026-03-07T00:00Z',
        '2026-03-28T00:00Z',
        '2026-04-04T00:00Z',
        '2026-10-24T00:00Z',
        '2026-10-31T00:00Z',
      ]) {
        const a = nextDueTimes(rule(recurring(daily, times, windows)), new Date(after), 60).map(short);
        const b = nextDueTimes(rule(recurring(daily, times, iana)), new Date(after), 60).map(short);
        expect(a).toHaveLength(60);
        expect(a).toEqual(b);
      }
    }
  });
});

describe('the rule and its bounds', () => {
  it('resolves the time zone into the rule', () => {
    expect(rule(recurring(daily, at('01:00'), 'eastern standard time'))).toMatchObject({
      kind: 'Recurring',
      timeZone: 'America/New_York',
    });
    expect(rule(runOnce('2026-1-1T00:00'))).toMatchObject({ kind: 'RunOnce', timeZone: 'UTC' });
    expect(
      rule({ scheduleOption: 'Recurring', recurringOptions: { days: daily, times: at('01:00'), timeZone: null } }),
    ).toMatchObject({ timeZone: 'UTC' });
  });

  it('names an unknown time zone with the other errors, under the given prefix', () => {
    const compiled = compileSchedule(Schedule.parse(recurring(weekly(), at('25:00'), 'Mars Standard Time')), 'body');
    expect(compiled.ok).toBe(false);
    if (compiled.ok) return;
    expect(compiled.errors.map((e) => e.path).sort()).toEqual([
      'body.recurringOptions.days.daysOfWeek',
      'body.recurringOptions.timeZone',
      'body.recurringOptions.times.timeOfDay',
    ]);
    expect(compileSchedule(Schedule.parse(runOnce('2026-1-1T00:00', '+05:00')))).toMatchObject({
      ok: false,
      errors: [{ path: 'recurringOptions.timeZone' }],
    });
    // OnDemand ignores what the other parts hold.
    expect(
      compileSchedule(Schedule.parse({ ...recurring(weekly(), at('x'), 'nowhere'), scheduleOption: 'ondemand' })),
    ).toEqual({ ok: true, rule: { kind: 'OnDemand' } });
  });

  it('requireSchedule throws API_VALIDATION with every field error', () => {
    let thrown: unknown;
    try {
      requireSchedule(Schedule.parse(recurring(daily, hourly(5), 'Nowhere/Else')), 'body');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toMatchObject({
      code: 'API_VALIDATION',
      errors: [{ path: 'body.recurringOptions.timeZone', message: expect.stringContaining('not a time zone') }],
    });
    expect(requireSchedule(Schedule.parse(runOnce('2099-1-31T10:00Z')))).toMatchObject({ kind: 'RunOnce' });
  });

  it('refuses a count outside 0 to MAX_DUE_TIMES and an invalid date', () => {
    const r = rule(recurring(daily, at('01:00'), 'UTC'));
    expect(nextDueTimes(r, new Date('2026-01-01T00:00Z'), 0)).toEqual([]);
    expect(() => nextDueTimes(r, new Date('2026-01-01T00:00Z'), MAX_DUE_TIMES + 1)).toThrow(RangeError);
    expect(() => nextDueTimes(r, new Date('2026-01-01T00:00Z'), 1.5)).toThrow(RangeError);
    expect(() => nextDue(r, new Date('nonsense'))).toThrow(RangeError);
  });

  it('computes many due times without walking minute by minute, and ends at the year 9999', () => {
    const minutely = rule(recurring(daily, interval(1, 'minutes'), BERLIN));
    const started = performance.now();
    const due = nextDueTimes(minutely, new Date('2026-03-28T20:00Z'), MAX_DUE_TIMES);
    // Real time has no gap at the spring change: the skipped wall minutes all land on 01:00Z.
    expect(due).toHaveLength(MAX_DUE_TIMES);
    expect(short(due[MAX_DUE_TIMES - 1] as Date)).toBe('2026-03-29T12:40Z');
    const rare = rule(recurring(everyDays(366, '1900-1-1'), at('23:59'), 'Pacific/Apia'));
    expect(nextDueTimes(rare, new Date('2026-01-01T00:00Z'), MAX_DUE_TIMES)).toHaveLength(MAX_DUE_TIMES);
    // .NET's DateTime.MinValue as a start date: every 7 days from Monday 0001-01-01.
    const ancient = rule(recurring(everyDays(7, '0001-01-01'), at('06:00'), 'UTC'));
    expect(nextDueTimes(ancient, new Date('2026-01-01T00:00Z'), 2).map(short)).toEqual([
      '2026-01-05T06:00Z',
      '2026-01-12T06:00Z',
    ]);
    const sparse = rule(recurring(monthly([31]), hourly(5), BERLIN));
    expect(nextDueTimes(sparse, new Date('2026-01-01T00:00Z'), MAX_DUE_TIMES)).toHaveLength(MAX_DUE_TIMES);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(
      nextDueTimes(rule(recurring(daily, at('12:00'), 'UTC')), new Date('9999-12-30T00:00Z'), 5).map(short),
    ).toEqual(['9999-12-30T12:00Z', '9999-12-31T12:00Z']);
  });

  it('is pure: the same rule and instant give the same answer, and the rule travels as JSON', () => {
    const r = rule(recurring(weekly('Tuesday', 'Thursday'), interval(3, 'hours'), 'Tokyo Standard Time'));
    const again = JSON.parse(JSON.stringify(r)) as ScheduleRule;
    const after = new Date('2026-11-25T00:00Z');
    expect(nextDueTimes(again, after, 20)).toEqual(nextDueTimes(r, after, 20));
    expect(after.toISOString()).toBe('2026-11-25T00:00:00.000Z');
  });
});
