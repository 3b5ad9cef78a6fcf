import { sql } from 'kysely';
import type { Db } from '../sql.js';

/**
 * Marks on record errors and the reprocess runs that take them. Every change to many errors is one
 * UPDATE over the execution's rows, never a loop: an execution may have a million errors.
 */

/** Sets or clears the mark of one error that can still be reprocessed; answers whether it matched. */
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

/** Sets or clears the mark of every error of the execution that can still be reprocessed; answers how many changed. */
export async function markExecutionErrors(db: Db, executionId: number, marked: boolean): Promise<number> {
  const res = await db
    .updateTable('executionErrors')
    .set({ marked: marked ? 1 : 0 })
    .where('executionId', '=', executionId)
    // A literal: the partial index of reprocessable errors serves it.
    .where('canReprocess', '=', sql.lit(1))
    .where('marked', '<>', marked ? 1 : 0)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/**
 * Takes the marked errors of the execution for the reprocess run `runId`: they cannot be marked or
 * reprocessed again (once, whatever the run's outcome). Answers how many it took.
 */
export async function takeMarked(db: Db, executionId: number, runId: string): Promise<number> {
  const res = await db
    .updateTable('executionErrors')
    .set({ canReprocess: 0, marked: 0, reprocessRunId: runId })
    .where('executionId', '=', executionId)
    .where('canReprocess', '=', sql.lit(1))
    .where('marked', '=', 1)
    .where('mapId', 'is not', null)
    .executeTakeFirst();
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

/** Gives back the errors a reprocess run took when it did not start: marked and reprocessable again. */
export async function giveBack(db: Db, runId: string): Promise<number> {
  const res = await db.updateTable('executionErrors').set({ canReprocess: 1, marked: 1, reprocessRunId: null }).where('reprocessRunId', '=', runId).executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** One record a reprocess run took, with the sealed copy of its source fields when the Service keeps it. */
export interface TakenRecord {
  seq: number;
  errorId: string;
  failedRecordId: string | null;
  source: string | null;
}

/** A page of the errors a reprocess run took of one Map, in order of arrival after `after`, by key. */
export async function takenPage(db: Db, solutionId: string, runId: string, mapId: number, after: number, limit: number): Promise<TakenRecord[]> {
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
  return rows.map((r) => ({ seq: Number(r.seq), errorId: r.errorId, failedRecordId: r.failedRecordId, source: r.source ?? null }));
}
