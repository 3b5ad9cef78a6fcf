import type { Insertable } from 'kysely';
import type { MapExportRow, MapExportsTable } from '../schema.js';
import type { Db } from '../sql.js';

/** Records a pending export and answers its integer ID. */
export async function insertMapExport(db: Db, row: Insertable<MapExportsTable>): Promise<number> {
  const { id } = await db.insertInto('mapExports').values(row).returning('id').executeTakeFirstOrThrow();
  return Number(id);
}

/**
 * Takes a pending export of the Solution out of the store and answers it, once: the row is
 * deleted by the same statement that reads it, so two downloads at once get it only once. An
 * expired export is deleted and not answered.
 */
export async function takeMapExport(
  db: Db,
  ref: { orgId: number; solutionId: string; id: number },
  now: string,
): Promise<MapExportRow | undefined> {
  const row = await db
    .deleteFrom('mapExports')
    .where('id', '=', ref.id)
    .where('orgId', '=', ref.orgId)
    .where('solutionId', '=', ref.solutionId.toLowerCase())
    .returningAll()
    .executeTakeFirst();
  return row && row.expiresAt > now ? row : undefined;
}

/** Deletes the exports that expired before `now`. */
export async function pruneMapExports(db: Db, now: string): Promise<void> {
  await db.deleteFrom('mapExports').where('expiresAt', '<=', now).execute();
}
