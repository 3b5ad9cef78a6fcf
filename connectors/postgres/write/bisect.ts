import { failed, succeeded, type WriteResult } from '../../../src/connectors/sdk.js';
import type { PgTable } from '../catalogue.js';
import { recordErrorCode, recordMessage, sqlState } from '../errors.js';

/**
 * Runs `run` over items; on a record-class failure splits them in halves and retries each, down
 * to single items, which then get their own error. `run` returns affected counts per item (or
 * undefined for one each); a count of 0 gets `zero()` if given, else stays unset (UpdateInsert
 * inserts those next).
 */
export async function bisect<T>(
  items: T[],
  run: (items: T[]) => Promise<number[] | undefined>,
  index: (item: T) => number,
  results: WriteResult[],
  table: PgTable,
  zero?: () => WriteResult,
): Promise<void> {
  if (items.length === 0) return;
  let counts: number[] | undefined;
  try {
    counts = await run(items);
  } catch (err) {
    const state = sqlState(err);
    const code = recordErrorCode(state);
    if (!code) throw err;
    if (items.length === 1) {
      const e = err as { message?: string; detail?: string; column?: string };
      const field = e.column ? (table.columns.find((c) => c.name === e.column)?.fullName ?? e.column) : undefined;
      results[index(items[0] as T)] = failed(code, recordMessage(e.message, e.detail), {
        ...(state ? { nativeCode: state } : {}),
        ...(field ? { field } : {}),
      });
      return;
    }
    const mid = items.length >> 1;
    await bisect(items.slice(0, mid), run, index, results, table, zero);
    await bisect(items.slice(mid), run, index, results, table, zero);
    return;
  }
  items.forEach((item, k) => {
    const n = counts ? (counts[k] ?? 0) : 1;
    if (n > 0) results[index(item)] = succeeded(n);
    else if (zero) results[index(item)] = zero();
  });
}
