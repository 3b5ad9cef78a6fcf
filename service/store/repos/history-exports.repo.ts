import type { Insertable } from 'kysely';
import type { HistoryExportRow, HistoryExportsTable } from '../schema.js';
import type { Db } from '../sql.js';

/** Records a pending export of an execution's errors and answers its integer ID. */
export async function insertHistoryExport(db: Db, row: Insertable<HistoryExportsTable>): Promise<number> {
  const { id } = await db.insertInto('historyExports').values(row).returning('id').executeTakeFirstOrThrow();
  return Number(id);
}

/**
 * Takes a pending export of the execution out of the store and answers it, once: the statement
 * that reads the row deletes it, so two downloads at once get it only once. An expired export is
 * deleted and not answered.
 */
export async function takeHistoryExport(
  db: Db,
  ref: { orgId: number; solutionId: string; executionId: number; id: number },
  now: string,
): Promise<HistoryExportRow | undefined> {
  const row = await db
    .deleteFrom('historyExports')
    .where('id', '=', ref.id)
    .where('orgId', '=', ref.orgId)
    .where('solutionId', '=', ref.solutionId)
    .where('executionId', '=', ref.executionId)
    .returningAll()
    .executeTakeFirst();
  return row && row.expiresAt > now ? { ...row, id: Number(row.id), executionId: Number(row.executionId) } : undefined;
}

/** Deletes the exports that expired before `now`; answers how many. */
export async function pruneHistoryExports(db: Db, now: string): Promise<number> {
  const res = await db.deleteFrom('historyExports').where('expiresAt', '<=', now).executeTakeFirst();
  return Number(res.numDeletedRows);
}
