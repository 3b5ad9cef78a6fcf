import { describe, expect, it } from 'vitest';
import {
  normalizeSchedule,
  parseCivilDate,
  parseDateTime,
  Schedule,
  ScheduleRule,
} from '../../../src/protocol/schedule.js';

const SOLUTION = '5f0c6d4e-2b1a-4c3d-9e8f-7a6b5c4d3e2f';

const normalize = (body: unknown, at?: string) => normalizeSchedule(Schedule.parse(body), at);
const pathsOf = (body: unknown, at?: string): string[] => {
  const n = normalize(body, at);
  return n.ok ? [] : n.errors.map((e) => e.path);
};

describe('Schedule bodies as clients send them', () => {
  it("reads a deployment tool's hourly schedule: defaults everywhere, nulls for the unused parts", () => {
    const body = {
      recurringOptions: {
        days: {
          daysInterval: 1,
          daysOfMonth: null,
          daysOfWeek: null,
          daysIntervalStartDate: '2016-01-01',
          daysOption: 'DaysInterval',
          lastDayOfMonth: null,
        },
        times: {
          timeOption: 'HourlyMinutes',
          hourlyMinutes: 10,
          timeInterval: null,
          timeIntervalUnit: null,
          timeOfDay: null,
        },
        timeZone: 'Coordinated Universal Time',
      },
      runOnceOptions: null,
      scheduleOption: 'Recurring',
      solutionId: SOLUTION,
    };
    expect(normalize(body)).toEqual({
      ok: true,
      rule: {
        kind: 'Recurring',
        days: { kind: 'interval', every: 1, start: '2016-01-01' },
        times: { kind: 'hourly', minute: 10 },
        timeZone: 'Coordinated Universal Time',
      },
    });
    expect(
      normalize({ recurringOptions: null, runOnceOptions: null, scheduleOption: 'OnDemand', solutionId: SOLUTION }),
    ).toEqual({ ok: true, rule: { kind: 'OnDemand' } });
  });

  it("reads a pipeline task's body: lower-case enums, numbers as text, leftovers in unused fields", () => {
    const body = {
      scheduleOption: 'Recurring',
      solutionId: SOLUTION,
      runOnceOptions: null,
      recurringOptions: {
        days: {
          daysOption: 'daysOfWeek',
          daysIntervalStartDate: 'undefined-undefined-undefined',
          daysInterval: null,
          daysOfMonth: [],
          daysOfWeek: ['Monday', 'friday', 'MONDAY'],
          lastDayOfMonth: false,
        },
        times: {
          timeOption: 'timeOfDay',
          hourlyMinutes: '15',
          timeOfDay: '6:30',
          timeInterval: null,
          timeIntervalUnit: null,
        },
        timeZone: 'Coordinated Universal Time',
      },
    };
    const parsed = Schedule.parse(body);
    expect(parsed.recurringOptions?.days?.daysOption).toBe('DaysOfWeek');
    expect(parsed.recurringOptions?.days?.daysOfWeek).toEqual(['Monday', 'Friday', 'Monday']);
    expect(parsed.recurringOptions?.times?.timeOption).toBe('TimeOfDay');
    expect(parsed.recurringOptions?.times?.hourlyMinutes).toBe(15);
    expect(normalizeSchedule(parsed)).toEqual({
      ok: true,
      rule: {
        kind: 'Recurring',
        days: { kind: 'weekdays', weekdays: [1, 5] },
        times: { kind: 'at', minute: 390 },
        timeZone: 'Coordinated Universal Time',
      },
    });
    // Its run-once form: an unpadded date, the time and Z appended.
    expect(
      normalize({
        scheduleOption: 'runonce',
        solutionId: SOLUTION,
        runOnceOptions: { dateTime: '2099-1-31T10:00Z' },
        recurringOptions: null,
      }),
    ).toEqual({
      ok: true,
      rule: { kind: 'RunOnce', date: '2099-01-31', second: 36_000, offsetMinutes: 0, timeZone: 'UTC' },
    });
    // "" is no number; an empty hourlyMinutes is null.
    expect(
      Schedule.parse({
        ...body,
        recurringOptions: { ...body.recurringOptions, times: { ...body.recurringOptions.times, hourlyMinutes: '' } },
      }).recurringOptions?.times?.hourlyMinutes,
    ).toBeNull();
  });

  it('takes a model read with GET back: zeros and empty lists in the unused parts', () => {
    const body = {
      scheduleOption: 'Recurring',
      solutionId: SOLUTION,
      runOnceOptions: { dateTime: null },
      recurringOptions: {
        days: {
          daysOption: 'DaysOfMonth',
          daysIntervalStartDate: null,
          daysInterval: 0,
          daysOfMonth: [1, 15],
          daysOfWeek: [],
          lastDayOfMonth: true,
        },
        times: {
          timeOption: 'TimeInterval',
          hourlyMinutes: 0,
          timeOfDay: null,
          timeInterval: 2,
          timeIntervalUnit: 'Hours',
        },
        timeZone: 'W. Europe Standard Time',
      },
      checkForBulk: false,
    };
    expect(normalize(body)).toEqual({
      ok: true,
      rule: {
        kind: 'Recurring',
        days: { kind: 'monthdays', days: [1, 15], lastDay: true },
        times: { kind: 'every', minutes: 120 },
        timeZone: 'W. Europe Standard Time',
      },
    });
  });

  it('accepts enum values in any case and answers them in the canonical spelling', () => {
    const parsed = Schedule.parse({
      scheduleOption: ' RECURRING ',
      recurringOptions: {
        days: { daysOption: 'daysinterval', daysInterval: '2', daysIntervalStartDate: '2024-1-1' },
        times: { timeOption: 'TIMEINTERVAL', timeInterval: 30, timeIntervalUnit: 'MINUTES' },
        timeZone: null,
      },
    });
    expect(parsed.scheduleOption).toBe('Recurring');
    expect(parsed.recurringOptions?.days?.daysOption).toBe('DaysInterval');
    expect(parsed.recurringOptions?.times).toMatchObject({ timeOption: 'TimeInterval', timeIntervalUnit: 'minutes' });
    expect(normalizeSchedule(parsed)).toEqual({
      ok: true,
      rule: {
        kind: 'Recurring',
        days: { kind: 'interval', every: 2, start: '2024-01-01' },
        times: { kind: 'every', minutes: 30 },
        timeZone: 'UTC',
      },
    });
  });

  it("reads TimeOfDay without a time but with hourlyMinutes as hourly (SPEC.md's reading)", () => {
    const n = normalize({
      scheduleOption: 'Recurring',
      recurringOptions: {
        days: { daysOption: 'DaysInterval', daysInterval: 1 },
        times: { timeOption: 'TimeOfDay', timeOfDay: null, hourlyMinutes: 20 },
      },
    });
    expect(n).toMatchObject({
      ok: true,
      rule: { days: { kind: 'interval', every: 1, start: '1970-01-01' }, times: { kind: 'hourly', minute: 20 } },
    });
  });

  it('produces rules that the ScheduleRule schema takes back from JSON', () => {
    for (const body of [
      { scheduleOption: 'OnDemand' },
      { scheduleOption: 'RunOnce', runOnceOptions: { dateTime: '2026-3-8T2:30:15-05:00' } },
      {
        scheduleOption: 'Recurring',
        recurringOptions: {
          days: { daysOption: 'DaysOfMonth', daysOfMonth: [31], lastDayOfMonth: true },
          times: { timeOption: 'HourlyMinutes', hourlyMinutes: 0 },
          timeZone: 'Europe/Berlin',
        },
      },
    ]) {
      const n = normalize(body);
      expect(n.ok).toBe(true);
      if (n.ok) expect(ScheduleRule.parse(JSON.parse(JSON.stringify(n.rule)))).toEqual(n.rule);
    }
  });
});

describe('dates as clients write them', () => {
  it.each([
    ['2024-1-1', { year: 2024, month: 1, day: 1 }],
    ['2024-01-01', { year: 2024, month: 1, day: 1 }],
    [' 2028-2-29 ', { year: 2028, month: 2, day: 29 }],
    ['2027-2-29', undefined],
    ['2026-4-31', undefined],
    ['2026-13-1', undefined],
    ['1899-12-31', { year: 1899, month: 12, day: 31 }],
    ['1753-1-1', { year: 1753, month: 1, day: 1 }],
    ['0001-01-01', { year: 1, month: 1, day: 1 }],
    ['0004-2-29', { year: 4, month: 2, day: 29 }],
    ['0100-2-29', undefined],
    ['0000-01-01', undefined],
    ['undefined-undefined-undefined', undefined],
    ['1/1/2024', undefined],
  ])('parseCivilDate(%j)', (text, expected) => {
    expect(parseCivilDate(text)).toEqual(expected);
  });

  it.each([
    ['2099-1-31T10:00Z', '2099-01-31', 36_000, 0],
    ['2099-01-31T10:00:00Z', '2099-01-31', 36_000, 0],
    ['2099-01-31T10:00:00.000Z', '2099-01-31', 36_000, 0],
    ['2099-1-31T9:05z', '2099-01-31', 32_700, 0],
    ['2099-1-31t09:05:30', '2099-01-31', 32_730, null],
    ['2099-1-31 10:00', '2099-01-31', 36_000, null],
    ['2099-1-31T10:00+05:30', '2099-01-31', 36_000, 330],
    ['2099-1-31T10:00-0500', '2099-01-31', 36_000, -300],
    ['2099-1-31', '2099-01-31', 0, null],
    ['2099-1-31Z', '2099-01-31', 0, 0],
  ])('parseDateTime(%j)', (text, date, second, offsetMinutes) => {
    const parsed = parseDateTime(text);
    expect(
      parsed && {
        date: `${parsed.date.year}-${String(parsed.date.month).padStart(2, '0')}-${String(parsed.date.day).padStart(2, '0')}`,
        second: parsed.second,
        offsetMinutes: parsed.offsetMinutes,
      },
    ).toEqual({ date, second, offsetMinutes });
  });

  it.each([
    '2099-2-30T10:00Z',
    '2099-1-31T24:00Z',
    '2099-1-31T10:60Z',
    '2099-1-31T10Z',
    '2099-1-31T10:00+19:00',
    '2099-1-31T10:00+05:60',
    'undefined-undefined-undefinedTundefinedZ',
    '31.1.2099 10:00',
    '',
  ])('parseDateTime(%j) is not a date and time', (text) => {
    expect(parseDateTime(text)).toBeUndefined();
  });
});

describe('refusals', () => {
  it('the schema refuses unknown fields, unknown enum values, wrong types and values out of bounds', () => {
    const ok = {
      scheduleOption: 'Recurring',
      recurringOptions: {
        days: { daysOption: 'DaysOfMonth', daysOfMonth: [1] },
        times: { timeOption: 'TimeOfDay', timeOfDay: '01:00' },
      },
    };
    expect(Schedule.safeParse(ok).success).toBe(true);
    const bad: unknown[] = [
      {},
      { scheduleOption: 'Weekly' },
      { scheduleOption: 'OnDemand', nextRunTime: null },
      { scheduleOption: 'Recurring', recurringOptions: { days: { daysOption: 'DaysOfMonth', daysOfMonth: [32] } } },
      {
        scheduleOption: 'Recurring',
        recurringOptions: { days: { daysOption: 'DaysOfMonth', daysOfMonth: Array.from({ length: 101 }, () => 1) } },
      },
      { scheduleOption: 'Recurring', recurringOptions: { days: { daysOption: 'DaysOfWeek', daysOfWeek: ['Funday'] } } },
      { scheduleOption: 'Recurring', recurringOptions: { days: { daysInterval: 367 } } },
      { scheduleOption: 'Recurring', recurringOptions: { days: { daysInterval: 1.5 } } },
      { scheduleOption: 'Recurring', recurringOptions: { days: { daysInterval: '1e2' } } },
      { scheduleOption: 'Recurring', recurringOptions: { times: { hourlyMinutes: 60 } } },
      { scheduleOption: 'Recurring', recurringOptions: { times: { hourlyMinutes: -1 } } },
      { scheduleOption: 'Recurring', recurringOptions: { times: { timeIntervalUnit: 'days' } } },
      { scheduleOption: 'Recurring', recurringOptions: { times: { timeOfDay: 'x'.repeat(17) } } },
      { scheduleOption: 'Recurring', recurringOptions: { timeZone: 'x'.repeat(101) } },
      { scheduleOption: 'RunOnce', runOnceOptions: { dateTime: 'x'.repeat(41) } },
      { scheduleOption: 'RunOnce', runOnceOptions: { dateTime: '2099-1-31T10:00Z', time: '10:00' } },
      { scheduleOption: 'Recurring', recurringOptions: { days: { lastDayOfMonth: 'yes' } } },
    ];
    for (const body of bad) expect(Schedule.safeParse(body).success, JSON.stringify(body)).toBe(false);
  });

  const recurring = (days: object | null, times: object | null) => ({
    scheduleOption: 'Recurring',
    recurringOptions: { days, times, timeZone: 'UTC' },
  });
  const daily = { daysOption: 'DaysInterval', daysInterval: 1, daysIntervalStartDate: '2026-1-1' };
  const atOne = { timeOption: 'TimeOfDay', timeOfDay: '01:00' };

  it.each<[string, unknown, string[]]>([
    ['RunOnce without its options', { scheduleOption: 'RunOnce', runOnceOptions: null }, ['runOnceOptions']],
    [
      'RunOnce without a dateTime',
      { scheduleOption: 'RunOnce', runOnceOptions: { dateTime: '' } },
      ['runOnceOptions.dateTime'],
    ],
    [
      'RunOnce on a day that does not exist',
      { scheduleOption: 'RunOnce', runOnceOptions: { dateTime: '2099-2-30T10:00Z' } },
      ['runOnceOptions.dateTime'],
    ],
    ['Recurring without its options', { scheduleOption: 'Recurring', recurringOptions: null }, ['recurringOptions']],
    ['Recurring without days and times', recurring(null, null), ['recurringOptions.days', 'recurringOptions.times']],
    ['no daysOption', recurring({ daysOption: null, daysInterval: 1 }, atOne), ['recurringOptions.days.daysOption']],
    [
      'no timeOption',
      recurring(daily, { timeOption: null, timeOfDay: '01:00' }),
      ['recurringOptions.times.timeOption'],
    ],
    [
      'DaysInterval below 1',
      recurring({ daysOption: 'DaysInterval', daysInterval: 0, daysIntervalStartDate: '2026-1-1' }, atOne),
      ['recurringOptions.days.daysInterval'],
    ],
    [
      'DaysInterval without a number',
      recurring({ daysOption: 'DaysInterval', daysIntervalStartDate: '2026-1-1' }, atOne),
      ['recurringOptions.days.daysInterval'],
    ],
    [
      'every 7 days without a start date',
      recurring({ daysOption: 'DaysInterval', daysInterval: 7, daysIntervalStartDate: null }, atOne),
      ['recurringOptions.days.daysIntervalStartDate'],
    ],
    [
      'a start date that is no date',
      recurring(
        { daysOption: 'DaysInterval', daysInterval: 1, daysIntervalStartDate: 'undefined-undefined-undefined' },
        atOne,
      ),
      ['recurringOptions.days.daysIntervalStartDate'],
    ],
    [
      'DaysOfWeek empty',
      recurring({ daysOption: 'DaysOfWeek', daysOfWeek: [] }, atOne),
      ['recurringOptions.days.daysOfWeek'],
    ],
    [
      'DaysOfWeek null',
      recurring({ daysOption: 'DaysOfWeek', daysOfWeek: null }, atOne),
      ['recurringOptions.days.daysOfWeek'],
    ],
    [
      'DaysOfWeek with a null day',
      recurring({ daysOption: 'DaysOfWeek', daysOfWeek: ['Monday', null] }, atOne),
      ['recurringOptions.days.daysOfWeek.1'],
    ],
    [
      'DaysOfMonth empty without the last day',
      recurring({ daysOption: 'DaysOfMonth', daysOfMonth: [], lastDayOfMonth: false }, atOne),
      ['recurringOptions.days.daysOfMonth'],
    ],
    [
      'DaysOfMonth with day 0',
      recurring({ daysOption: 'DaysOfMonth', daysOfMonth: [1, 0] }, atOne),
      ['recurringOptions.days.daysOfMonth.1'],
    ],
    [
      'TimeOfDay not HH:MM',
      recurring(daily, { timeOption: 'TimeOfDay', timeOfDay: '7.30' }),
      ['recurringOptions.times.timeOfDay'],
    ],
    [
      'TimeOfDay 24:00',
      recurring(daily, { timeOption: 'TimeOfDay', timeOfDay: '24:00' }),
      ['recurringOptions.times.timeOfDay'],
    ],
    [
      'TimeOfDay with seconds',
      recurring(daily, { timeOption: 'TimeOfDay', timeOfDay: '01:00:00' }),
      ['recurringOptions.times.timeOfDay'],
    ],
    ['TimeOfDay missing', recurring(daily, { timeOption: 'TimeOfDay' }), ['recurringOptions.times.timeOfDay']],
    [
      'HourlyMinutes missing',
      recurring(daily, { timeOption: 'HourlyMinutes', hourlyMinutes: null }),
      ['recurringOptions.times.hourlyMinutes'],
    ],
    [
      'TimeInterval below 1',
      recurring(daily, { timeOption: 'TimeInterval', timeInterval: 0, timeIntervalUnit: 'minutes' }),
      ['recurringOptions.times.timeInterval'],
    ],
    [
      'TimeInterval over a day in hours',
      recurring(daily, { timeOption: 'TimeInterval', timeInterval: 25, timeIntervalUnit: 'hours' }),
      ['recurringOptions.times.timeInterval'],
    ],
    [
      'TimeInterval without a unit',
      recurring(daily, { timeOption: 'TimeInterval', timeInterval: 5, timeIntervalUnit: null }),
      ['recurringOptions.times.timeIntervalUnit'],
    ],
    [
      'a days and a times error together',
      recurring({ daysOption: 'DaysOfWeek', daysOfWeek: [] }, { timeOption: 'HourlyMinutes' }),
      ['recurringOptions.days.daysOfWeek', 'recurringOptions.times.hourlyMinutes'],
    ],
  ])('%s', (_name, body, paths) => {
    expect(pathsOf(body)).toEqual(paths);
  });

  it('prefixes the paths and says what to send', () => {
    const n = normalize(
      {
        scheduleOption: 'Recurring',
        recurringOptions: {
          days: { daysOption: 'DaysOfWeek', daysOfWeek: [] },
          times: { timeOption: 'HourlyMinutes', hourlyMinutes: null },
        },
      },
      'body',
    );
    expect(n).toEqual({
      ok: false,
      errors: [
        { path: 'body.recurringOptions.days.daysOfWeek', message: expect.stringContaining('at least one day') },
        { path: 'body.recurringOptions.times.hourlyMinutes', message: expect.stringContaining('0 to 59') },
      ],
    });
  });
});
