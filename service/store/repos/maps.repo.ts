import { sql, type Insertable } from 'kysely';
import { containsInsensitive, type Db } from '../sql.js';
import type { MapRevisionRow, MapRevisionsTable, MapRow, MapsTable, MapUpdate } from '../schema.js';

/** Inserts a Map and answers its new ID. */
export async function insertMap(db: Db, row: Insertable<MapsTable>): Promise<number> {
  const { id } = await db.insertInto('maps').values(row).returning('id').executeTakeFirstOrThrow();
  return Number(id);
}

export async function insertMapRevision(db: Db, row: MapRevisionsTable): Promise<void> {
  await db.insertInto('mapRevisions').values(row).execute();
}

export async function getMap(db: Db, solutionId: string, id: number): Promise<MapRow | undefined> {
  return db
    .selectFrom('maps')
    .selectAll()
    .where('solutionId', '=', solutionId.toLowerCase())
    .where('id', '=', id)
    .executeTakeFirst();
}

/** A revision of a Map; the latest when `revision` is undefined. */
export async function getMapRevision(db: Db, mapId: number, revision?: number): Promise<MapRevisionRow | undefined> {
  let q = db.selectFrom('mapRevisions').selectAll().where('mapId', '=', mapId);
  if (revision !== undefined) q = q.where('revision', '=', revision);
  return q.orderBy('revision', 'desc').limit(1).executeTakeFirst();
}

/** The Solution's Maps in run order (index, then ID), filtered by part of the name, paged; `total` counts every match. */
export async function listMaps(
  db: Db,
  solutionId: string,
  filter: { nameContains?: string | undefined; page?: { limit: number; offset: number } | undefined } = {},
): Promise<{ rows: MapRow[]; total: number }> {
  let base = db.selectFrom('maps').where('solutionId', '=', solutionId.toLowerCase());
  if (filter.nameContains !== undefined && filter.nameContains !== '')
    base = base.where(containsInsensitive('name', filter.nameContains));
  let q = base.selectAll().orderBy('linkIndex').orderBy('id');
  if (filter.page) q = q.limit(filter.page.limit).offset(filter.page.offset);
  const rows = await q.execute();
  const total = filter.page
    ? Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n)
    : rows.length;
  return { rows, total };
}

/** A Map's revisions, newest first, paged; `total` counts them all. */
export async function listMapRevisions(
  db: Db,
  mapId: number,
  page: { limit: number; offset: number },
): Promise<{ rows: MapRevisionRow[]; total: number }> {
  const base = db.selectFrom('mapRevisions').where('mapId', '=', mapId);
  const rows = await base.selectAll().orderBy('revision', 'desc').limit(page.limit).offset(page.offset).execute();
  const total = Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  return { rows, total };
}

/**
 * Updates a Map unless another user than `by` holds its lock (the comparison ignores case).
 * Answers false when nothing was updated: the Map is gone or locked by someone else.
 */
export async function updateMapUnlessLocked(db: Db, id: number, by: string, patch: MapUpdate): Promise<boolean> {
  const res = await db
    .updateTable('maps')
    .set(patch)
    .where('id', '=', id)
    .where((eb) =>
      eb.or([eb('lockedBy', 'is', null), eb(sql<string>`lower(${sql.ref('lockedBy')})`, '=', by.toLowerCase())]),
    )
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function updateMap(db: Db, id: number, patch: MapUpdate): Promise<boolean> {
  const res = await db.updateTable('maps').set(patch).where('id', '=', id).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function deleteMap(db: Db, solutionId: string, id: number): Promise<boolean> {
  const res = await db
    .deleteFrom('maps')
    .where('solutionId', '=', solutionId.toLowerCase())
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}
