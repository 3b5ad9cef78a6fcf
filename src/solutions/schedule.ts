import { invalid, type FieldError } from '../errors/ferry-error.js';
import {
  DEFAULT_TIME_ZONE,
  MAX_YEAR,
  normalizeSchedule,
  type DaysRule,
  type Schedule,
  type ScheduleRule,
  type TimesRule,
} from '../protocol/schedule.js';
import { resolveTimeZone } from './time-zones.js';
import { DAY_MS, MINUTE_MS, dayOffsets, instantOf, wallAt, wallToInstant } from './zoned-time.js';

/**
 * When a Solution's schedule is due (docs/solutions.md "Schedules").
 *
 * ```
 *  Schedule model ──compileSchedule──▶ ScheduleRule ──nextDueTimes(rule, after, n)──▶ instants
 *  (client JSON)    checks options,    (compact, IANA     day by day in local time:
 *                   resolves the zone   zone, JSON-safe)   due day? → its wall times → instants
 * ```
 *
 * Due times are computed in the schedule's time zone: the days and the times of day are local
 * wall-clock ones. A wall time the clock skips (spring forward) is due at the instant the clock
 * jumps; one that happens twice (fall back) is due once, at its first occurrence. Intervals
 * within a day (HourlyMinutes, TimeInterval) are wall times too, counted from local midnight, so
 * each wall time is due once whatever the clock does.
 *
 * Work is bounded: the next due day is found by arithmetic (DaysInterval) or within 62 days
 * (a 31st), a day has at most 1440 due times, and a day costs two Intl calls (about twenty around
 * an offset change), however many times it has.
 */

/** Most due times one call computes. */
export const MAX_DUE_TIMES = 1000;

export type CompiledSchedule = { ok: true; rule: ScheduleRule } | { ok: false; errors: FieldError[] };

const TIME_ZONE_HINT =
  'is not a time zone: give a Windows name ("Eastern Standard Time") or an IANA one ("America/New_York")';

/**
 * Checks a parsed Schedule model (what its options need, the time zone) and builds the rule due
 * times are computed from, its time zone the IANA name. `at` prefixes the error paths (`body`).
 */
export function compileSchedule(schedule: Schedule, at = ''): CompiledSchedule {
  const normalized = normalizeSchedule(schedule, at);
  const errors: FieldError[] = normalized.ok ? [] : [...normalized.errors];
  let zone: string | undefined;
  if (schedule.scheduleOption !== 'OnDemand') {
    const name = schedule.recurringOptions?.timeZone;
    zone = resolveTimeZone(name?.trim() ? name : DEFAULT_TIME_ZONE);
    if (!zone)
      errors.push({
        path: at ? `${at}.recurringOptions.timeZone` : 'recurringOptions.timeZone',
        message: TIME_ZONE_HINT,
      });
  }
  if (!normalized.ok || errors.length > 0) return { ok: false, errors };
  const rule = normalized.rule;
  return { ok: true, rule: rule.kind === 'OnDemand' || !zone ? rule : { ...rule, timeZone: zone } };
}

/** {@link compileSchedule}, throwing API_VALIDATION with every field error when the model is not valid. */
export function requireSchedule(schedule: Schedule, at = ''): ScheduleRule {
  const compiled = compileSchedule(schedule, at);
  if (compiled.ok) return compiled.rule;
  const [first] = compiled.errors;
  const summary =
    compiled.errors.length === 1 && first
      ? `${first.path}: ${first.message}`
      : `${compiled.errors.length} fields are not valid.`;
  throw invalid(`The schedule is not valid: ${summary}`, compiled.errors);
}

/**
 * The next `count` (0 to {@link MAX_DUE_TIMES}) instants the rule is due, strictly after
 * `after`, ascending; fewer when the rule ends (RunOnce, OnDemand, the year 9999).
 */
export function nextDueTimes(rule: ScheduleRule, after: Date, count: number): Date[] {
  if (!Number.isInteger(count) || count < 0 || count > MAX_DUE_TIMES)
    throw new RangeError(`count must be an integer from 0 to ${MAX_DUE_TIMES}`);
  const from = after.getTime();
  if (Number.isNaN(from)) throw new RangeError('after is not a valid date');
  const out: Date[] = [];
  if (count === 0) return out;
  for (const instant of dueInstants(rule, from)) {
    out.push(new Date(instant));
    if (out.length === count) break;
  }
  return out;
}

/** The first instant the rule is due strictly after `after`; undefined when it never is again. */
export function nextDue(rule: ScheduleRule, after: Date): Date | undefined {
  return nextDueTimes(rule, after, 1)[0];
}

function zoneOf(name: string): string {
  const zone = resolveTimeZone(name);
  // compileSchedule refused it already; a rule that did not come from there is a bug.
  if (!zone) throw new RangeError(`Unknown time zone in a schedule rule: ${name}`);
  return zone;
}

const dayOf = (date: string): number => Date.parse(`${date}T00:00:00Z`) / DAY_MS;

function* dueInstants(rule: ScheduleRule, after: number): Generator<number> {
  switch (rule.kind) {
    case 'OnDemand':
      return;
    case 'RunOnce': {
      const wall = dayOf(rule.date) * DAY_MS + rule.second * 1000;
      const instant =
        rule.offsetMinutes === null
          ? wallToInstant(zoneOf(rule.timeZone), wall)
          : wall - rule.offsetMinutes * MINUTE_MS;
      if (instant > after) yield instant;
      return;
    }
    case 'Recurring':
      yield* recurringInstants(rule.days, minutesOfDay(rule.times), zoneOf(rule.timeZone), after);
  }
}

const LAST_DAY = Date.UTC(MAX_YEAR, 11, 31) / DAY_MS;

function* recurringInstants(days: DaysRule, minutes: number[], zone: string, after: number): Generator<number> {
  let last = after;
  // From the local day before `after`'s: cheap, and safe whatever a zone did around midnight.
  let day = Math.floor(wallAt(zone, after) / DAY_MS) - 1;
  for (;;) {
    const due = nextDueDay(days, day);
    if (due === undefined) return;
    const wallDay = due * DAY_MS;
    const offsets = dayOffsets(zone, wallDay);
    for (const minute of minutes) {
      const instant = instantOf(offsets, wallDay + minute * MINUTE_MS);
      // Skipped wall times all land on the instant the clock jumps: due once.
      if (instant > last) {
        yield instant;
        last = instant;
      }
    }
    day = due + 1;
  }
}

/** Local minutes after midnight a due day is due at, ascending. */
function minutesOfDay(times: TimesRule): number[] {
  switch (times.kind) {
    case 'at':
      return [times.minute];
    case 'hourly':
      return Array.from({ length: 24 }, (_, hour) => hour * 60 + times.minute);
    case 'every':
      return Array.from({ length: Math.ceil(1440 / times.minutes) }, (_, i) => i * times.minutes);
  }
}

/** Every days rule but an interval has a due day within 62 days (a 31st); a rule without one ends. */
const SEARCH_DAYS = 400;

/** The first due day (days since 1970-01-01) on or after `from`, up to the year 9999. */
function nextDueDay(days: DaysRule, from: number): number | undefined {
  if (days.kind === 'interval') {
    const start = dayOf(days.start);
    const due = from <= start ? start : start + Math.ceil((from - start) / days.every) * days.every;
    return due <= LAST_DAY ? due : undefined;
  }
  const end = Math.min(LAST_DAY, from + SEARCH_DAYS);
  for (let day = from; day <= end; day++) {
    if (isDueDay(days, day)) return day;
  }
  return undefined;
}

function isDueDay(days: Exclude<DaysRule, { kind: 'interval' }>, day: number): boolean {
  if (days.kind === 'weekdays') return days.weekdays.includes((((day + 4) % 7) + 7) % 7); // 1970-01-01 was a Thursday
  const dayOfMonth = new Date(day * DAY_MS).getUTCDate();
  return days.days.includes(dayOfMonth) || (days.lastDay && new Date((day + 1) * DAY_MS).getUTCDate() === 1);
}
