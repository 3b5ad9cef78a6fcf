import type { ScheduleRule } from '../protocol/schedule.js';
import { MAX_DUE_TIMES, nextDueTimes } from './schedule.js';

/**
 * The due times of a rule between the last one an Agent handled and now, with bounded work
 * (docs/solutions.md "How the Agent fires schedules"). Normally there is one (the timer fired
 * on time); after the Agent was down or the machine slept there may be thousands: a Solution
 * due every minute and offline for a month has 43,200. The scheduler reports only the latest
 * ones one by one, so only those are listed here, and the earlier ones are counted, exactly as
 * long as counting stays within `scanLimit` due times.
 *
 * ```
 *  after ─────────────────────────────────────────────────────────────── now
 *   ├─ forward scan: up to scanLimit due times ─▶ reached now? exact ─┐
 *   │                                         no: windows back from now│
 *   │                    ◀── 1h, 4h, 1d, 4d, … until `keep` are found ─┤
 *   └── earlier: counted (exact), or a lower bound ──── latest `keep` ─┘
 * ```
 */

/** What {@link dueSince} found. Instants are epoch milliseconds. */
export interface DueSince {
  /** The latest due times in (after, now], ascending; at most `keep`. */
  latest: number[];
  /** How many due times in (after, now] come before `latest`. */
  earlier: number;
  /** False when `earlier` is a lower bound: counting them all would have cost more than `scanLimit`. */
  exact: boolean;
}

const HOUR_MS = 3_600_000;
/**
 * Windows back from now, each four times the last: a window is looked at only when the one
 * before held fewer than `keep` due times, so a window holds about `4 × keep` at most and the
 * search never scans much more than that, whatever the rule and however long the gap.
 */
const WINDOWS_MS = [1, 4, 16, 64, 256, 1024, 4096, 16_384, 65_536, 262_144].map((h) => h * HOUR_MS);

/**
 * The due times of `rule` in (`after`, `now`]: the latest `keep` of them and a count of the
 * others. At most about `scanLimit + 5 × keep` due times are computed.
 */
export function dueSince(rule: ScheduleRule, after: number, now: number, keep: number, scanLimit: number): DueSince {
  // The common case first: one due time, the timer fired on time. Ask for two to know.
  const scan = collect(rule, after, now, keep, Math.max(2, scanLimit), 2);
  if (scan.complete) return { latest: scan.tail, earlier: scan.total - scan.tail.length, exact: true };
  let found = scan;
  for (const window of WINDOWS_MS) {
    const start = Math.max(after, now - window);
    found = collect(rule, start, now, keep, Number.POSITIVE_INFINITY, MAX_DUE_TIMES);
    // The window reaches back to `after`: it saw every due time, so the count is exact.
    if (start === after) return { latest: found.tail, earlier: found.total - found.tail.length, exact: true };
    if (found.tail.length >= keep) break;
  }
  // Both looks counted due times of (after, now]; the larger count is the nearer lower bound.
  return { latest: found.tail, earlier: Math.max(scan.total, found.total) - found.tail.length, exact: false };
}

interface Collected {
  /** The last `keep` due times seen, ascending. */
  tail: number[];
  /** Due times seen in (start, now]. */
  total: number;
  /** True when every due time in (start, now] was seen. */
  complete: boolean;
}

/** Pages through the due times of (start, now], keeping the last `keep`, up to `limit` of them. */
function collect(
  rule: ScheduleRule,
  start: number,
  now: number,
  keep: number,
  limit: number,
  firstPage: number,
): Collected {
  const tail: number[] = [];
  let total = 0;
  let from = start;
  let page = firstPage;
  while (total < limit) {
    const want = Math.min(page, limit - total, MAX_DUE_TIMES);
    const due = nextDueTimes(rule, new Date(from), want);
    for (const instant of due) {
      const t = instant.getTime();
      if (t > now) return { tail: trim(tail, keep), total, complete: true };
      tail.push(t);
      total++;
      from = t;
    }
    trim(tail, keep);
    // Fewer than asked for: the rule ends (RunOnce, the year 9999).
    if (due.length < want) return { tail, total, complete: true };
    page = MAX_DUE_TIMES;
  }
  return { tail, total, complete: false };
}

function trim(tail: number[], keep: number): number[] {
  if (tail.length > keep) tail.splice(0, tail.length - keep);
  return tail;
}
