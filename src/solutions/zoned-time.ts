/**
 * Local wall-clock time in an IANA time zone, with Intl alone. A wall time is handled as the
 * milliseconds `Date.UTC` gives for its fields (a "wall" number), so day and minute arithmetic on
 * it is plain addition; only turning it into an instant needs the zone.
 *
 * Assumes a zone's offset changes at most once within any three days, which holds for every zone
 * of the tz database in the years schedules are for.
 */

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone: building one costs far more than using it. Zones are IANA names Intl accepted. */
function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall time of an instant in `zone` (to the second). */
export function wallAt(zone: string, instant: number): number {
  const fields: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(instant)) {
    if (part.type !== 'literal') fields[part.type] = Number(part.value);
  }
  const { year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0 } = fields;
  return Date.UTC(year, month - 1, day, hour, minute, second);
}

/** The zone's offset from UTC at an instant, in milliseconds (wall = instant + offset). */
export function offsetAt(zone: string, instant: number): number {
  const whole = Math.floor(instant / 1000) * 1000;
  return wallAt(zone, whole) - whole;
}

/**
 * The zone's offsets over the instants a local day can take (from a day before its midnight to
 * a day after its end): one offset, or the one before and the one after a change, with the
 * instant of the change (found by halving, to the second).
 */
export type DayOffsets = { before: number; after: number; change: number };

export function dayOffsets(zone: string, wallDay: number): DayOffsets {
  let lo = wallDay - DAY_MS;
  let hi = wallDay + 2 * DAY_MS;
  const before = offsetAt(zone, lo);
  const after = offsetAt(zone, hi);
  if (before === after) return { before, after, change: Infinity };
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (offsetAt(zone, mid) === before) lo = mid;
    else hi = mid;
  }
  return { before, after, change: hi };
}

/**
 * The instant a wall time of the day `offsets` describes happens. A wall time that happens twice
 * (the clock falls back) gives the first; one that does not happen (the clock springs forward
 * over it) gives the instant the clock jumps, the first valid instant after it.
 */
export function instantOf(offsets: DayOffsets, wall: number): number {
  const { before, after, change } = offsets;
  if (before === after) return wall - before;
  // Under the old offset the wall time is valid before the change, under the new one from it on.
  const early = wall - before;
  const late = wall - after;
  const valid = [early < change ? early : Infinity, late >= change ? late : Infinity];
  const first = Math.min(...valid);
  return first === Infinity ? change : first;
}

/** {@link instantOf} for a wall time alone. */
export function wallToInstant(zone: string, wall: number): number {
  return instantOf(dayOffsets(zone, Math.floor(wall / DAY_MS) * DAY_MS), wall);
}
