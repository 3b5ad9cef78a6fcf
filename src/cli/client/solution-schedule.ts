/**
 * `ferry solutions schedule --org N ID|NAME [flags]`: shows a Solution's schedule, or sets it from
 * a few flags (the Service checks the model and answers 400 naming the field) or from a whole
 * model with --data. The schedule model: docs/solutions.md "Schedules".
 */
import { z } from 'zod';
import { WEEKDAYS } from '../../protocol/schedule.js';
import { readData } from './api.js';
import { orgOf } from './args.js';
import { resolveCredentials } from './config.js';
import { UsageError } from './errors.js';
import { ApiClient } from './http.js';
import { printFields, printJson, wantsJson } from './output.js';
import {
  findSolution,
  intOption,
  solutionsBase,
  solutionsCommand,
  when,
  type SolutionsValues,
} from './solutions-common.js';

const ScheduleModel = z
  .object({
    scheduleOption: z.string(),
    runOnceOptions: z.object({ dateTime: z.string().nullable().optional() }).passthrough().nullable().optional(),
    recurringOptions: z
      .object({
        days: z
          .object({
            daysOption: z.string().nullable().optional(),
            daysInterval: z.number().nullable().optional(),
            daysIntervalStartDate: z.string().nullable().optional(),
            daysOfWeek: z.array(z.string().nullable()).nullable().optional(),
            daysOfMonth: z.array(z.number()).nullable().optional(),
            lastDayOfMonth: z.boolean().nullable().optional(),
          })
          .passthrough()
          .nullable()
          .optional(),
        times: z
          .object({
            timeOption: z.string().nullable().optional(),
            hourlyMinutes: z.number().nullable().optional(),
            timeOfDay: z.string().nullable().optional(),
            timeInterval: z.number().nullable().optional(),
            timeIntervalUnit: z.string().nullable().optional(),
          })
          .passthrough()
          .nullable()
          .optional(),
        timeZone: z.string().nullable().optional(),
      })
      .passthrough()
      .nullable()
      .optional(),
  })
  .passthrough();
type ScheduleModel = z.infer<typeof ScheduleModel>;

const list = (text: string): string[] =>
  text
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** `mon` or `Monday` (any case) → `Monday`. */
function weekday(text: string): string {
  const found = WEEKDAYS.filter((d) => text.length >= 2 && d.toLowerCase().startsWith(text.toLowerCase()));
  if (found.length !== 1 || !found[0]) throw new UsageError(`--weekdays ${text}: give days such as mon,tue or Monday`);
  return found[0];
}

/** The days part of a Recurring schedule from the flags: every day unless told otherwise. */
function daysOf(v: SolutionsValues): Record<string, unknown> {
  const given = [v['every-days'], v.weekdays, v['month-days']].filter((x) => x !== undefined).length;
  if (given > 1) throw new UsageError('give one of --every-days, --weekdays and --month-days');
  if (v.weekdays !== undefined) return { daysOption: 'DaysOfWeek', daysOfWeek: list(v.weekdays).map(weekday) };
  if (v['month-days'] !== undefined) {
    const days = list(v['month-days']);
    const numbers = days.filter((d) => d.toLowerCase() !== 'last').map((d) => intOption('month-days', d, 1) as number);
    return { daysOption: 'DaysOfMonth', daysOfMonth: numbers, lastDayOfMonth: days.length > numbers.length };
  }
  const every = intOption('every-days', v['every-days'], 1) ?? 1;
  return {
    daysOption: 'DaysInterval',
    daysInterval: every,
    daysIntervalStartDate: v.from ?? (every > 1 ? new Date().toISOString().slice(0, 10) : null),
  };
}

/** The times part: --at HH:MM, --hourly-at MM or --every 30m|2h. */
function timesOf(v: SolutionsValues): Record<string, unknown> {
  const given = [v.at, v['hourly-at'], v.every].filter((x) => x !== undefined).length;
  if (given !== 1) throw new UsageError('give one of --at HH:MM, --hourly-at MM and --every 30m|2h');
  if (v.at !== undefined) return { timeOption: 'TimeOfDay', timeOfDay: v.at };
  if (v['hourly-at'] !== undefined)
    return { timeOption: 'HourlyMinutes', hourlyMinutes: intOption('hourly-at', v['hourly-at'], 0) };
  const m = /^(\d+)\s*(m|min|minutes?|h|hours?)$/i.exec(v.every ?? '');
  if (!m) throw new UsageError(`--every ${v.every}: give minutes or hours, such as 30m or 2h`);
  return {
    timeOption: 'TimeInterval',
    timeInterval: Number(m[1]),
    timeIntervalUnit: /^h/i.test(m[2] ?? '') ? 'hours' : 'minutes',
  };
}

/** The model the flags say, or undefined when none sets anything (then the schedule is shown). */
async function scheduleFrom(v: SolutionsValues): Promise<unknown> {
  const recurring = [v['every-days'], v.weekdays, v['month-days'], v.at, v['hourly-at'], v.every].some(
    (x) => x !== undefined,
  );
  const kinds = [v.data !== undefined, v['on-demand'] === true, v.once !== undefined, recurring].filter(Boolean).length;
  if (kinds > 1) throw new UsageError('give one of --data, --on-demand, --once and a recurring schedule');
  if (v.data !== undefined) return JSON.parse(await readData(v.data)) as unknown;
  const zone = v['time-zone'] ?? null;
  if (v['on-demand']) return { scheduleOption: 'OnDemand', runOnceOptions: null, recurringOptions: null };
  if (v.once !== undefined)
    return {
      scheduleOption: 'RunOnce',
      runOnceOptions: { dateTime: v.once },
      recurringOptions: zone ? { timeZone: zone } : null,
    };
  if (!recurring) {
    if (v['time-zone'] !== undefined || v.from !== undefined)
      throw new UsageError('--time-zone and --from go with a schedule: give --at, --hourly-at or --every');
    return undefined;
  }
  return {
    scheduleOption: 'Recurring',
    runOnceOptions: null,
    recurringOptions: { days: daysOf(v), times: timesOf(v), timeZone: zone },
  };
}

/** The schedule in words: `every day at 02:00 (Eastern Standard Time)`. */
export function describeSchedule(s: ScheduleModel): string {
  const option = s.scheduleOption.toLowerCase();
  const zone = s.recurringOptions?.timeZone || 'UTC';
  if (option === 'ondemand') return 'on demand';
  if (option === 'runonce') return `once, at ${s.runOnceOptions?.dateTime ?? '?'} (${zone})`;
  const d = s.recurringOptions?.days;
  const t = s.recurringOptions?.times;
  const daysOption = (d?.daysOption ?? '').toLowerCase();
  const days =
    daysOption === 'daysofweek'
      ? `on ${(d?.daysOfWeek ?? []).join(', ')}`
      : daysOption === 'daysofmonth'
        ? `on days ${[...(d?.daysOfMonth ?? []), ...(d?.lastDayOfMonth ? ['last'] : [])].join(', ')} of each month`
        : (d?.daysInterval ?? 1) === 1
          ? 'every day'
          : `every ${d?.daysInterval ?? '?'} days from ${d?.daysIntervalStartDate ?? '?'}`;
  const timeOption = (t?.timeOption ?? '').toLowerCase();
  const times =
    timeOption === 'hourlyminutes'
      ? `every hour at :${String(t?.hourlyMinutes ?? 0).padStart(2, '0')}`
      : timeOption === 'timeinterval'
        ? `every ${t?.timeInterval ?? '?'} ${t?.timeIntervalUnit ?? 'minutes'} from midnight`
        : `at ${t?.timeOfDay ?? '?'}`;
  return `${days}, ${times} (${zone})`;
}

/** `ferry solutions schedule ID|NAME [flags]`. */
export const solutionsSchedule = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const wanted = await scheduleFrom(values);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, positionals[0]);
  const path = `${solutionsBase(org)}/${s.id}/schedule`;
  const schedule =
    wanted === undefined
      ? await client.call('GET', path, ScheduleModel)
      : await client.call('PUT', path, ScheduleModel, { body: wanted });
  if (wantsJson(values.json)) return printJson(schedule);
  const next = wanted === undefined ? s.nextRunTime : (await findSolution(client, org, s.id)).nextRunTime;
  printFields([
    ['Solution', s.name],
    ['Schedule', describeSchedule(schedule)],
    ['Next run', when(next) || 'none'],
  ]);
});
