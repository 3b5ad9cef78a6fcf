import { z } from 'zod';

/**
 * The schedule of a Solution, as clients of the original service send it to
 * `PUT …/solutions/{id}/schedule` and read it from `GET …/schedule` (DESIGN.md "Schedule"):
 *
 * ```json
 * { "scheduleOption": "Recurring", "solutionId": "…", "runOnceOptions": null,
 *   "recurringOptions": {
 *     "days": { "daysOption": "DaysOfWeek", "daysOfWeek": ["Monday", "Friday"], "daysOfMonth": [],
 *               "daysInterval": 0, "daysIntervalStartDate": null, "lastDayOfMonth": false },
 *     "times": { "timeOption": "TimeOfDay", "timeOfDay": "6:30", "hourlyMinutes": null,
 *                "timeInterval": null, "timeIntervalUnit": null },
 *     "timeZone": "W. Europe Standard Time" } }
 * ```
 *
 * {@link Schedule} checks types and bounds only; the parts an option does not use may hold
 * anything a client leaves there (nulls, zeros, `"undefined-undefined-undefined"`), so what an
 * option needs is checked by {@link normalizeSchedule}, which also turns the model into the
 * compact {@link ScheduleRule} that computing due times works on (src/solutions/schedule.ts).
 * Enum values are accepted in any case and come out in the spelling of the constants here.
 */

export const SCHEDULE_OPTIONS = ['OnDemand', 'RunOnce', 'Recurring'] as const;
export type ScheduleOption = (typeof SCHEDULE_OPTIONS)[number];
export const DAYS_OPTIONS = ['DaysInterval', 'DaysOfWeek', 'DaysOfMonth'] as const;
export const TIME_OPTIONS = ['HourlyMinutes', 'TimeOfDay', 'TimeInterval'] as const;
export const TIME_INTERVAL_UNITS = ['minutes', 'hours'] as const;
/** Day names; the index is the day of the week as `Date#getUTCDay` counts it (0 = Sunday). */
export const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** Most days between two runs of a DaysInterval schedule. */
export const MAX_DAYS_INTERVAL = 366;
/** Longest TimeInterval: a day, in either unit. */
export const MAX_TIME_INTERVAL = { minutes: 1440, hours: 24 } as const;
/**
 * The years a date may name: back to the .NET minimum (0001-01-01), since public clients send it
 * and SQL Server's 1753-01-01 for "no lower bound".
 */
export const MIN_YEAR = 1;
export const MAX_YEAR = 9999;
/** The time zone a schedule without one runs in. */
export const DEFAULT_TIME_ZONE = 'UTC';

/** One of `values`, in any case (surrounding blanks ignored), answered in the spelling of `values`. */
const anyCase = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.preprocess(
    (v) => (typeof v === 'string' ? (values.find((x) => x.toLowerCase() === v.trim().toLowerCase()) ?? v) : v),
    z.enum(values),
  );

/**
 * An integer from 0 to `max`, or null. Clients built on the original's JSON reader send numbers
 * as text too (`"hourlyMinutes": "15"`, `""` for none); decimal digits are read as their number
 * and an empty text as null.
 */
const looseInt = (max: number) =>
  z
    .preprocess((v) => {
      if (typeof v !== 'string') return v;
      const t = v.trim();
      if (t === '') return null;
      return /^[0-9]{1,9}$/.test(t) ? Number(t) : v;
    }, z.number().int().min(0).max(max).nullable())
    .optional();

const Text = (max: number) => z.string().max(max).nullable().optional();

export const ScheduleDays = z.strictObject({
  daysOption: anyCase(DAYS_OPTIONS).nullable().optional(),
  daysIntervalStartDate: Text(40).describe('DaysInterval: the first due day, year-month-day (2024-1-1)'),
  daysInterval: looseInt(MAX_DAYS_INTERVAL).describe(`DaysInterval: days between due days, 1 to ${MAX_DAYS_INTERVAL}`),
  daysOfMonth: z
    .array(looseInt(31))
    .max(100)
    .nullable()
    .optional()
    .describe('DaysOfMonth: days 1 to 31; a day a month does not have is skipped that month'),
  daysOfWeek: z
    .array(anyCase(WEEKDAYS).nullable())
    .max(50)
    .nullable()
    .optional()
    .describe('DaysOfWeek: Monday, … (any case)'),
  lastDayOfMonth: z.boolean().nullable().optional().describe('DaysOfMonth: also the last day of each month'),
});

export const ScheduleTimes = z.strictObject({
  timeOption: anyCase(TIME_OPTIONS).nullable().optional(),
  hourlyMinutes: looseInt(59).describe('HourlyMinutes: the minute past each hour, 0 to 59'),
  timeOfDay: Text(16).describe('TimeOfDay: hours:minutes, 0:00 to 23:59'),
  timeInterval: looseInt(MAX_TIME_INTERVAL.minutes).describe(
    'TimeInterval: the interval from midnight, in timeIntervalUnit',
  ),
  timeIntervalUnit: anyCase(TIME_INTERVAL_UNITS).nullable().optional(),
});

export const ScheduleRecurringOptions = z.strictObject({
  days: ScheduleDays.nullable().optional(),
  times: ScheduleTimes.nullable().optional(),
  timeZone: Text(100).describe(
    'a Windows time zone name ("Eastern Standard Time") or an IANA one ("America/New_York"); UTC when null',
  ),
});

/** The Schedule model clients send (DESIGN.md "Schedule", SPEC.md "Schedule"). */
export const Schedule = z.strictObject({
  scheduleOption: anyCase(SCHEDULE_OPTIONS),
  solutionId: Text(100).describe('accepted and ignored: the path names the Solution'),
  runOnceOptions: z
    .strictObject({
      dateTime: Text(40).describe(
        'RunOnce: year-month-dayThours:minutes, with Z or an offset, else in recurringOptions.timeZone (UTC when none)',
      ),
    })
    .nullable()
    .optional(),
  recurringOptions: ScheduleRecurringOptions.nullable().optional(),
  checkForBulk: z.boolean().nullable().optional().describe('accepted with the model (SPEC.md "model; checkForBulk")'),
});
export type Schedule = z.output<typeof Schedule>;

/** A calendar date, `YYYY-MM-DD`. */
const CivilDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);
const Zone = z.string().min(1).max(100);

/** The due days of a Recurring schedule. */
export const DaysRule = z.discriminatedUnion('kind', [
  /** Every `every` days counted from `start`. */
  z.strictObject({
    kind: z.literal('interval'),
    every: z.number().int().min(1).max(MAX_DAYS_INTERVAL),
    start: CivilDate,
  }),
  /** Days of the week, 0 = Sunday, ascending. */
  z.strictObject({ kind: z.literal('weekdays'), weekdays: z.array(z.number().int().min(0).max(6)).min(1).max(7) }),
  /** Days of the month, ascending, and whether the last day of each month is due too. */
  z.strictObject({
    kind: z.literal('monthdays'),
    days: z.array(z.number().int().min(1).max(31)).max(31),
    lastDay: z.boolean(),
  }),
]);
export type DaysRule = z.infer<typeof DaysRule>;

/** The due times of each due day, in local wall-clock time. */
export const TimesRule = z.discriminatedUnion('kind', [
  /** Once, `minute` minutes after midnight. */
  z.strictObject({ kind: z.literal('at'), minute: z.number().int().min(0).max(1439) }),
  /** Every hour at `minute` past it. */
  z.strictObject({ kind: z.literal('hourly'), minute: z.number().int().min(0).max(59) }),
  /** Midnight and every `minutes` minutes after it, within the day. */
  z.strictObject({ kind: z.literal('every'), minutes: z.number().int().min(1).max(MAX_TIME_INTERVAL.minutes) }),
]);
export type TimesRule = z.infer<typeof TimesRule>;

/**
 * The compact form of a schedule that due times are computed from. JSON-safe, so it can travel to
 * the Agent as it is. `timeZone` is the name as the client gave it until
 * src/solutions/schedule.ts `compileSchedule` replaces it with the IANA name it resolves to.
 */
export const ScheduleRule = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('OnDemand') }),
  z.strictObject({
    kind: z.literal('RunOnce'),
    date: CivilDate,
    /** Seconds after local midnight. */
    second: z.number().int().min(0).max(86_399),
    /** The offset the dateTime named (minutes east of UTC); null: local time in `timeZone`. */
    offsetMinutes: z
      .number()
      .int()
      .min(-18 * 60)
      .max(18 * 60)
      .nullable(),
    timeZone: Zone,
  }),
  z.strictObject({ kind: z.literal('Recurring'), days: DaysRule, times: TimesRule, timeZone: Zone }),
]);
export type ScheduleRule = z.infer<typeof ScheduleRule>;

/** One problem with one field; the same shape as FieldError of src/errors (the REST API's `errors`). */
export interface ScheduleFieldError {
  path: string;
  message: string;
}

export type NormalizedSchedule = { ok: true; rule: ScheduleRule } | { ok: false; errors: ScheduleFieldError[] };

/** A calendar date; months 1–12. */
export interface CivilDateParts {
  year: number;
  month: number;
  day: number;
}

const DATE = /^(\d{4})-(\d{1,2})-(\d{1,2})$/;
const TIME = /^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?$/;
const OFFSET = /^([+-])(\d{2}):?(\d{2})$/;

/**
 * Milliseconds since the epoch of a UTC calendar day. Unlike `Date.UTC`, which reads years 0–99 as
 * 1900–1999, every year is itself.
 */
export function utcDayMs(year: number, month: number, day: number): number {
  const at = new Date(0);
  at.setUTCFullYear(year, month - 1, day);
  return at.getTime();
}

function daysInMonth(year: number, month: number): number {
  return new Date(utcDayMs(year, month + 1, 0)).getUTCDate();
}

/** `2024-1-1` or `2024-01-01`, a real calendar day between MIN_YEAR and MAX_YEAR; else undefined. */
export function parseCivilDate(text: string): CivilDateParts | undefined {
  const m = DATE.exec(text.trim());
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (year < MIN_YEAR || year > MAX_YEAR || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month))
    return undefined;
  return { year, month, day };
}

export function formatCivilDate({ year, month, day }: CivilDateParts): string {
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

/** `H:MM`, `HH:MM` or `HH:MM:SS` (a fraction of a second is dropped), as seconds after midnight. */
function parseTime(text: string): number | undefined {
  const m = TIME.exec(text);
  if (!m) return undefined;
  const [h, min, s] = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
  if (h > 23 || min > 59 || s > 59) return undefined;
  return h * 3600 + min * 60 + s;
}

/**
 * A RunOnce `dateTime`: a date, optionally `T` (or a blank) and a time, optionally `Z` or an
 * offset (`+02:00`, `+0200`). Unpadded parts are fine (`2099-1-31T9:00Z`); a date alone is
 * midnight.
 */
export function parseDateTime(
  text: string,
): { date: CivilDateParts; second: number; offsetMinutes: number | null } | undefined {
  let rest = text.trim();
  let offsetMinutes: number | null = null;
  if (/z$/i.test(rest)) {
    offsetMinutes = 0;
    rest = rest.slice(0, -1);
  } else {
    const m = /[+-]\d{2}:?\d{2}$/.exec(rest);
    // A date alone ends in "-dd": an offset needs a time before it.
    if (m && /[Tt ]/.test(rest.slice(0, m.index))) {
      const o = OFFSET.exec(m[0]);
      if (!o) return undefined;
      const minutes = Number(o[2]) * 60 + Number(o[3]);
      if (Number(o[2]) > 18 || Number(o[3]) > 59 || minutes > 18 * 60) return undefined;
      offsetMinutes = o[1] === '-' ? -minutes : minutes;
      rest = rest.slice(0, m.index);
    }
  }
  const [datePart = '', timePart, ...more] = rest.trim().split(/[Tt ]/);
  if (more.length > 0) return undefined;
  const date = parseCivilDate(datePart);
  if (!date) return undefined;
  if (timePart === undefined) return { date, second: 0, offsetMinutes };
  const second = parseTime(timePart);
  return second === undefined ? undefined : { date, second, offsetMinutes };
}

/** `H:MM` or `HH:MM` as minutes after midnight. */
function parseTimeOfDay(text: string): number | undefined {
  const m = /^(\d{1,2}):(\d{2})$/.exec(text.trim());
  if (!m) return undefined;
  const [h, min] = [Number(m[1]), Number(m[2])];
  return h > 23 || min > 59 ? undefined : h * 60 + min;
}

const given = (v: string | null | undefined): v is string => typeof v === 'string' && v.trim() !== '';

/**
 * Checks what the chosen options need and builds the {@link ScheduleRule}. `at` prefixes every
 * error path (the HTTP layer passes `body`). Parts the chosen options do not use are ignored.
 */
export function normalizeSchedule(schedule: Schedule, at = ''): NormalizedSchedule {
  const errors: ScheduleFieldError[] = [];
  const fail = (path: string, message: string): undefined => {
    errors.push({ path: at ? `${at}.${path}` : path, message });
    return undefined;
  };
  const zone = schedule.recurringOptions?.timeZone;
  const timeZone = given(zone) ? zone.trim() : DEFAULT_TIME_ZONE;
  let rule: ScheduleRule | undefined;
  switch (schedule.scheduleOption) {
    case 'OnDemand':
      rule = { kind: 'OnDemand' };
      break;
    case 'RunOnce': {
      const text = schedule.runOnceOptions?.dateTime;
      if (!schedule.runOnceOptions) fail('runOnceOptions', 'is required when scheduleOption is RunOnce');
      else if (!given(text)) fail('runOnceOptions.dateTime', 'is required when scheduleOption is RunOnce');
      else {
        const dt = parseDateTime(text);
        if (!dt)
          fail(
            'runOnceOptions.dateTime',
            'must be a date and time such as 2099-1-31T10:00Z (Z or an offset, or none for the time zone of recurringOptions, else UTC)',
          );
        else
          rule = {
            kind: 'RunOnce',
            date: formatCivilDate(dt.date),
            second: dt.second,
            offsetMinutes: dt.offsetMinutes,
            timeZone,
          };
      }
      break;
    }
    case 'Recurring': {
      const options = schedule.recurringOptions;
      if (!options) {
        fail('recurringOptions', 'is required when scheduleOption is Recurring');
        break;
      }
      const days = options.days
        ? daysRule(options.days, fail)
        : fail('recurringOptions.days', 'is required when scheduleOption is Recurring');
      const times = options.times
        ? timesRule(options.times, fail)
        : fail('recurringOptions.times', 'is required when scheduleOption is Recurring');
      if (days && times) rule = { kind: 'Recurring', days, times, timeZone };
      break;
    }
  }
  return rule && errors.length === 0 ? { ok: true, rule } : { ok: false, errors };
}

type Fail = (path: string, message: string) => undefined;

function daysRule(days: z.output<typeof ScheduleDays>, fail: Fail): DaysRule | undefined {
  const at = 'recurringOptions.days';
  switch (days.daysOption) {
    case 'DaysInterval': {
      const every = days.daysInterval;
      if (every === null || every === undefined || every < 1)
        return fail(
          `${at}.daysInterval`,
          `must be a number of days from 1 to ${MAX_DAYS_INTERVAL} when daysOption is DaysInterval`,
        );
      let start = '1970-01-01';
      if (given(days.daysIntervalStartDate)) {
        const date = parseCivilDate(days.daysIntervalStartDate.replace(/[Tt ].*$/, ''));
        if (!date) return fail(`${at}.daysIntervalStartDate`, 'must be a date such as 2024-1-1 (year-month-day)');
        start = formatCivilDate(date);
      } else if (every > 1) {
        // Every day needs no anchor; every N days does.
        return fail(`${at}.daysIntervalStartDate`, 'is required when daysInterval is more than 1');
      }
      return { kind: 'interval', every, start };
    }
    case 'DaysOfWeek': {
      const list = days.daysOfWeek ?? [];
      const bad = list.findIndex((d) => d === null);
      if (bad >= 0) return fail(`${at}.daysOfWeek.${bad}`, 'must be a day of the week (Monday, …)');
      const weekdays = [...new Set(list.map((d) => WEEKDAYS.indexOf(d as Weekday)))].sort((a, b) => a - b);
      if (weekdays.length === 0)
        return fail(`${at}.daysOfWeek`, 'must name at least one day when daysOption is DaysOfWeek');
      return { kind: 'weekdays', weekdays };
    }
    case 'DaysOfMonth': {
      const list = days.daysOfMonth ?? [];
      const bad = list.findIndex((d) => d === null || d === undefined || d < 1);
      if (bad >= 0) return fail(`${at}.daysOfMonth.${bad}`, 'must be a day of the month from 1 to 31');
      const lastDay = days.lastDayOfMonth === true;
      const monthDays = [...new Set(list as number[])].sort((a, b) => a - b);
      if (monthDays.length === 0 && !lastDay)
        return fail(
          `${at}.daysOfMonth`,
          'must name at least one day (or lastDayOfMonth be true) when daysOption is DaysOfMonth',
        );
      return { kind: 'monthdays', days: monthDays, lastDay };
    }
    default:
      return fail(`${at}.daysOption`, `is required: ${DAYS_OPTIONS.join(', ')}`);
  }
}

function timesRule(times: z.output<typeof ScheduleTimes>, fail: Fail): TimesRule | undefined {
  const at = 'recurringOptions.times';
  const hourly = (): TimesRule | undefined => {
    const minute = times.hourlyMinutes;
    if (minute === null || minute === undefined)
      return fail(
        `${at}.hourlyMinutes`,
        'must be the minute past each hour, 0 to 59, when timeOption is HourlyMinutes',
      );
    return { kind: 'hourly', minute };
  };
  switch (times.timeOption) {
    case 'HourlyMinutes':
      return hourly();
    case 'TimeOfDay': {
      // SPEC.md reads hourlyMinutes with TimeOfDay: without a time of day, it runs hourly.
      if (!given(times.timeOfDay) && times.hourlyMinutes !== null && times.hourlyMinutes !== undefined) return hourly();
      const minute = given(times.timeOfDay) ? parseTimeOfDay(times.timeOfDay) : undefined;
      if (minute === undefined)
        return fail(`${at}.timeOfDay`, 'must be a time of day HH:MM, 00:00 to 23:59, when timeOption is TimeOfDay');
      return { kind: 'at', minute };
    }
    case 'TimeInterval': {
      const unit = times.timeIntervalUnit;
      if (!unit)
        return fail(
          `${at}.timeIntervalUnit`,
          `is required when timeOption is TimeInterval: ${TIME_INTERVAL_UNITS.join(' or ')}`,
        );
      const n = times.timeInterval;
      const max = MAX_TIME_INTERVAL[unit];
      if (n === null || n === undefined || n < 1 || n > max)
        return fail(`${at}.timeInterval`, `must be from 1 to ${max} ${unit} when timeOption is TimeInterval`);
      return { kind: 'every', minutes: unit === 'hours' ? n * 60 : n };
    }
    default:
      return fail(`${at}.timeOption`, `is required: ${TIME_OPTIONS.join(', ')}`);
  }
}
