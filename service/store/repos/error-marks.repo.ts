import { sql } from 'kysely';
import type { Flag } from '../schema.js';
import type { Db } from '../sql.js';
import { reprocessableCounts } from './executions.repo.js';

/**
 * Marks on record errors and the reprocess runs that take them. An error's mark is its own
 * (`marked` 0 or 1) or else its execution's default (`mark_default`, migration 023), and counts
 * only while it can be reprocessed. Marking the whole execution sets the default and clears the
 * marks of its own an error has: its cost is those errors, never all of them (an execution may
 * have a million). Every change to many errors is one UPDATE, never a loop.
 *
 * Whatever changes the default or reads it to take errors locks the execution's row first, so a
 * mark-all and a reprocess of one execution run one after the other, each seeing all of the
 * other's work, and never lock the same errors in different orders.
 */

/** Locks the execution's row for the transaction and answers its mark default; undefined when it has gone. */
async function lockMarkDefault(tx: Db, executionId: number): Promise<Flag | undefined> {
  const row = await tx
    .updateTable('executions')
    .set((eb) => ({ markDefault: eb.ref('markDefault') }))
    .where('id', '=', executionId)
    .returning('markDefault')
    .executeTakeFirst();
  return row && Number(row.markDefault);
}

/**
 * Sets or clears the mark of one error that can still be reprocessed; answers whether it matched.
 * The mark is the error's own, whatever the execution's default, so it stands however the two
 * calls interleave with a mark-all.
 */
export async function markError(db: Db, executionId: number, errorId: string, marked: boolean): Promise<boolean> {
  const res = await db
    .updateTable('executionErrors')
    .set({ marked: marked ? 1 : 0 })
    .where('executionId', '=', executionId)
    .where('id', '=', errorId.toLowerCase())
    .where('canReprocess', '=', sql.lit(1))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** What marking every error of an execution did. */
export interface MarkAllResult {
  /** Errors that can be reprocessed whose mark changed. */
  readonly changed: number;
  /** Errors that can be reprocessed (all of them now carry the mark). */
  readonly reprocessable: number;
}

/**
 * Sets or clears the mark of every error of the execution that can still be reprocessed: sets the
 * execution's default and clears the marks of their own (over the partial index of those). Run it
 * in a transaction: the counts and the change are then one.
 */
export async function markExecutionErrors(tx: Db, executionId: number, marked: boolean): Promise<MarkAllResult> {
  const mark: Flag = marked ? 1 : 0;
  const before = await lockMarkDefault(tx, executionId);
  if (before === undefined) return { changed: 0, reprocessable: 0 };
  if (before !== mark)
    await tx.updateTable('executions').set({ markDefault: mark }).where('id', '=', executionId).execute();
  // Marks of their own on errors that can be reprocessed, by value. `is not null` (no parameter)
  // lets the planner use the partial index of such errors.
  const own = await tx
    .selectFrom('executionErrors')
    .select((eb) => ['marked', eb.fn.countAll<number>().as('n')])
    .where('executionId', '=', executionId)
    .where('marked', 'is not', null)
    .where('canReprocess', '=', sql.lit(1))
    .groupBy('marked')
    .execute();
  const ownWith = (value: Flag): number => own.reduce((n, r) => n + (Number(r.marked) === value ? Number(r.n) : 0), 0);
  await tx
    .updateTable('executionErrors')
    .set({ marked: null })
    .where('executionId', '=', executionId)
    .where('marked', 'is not', null)
    .execute();
  const reprocessable = (await reprocessableCounts(tx, [executionId])).get(executionId) ?? 0;
  // With the default unchanged only the errors whose own mark differed change; with it flipped,
  // every error but those whose own mark was the new one already.
  const changed = before === mark ? ownWith(marked ? 0 : 1) : reprocessable - ownWith(mark);
  return { changed, reprocessable };
}

/**
 * Takes the marked errors of the execution for the reprocess run `runId`: they cannot be marked or
 * reprocessed again (once, whatever the run's outcome). Answers how many it took. Run it in a
 * transaction (the execution's row stays locked until it ends).
 */
export async function takeMarked(tx: Db, executionId: number, runId: string): Promise<number> {
  const markDefault = await lockMarkDefault(tx, executionId);
  if (markDefault === undefined) return 0;
  let q = tx
    .updateTable('executionErrors')
    .set({ canReprocess: 0, marked: null, reprocessRunId: runId })
    .where('executionId', '=', executionId)
    .where('canReprocess', '=', sql.lit(1))
    .where('mapId', 'is not', null);
  // Default 0: only marks of their own (the partial index of those); default 1: all but own 0s.
  q =
    markDefault === 1
      ? q.where((eb) => eb.or([eb('marked', 'is', null), eb('marked', '=', sql.lit(1))]))
      : q.where('marked', '=', sql.lit(1));
  const res = await q.executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** How many errors the reprocess run took, per Map. */
export async function takenPerMap(db: Db, runId: string): Promise<Array<{ mapId: number; records: number }>> {
  const rows = await db
    .selectFrom('executionErrors')
    .select((eb) => ['mapId', eb.fn.countAll<number>().as('n')])
    .where('reprocessRunId', '=', runId)
    .groupBy('mapId')
    .execute();
  return rows.flatMap((r) => (r.mapId === null ? [] : [{ mapId: Number(r.mapId), records: Number(r.n) }]));
}

/**
 * Gives back the errors a reprocess run took when it did not start: reprocessable again, and marked
 * by a mark of their own (whatever the execution's default has become meanwhile).
 */
export async function giveBack(db: Db, runId: string): Promise<number> {
  const res = await db
    .updateTable('executionErrors')
    .set({ canReprocess: 1, marked: 1, reprocessRunId: null })
    .where('reprocessRunId', '=', runId)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/**
 * Undoes a reprocess run its Agent never started: removes the run's execution while it has no
 * result and gives back the errors it took. Answers how many came back, or undefined when there
 * was no such execution without a result (the run ended: its errors stay taken). Run it in a
 * transaction, so that a run's end reported meanwhile either comes first and keeps the errors
 * taken, or finds no execution left.
 */
export async function undoReprocessRun(tx: Db, runId: string): Promise<number | undefined> {
  const removed = await tx
    .deleteFrom('executions')
    .where('runId', '=', runId)
    .where('isReprocessJob', '=', 1)
    .where('result', 'is', null)
    .executeTakeFirst();
  if (Number(removed.numDeletedRows) === 0) return undefined;
  return giveBack(tx, runId);
}

/** One record a reprocess run took, with the sealed copy of its source fields when the Service keeps it. */
export interface TakenRecord {
  seq: number;
  errorId: string;
  failedRecordId: string | null;
  source: string | null;
}

/** A page of the errors a reprocess run took of one Map, in order of arrival after `after`, by key. */
export async function takenPage(
  db: Db,
  solutionId: string,
  runId: string,
  mapId: number,
  after: number,
  limit: number,
): Promise<TakenRecord[]> {
  const rows = await db
    .selectFrom('executionErrors as e')
    .leftJoin('failedRecords as f', (j) => j.onRef('f.id', '=', 'e.failedRecordId').on('f.solutionId', '=', solutionId))
    .select(['e.seq', 'e.id as errorId', 'e.failedRecordId', 'f.source'])
    .where('e.reprocessRunId', '=', runId)
    .where('e.mapId', '=', mapId)
    .where('e.seq', '>', after)
    .orderBy('e.seq')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    seq: Number(r.seq),
    errorId: r.errorId,
    failedRecordId: r.failedRecordId,
    source: r.source ?? null,
  }));
}
