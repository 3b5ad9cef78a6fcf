import { parseDateTime, utcDayMs } from '../../src/protocol/schedule.js';
import { RUN_RESULTS, type RunResult } from '../../src/protocol/solutions.js';

/** The History window when a list names no `laterThanDate` (SPEC.md "Limits": last 45 days). */
export const DEFAULT_HISTORY_DAYS = 45;

/** The result of an execution as shown: what the Agent reported, or InProgress while it runs. */
export const HISTORY_RESULTS = [...RUN_RESULTS, 'InProgress'] as const;
export type HistoryResult = RunResult | 'InProgress';

/** The sort columns of the History list, in the order of their indexes 0..3 (clients send either). */
export const EXECUTION_SORTS = ['Start', 'Result', 'RecordsProcessed', 'RecordsFailed'] as const;
export type ExecutionSort = (typeof EXECUTION_SORTS)[number];

/** A sort column by name (any case) or by its index `0`..`3`; undefined for anything else. */
export function executionSortOf(text: string): ExecutionSort | undefined {
  const t = text.trim();
  if (/^[0-9]$/.test(t)) return EXECUTION_SORTS[Number(t)];
  return EXECUTION_SORTS.find((s) => s.toLowerCase() === t.toLowerCase());
}

/** A History result by name, any case; undefined for anything else. */
export function historyResultOf(text: string): HistoryResult | undefined {
  const t = text.trim().toLowerCase();
  return HISTORY_RESULTS.find((r) => r.toLowerCase() === t);
}

/**
 * An instant as clients write it in a query string: a date alone (`2024-1-1`, midnight), or a date
 * and a time (`2024-01-31T10:00`, `2024-1-31 9:00:00.1234567Z`, `…+02:00`). Unpadded parts are
 * fine; without an offset the time is UTC (SPEC.md: all timestamps are UTC). Undefined when the
 * text is none of these, or not a real calendar day.
 */
export function parseInstant(text: string): Date | undefined {
  const parsed = parseDateTime(text);
  if (!parsed) return undefined;
  const { date, second, offsetMinutes } = parsed;
  const ms = utcDayMs(date.year, date.month, date.day) + second * 1000 - (offsetMinutes ?? 0) * 60_000;
  const at = new Date(ms);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/** The start of the default History window: `days` before `now`. */
export function defaultLaterThan(now: Date, days = DEFAULT_HISTORY_DAYS): Date {
  return new Date(now.getTime() - days * 86_400_000);
}

/**
 * A timestamp an Agent reported, as the store keeps timestamps (ISO-8601 UTC with milliseconds),
 * so that they compare as text; `fallback` when it cannot be read.
 */
export function isoOr(text: string | undefined, fallback: string): string {
  if (text === undefined) return fallback;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? fallback : new Date(ms).toISOString();
}
