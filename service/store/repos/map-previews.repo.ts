import type { Db } from '../sql.js';
import type { MapPreviewRow, MapRunRow } from '../schema.js';

/** Records a preview or native query test as Requested. */
export async function insertMapPreview(db: Db, row: MapPreviewRow): Promise<void> {
  await db.insertInto('mapPreviews').values(row).execute();
}

/** Completes a Requested preview with its records or its error; a row already completed (or expired and deleted) is left alone. */
export async function completeMapPreview(
  db: Db,
  id: string,
  patch: Pick<MapPreviewRow, 'status' | 'result' | 'errorCode' | 'errorMessage' | 'completedAt'>,
): Promise<void> {
  await db.updateTable('mapPreviews').set(patch).where('id', '=', id).where('status', '=', 'Requested').execute();
}

export async function getMapPreview(
  db: Db,
  solutionId: string,
  kind: MapPreviewRow['kind'],
  id: string,
): Promise<MapPreviewRow | undefined> {
  return db
    .selectFrom('mapPreviews')
    .selectAll()
    .where('id', '=', id)
    .where('solutionId', '=', solutionId)
    .where('kind', '=', kind)
    .executeTakeFirst();
}

/** The newest preview of `kind` of a Map, of one Block or of any. */
export async function latestMapPreview(
  db: Db,
  solutionId: string,
  mapId: number,
  kind: MapPreviewRow['kind'],
  blockId?: string,
): Promise<MapPreviewRow | undefined> {
  let q = db
    .selectFrom('mapPreviews')
    .selectAll()
    .where('solutionId', '=', solutionId)
    .where('mapId', '=', mapId)
    .where('kind', '=', kind);
  if (blockId !== undefined) q = q.where('blockId', '=', blockId);
  return q.orderBy('requestedAt', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
}

/** Deletes previews and single-Map run records whose time is up. */
export async function pruneMapPreviews(db: Db, now: string): Promise<void> {
  await db.deleteFrom('mapPreviews').where('expiresAt', '<', now).execute();
  await db.deleteFrom('mapRuns').where('expiresAt', '<', now).execute();
}

export async function insertMapRun(db: Db, row: MapRunRow): Promise<void> {
  await db.insertInto('mapRuns').values(row).execute();
}

export async function getMapRun(db: Db, solutionId: string, mapId: number, id: string): Promise<MapRunRow | undefined> {
  return db
    .selectFrom('mapRuns')
    .selectAll()
    .where('id', '=', id)
    .where('solutionId', '=', solutionId)
    .where('mapId', '=', mapId)
    .executeTakeFirst();
}
