import type { Db } from '../sql.js';
import type { MapValidationRow, MapValidationsTable } from '../schema.js';

export async function insertMapValidation(db: Db, row: MapValidationsTable): Promise<void> {
  await db.insertInto('mapValidations').values(row).execute();
}

/** Records the end of a validation: its state, metadata and results. */
export async function finishMapValidation(
  db: Db,
  id: string,
  patch: Pick<MapValidationsTable, 'state' | 'metadata' | 'valid' | 'results' | 'finishDate'>,
): Promise<void> {
  await db.updateTable('mapValidations').set(patch).where('id', '=', id).execute();
}

/** A validation of a Solution's Map by ID (lower-case GUID). */
export async function getMapValidation(
  db: Db,
  orgId: number,
  solutionId: string,
  id: string,
): Promise<MapValidationRow | undefined> {
  return db
    .selectFrom('mapValidations')
    .selectAll()
    .where('id', '=', id)
    .where('orgId', '=', orgId)
    .where('solutionId', '=', solutionId)
    .executeTakeFirst();
}

/** Deletes the validations created before `before`; how many went. */
export async function deleteMapValidationsBefore(db: Db, before: string): Promise<number> {
  const res = await db.deleteFrom('mapValidations').where('creationDate', '<', before).executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** Sets the Map's `valid` from a validation of `revision`, unless the Map was saved since. */
export async function markMapValidity(db: Db, mapId: number, revision: number, valid: boolean): Promise<void> {
  await db
    .updateTable('maps')
    .set({ valid: valid ? 1 : 0 })
    .where('id', '=', mapId)
    .where('revision', '=', revision)
    .execute();
}
