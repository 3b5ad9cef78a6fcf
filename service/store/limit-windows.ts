/**
 * Counts in fixed windows that every Service replica on one PostgreSQL shares (table
 * `limit_windows`, migration 030): the API rate limits (service/http/rate-limit.ts) and the
 * failed-login counts (service/auth/shared-login-throttle.ts). SQLite, one process, counts in
 * memory and never uses this.
 *
 *   take(now, [w1, w2…])   one INSERT … ON CONFLICT (key) DO UPDATE, one round trip; for each window:
 *                            no row, or its window ended ─▶ count = 1, end = the new end   (taken)
 *                            count < limit ──────────────▶ count + 1                       (taken)
 *                            else ───────────────────────▶ row untouched, not returned     (refused)
 *   takeThen(now, a, b)    the same for `a`, then for `b` only when `a` was taken (a data-modifying
 *                          CTE selecting from a's RETURNING), still one statement
 *
 * A take that would pass a limit is refused without counting (the conditional upsert), so a
 * client retrying on 429 does not push its window's count further. The upsert locks each key's row
 * for the length of its statement: concurrent takes of one key, from any replica, queue on it, and
 * exactly `limit` of them pass. Only take and takeThen lock two rows in one statement, and their
 * callers name the keys in one order (a minute before its day, an address before its pair), so two
 * statements never wait on each other's rows (a deadlock PostgreSQL would end after a second).
 *
 * The table is UNLOGGED: a take writes no WAL and its commit waits for no disk flush. A key has one
 * row, started again in place when its window has ended. Windows are measured by the clock of the
 * replica that starts them (replicas whose clocks differ by a second move a window's edges by a
 * second, nothing more). Rows of ended windows are deleted at most once per `sweepEveryMs`, beside
 * the statement of the take that finds it due.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { StoreDialect } from './dialect.js';
import type { Database } from './schema.js';

/** One window to count a take in. */
export interface WindowTake {
  key: string;
  /** The end of the window in ms since the epoch, should this take start a new one. */
  endMs: number;
  /** How many takes the window holds (at least 1): one more is refused. */
  limit: number;
}

/** A window still running: its count and its end in ms since the epoch. */
export interface RunningWindow {
  count: number;
  endMs: number;
}

/**
 * Whether a Service counts its limits in `limit_windows`: `setting` (FERRY_LIMIT_COUNTS) when given,
 * else on PostgreSQL, where replicas may share the database, and not on SQLite (one process).
 */
export function limitsInDatabase(dialect: StoreDialect, setting?: 'database' | 'memory'): boolean {
  return (setting ?? (dialect === 'postgres' ? 'database' : 'memory')) === 'database';
}

/** The largest limit an integer column counts to: a window "without limit". */
export const NO_LIMIT = 2_147_483_647;

/** A limit as the column can count it: a configured limit above NO_LIMIT is no limit. */
const cap = (limit: number): number => Math.min(limit, NO_LIMIT);

export class LimitWindows {
  readonly #db: Kysely<Database>;
  readonly #sweepEveryMs: number;
  #nextSweep = 0;

  constructor(db: Kysely<Database>, opts: { sweepEveryMs?: number } = {}) {
    this.#db = db;
    this.#sweepEveryMs = opts.sweepEveryMs ?? 60_000;
  }

  /**
   * Counts one take in each window that has room, independently; resolves to each window's count
   * after the take, or undefined where it was refused (see the diagram above).
   */
  async take(now: number, windows: readonly WindowTake[]): Promise<Array<number | undefined>> {
    this.#maybeSweep(now);
    const values = sql.join(windows.map((w) => sql`(${w.key}::text, 1, ${w.endMs}::bigint)`));
    const limits = sql.join(
      windows.map((w) => sql`WHEN ${w.key}::text THEN ${cap(w.limit)}::integer`),
      sql` `,
    );
    const { rows } = await sql<{
      key: string;
      count: number;
    }>`${upsert(now, sql`VALUES ${values}`, sql`CASE w.key ${limits} END`)}
      RETURNING w.key, w.count`.execute(this.#db);
    const counts = new Map(rows.map((r) => [r.key, r.count]));
    return windows.map((w) => counts.get(w.key));
  }

  /**
   * Counts one take in `first` and, only when it was taken there, in `then`, in one statement;
   * resolves to the counts after the take, undefined where refused or not tried.
   */
  async takeThen(now: number, first: WindowTake, then: WindowTake): Promise<[number | undefined, number | undefined]> {
    this.#maybeSweep(now);
    const a = upsert(
      now,
      sql`VALUES (${first.key}::text, 1, ${first.endMs}::bigint)`,
      sql`${cap(first.limit)}::integer`,
    );
    const b = upsert(
      now,
      sql`SELECT ${then.key}::text, 1, ${then.endMs}::bigint FROM a`,
      sql`${cap(then.limit)}::integer`,
    );
    const { rows } = await sql<{ a: number | null; b: number | null }>`WITH a AS (${a} RETURNING w.count),
        b AS (${b} RETURNING w.count)
      SELECT (SELECT count FROM a) AS a, (SELECT count FROM b) AS b`.execute(this.#db);
    return [rows[0]?.a ?? undefined, rows[0]?.b ?? undefined];
  }

  /** The window of `key` when it is still running. */
  async read(now: number, key: string): Promise<RunningWindow | undefined> {
    const row = await this.#db
      .selectFrom('limitWindows')
      .select(['count', 'windowEndMs'])
      .where('key', '=', key)
      .where('windowEndMs', '>', now)
      .executeTakeFirst();
    return row ? { count: row.count, endMs: row.windowEndMs } : undefined;
  }

  /** Deletes the window of `key`. */
  async clear(key: string): Promise<void> {
    await this.#db.deleteFrom('limitWindows').where('key', '=', key).execute();
  }

  /** Takes one count back from the running window of `key`. */
  async takeBack(now: number, key: string): Promise<void> {
    await this.#db
      .updateTable('limitWindows')
      .set((eb) => ({ count: eb('count', '-', 1) }))
      .where('key', '=', key)
      .where('windowEndMs', '>', now)
      .where('count', '>', 0)
      .execute();
  }

  /**
   * Deletes the rows of windows that have ended, up to `batch` of them; resolves to how many. Rows a
   * take holds are skipped, not waited for: the sweep locks rows in no order a take knows, and
   * waiting could deadlock with a take resetting two ended windows at once.
   */
  async sweep(now: number, batch = 10_000): Promise<number> {
    const { numAffectedRows } = await sql`DELETE FROM limit_windows WHERE key IN (
        SELECT key FROM limit_windows WHERE window_end_ms <= ${now}::bigint LIMIT ${batch} FOR UPDATE SKIP LOCKED
      )`.execute(this.#db);
    return Number(numAffectedRows ?? 0);
  }

  /**
   * Sweeps beside the caller's statement when it is time. Not awaited: the request that happens to
   * trigger it does not wait for it, and a sweep that fails (the store closing) is simply the next
   * one's work.
   */
  #maybeSweep(now: number): void {
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + this.#sweepEveryMs;
    this.sweep(now).catch(() => undefined);
  }
}

/** The conditional upsert of takes from `source` (VALUES or a SELECT), each refused at `limit` (an expression of `w`). */
function upsert(now: number, source: RawBuilder<unknown>, limit: RawBuilder<unknown>): RawBuilder<unknown> {
  const ended = sql`w.window_end_ms <= ${now}::bigint`;
  return sql`INSERT INTO limit_windows AS w (key, count, window_end_ms) ${source}
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN ${ended} THEN 1 ELSE w.count + 1 END,
      window_end_ms = CASE WHEN ${ended} THEN excluded.window_end_ms ELSE w.window_end_ms END
    WHERE ${ended} OR w.count < ${limit}`;
}
