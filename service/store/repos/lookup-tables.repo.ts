import type { Updateable } from 'kysely';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { isGuid, LookupTableIndex, LookupTableSet, nameKeyOf } from '../../../src/maps/lookup/lookup-set.js';
import type { LookupTableRow, LookupTablesTable } from '../schema.js';
import { pairPages } from './lookup-values.repo.js';
import { isUniqueViolation, type Db } from '../sql.js';

export { nameKeyOf };

const duplicateName = (name: string): FerryError =>
  new FerryError(
    'API_DUPLICATE_NAME',
    `A Lookup Table named "${name}" already exists in this Organization; Lookup Table names are unique (ignoring case).`,
  );

export async function countTables(db: Db, orgId: number): Promise<number> {
  const row = await db
    .selectFrom('lookupTables')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('orgId', '=', orgId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A page of the Organization's tables, by name (ignoring case). */
export async function listTables(
  db: Db,
  orgId: number,
  page: { limit: number; offset: number },
): Promise<LookupTableRow[]> {
  return db
    .selectFrom('lookupTables')
    .selectAll()
    .where('orgId', '=', orgId)
    .orderBy('nameKey')
    .orderBy('id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export async function getTable(db: Db, orgId: number, id: string): Promise<LookupTableRow | undefined> {
  if (!isGuid(id)) return undefined;
  return db
    .selectFrom('lookupTables')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('id', '=', id.toLowerCase())
    .executeTakeFirst();
}

/** A table by ID or name: a GUID matches an ID first; otherwise (or failing that) the name, ignoring case. */
export async function findTable(db: Db, orgId: number, idOrName: string): Promise<LookupTableRow | undefined> {
  const byId = await getTable(db, orgId, idOrName);
  if (byId) return byId;
  return db
    .selectFrom('lookupTables')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('nameKey', '=', nameKeyOf(idOrName))
    .executeTakeFirst();
}

async function assertNameFree(db: Db, orgId: number, name: string, exceptId?: string): Promise<void> {
  let q = db.selectFrom('lookupTables').select('id').where('orgId', '=', orgId).where('nameKey', '=', nameKeyOf(name));
  if (exceptId) q = q.where('id', '!=', exceptId);
  if (await q.executeTakeFirst()) throw duplicateName(name);
}

/** Inserts a table; a name already used in the Organization (even by a concurrent request) is a 409. */
export async function insertTable(db: Db, row: LookupTableRow): Promise<void> {
  await assertNameFree(db, row.orgId, row.name);
  try {
    await db.insertInto('lookupTables').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw duplicateName(row.name);
    throw err;
  }
}

/**
 * Changes a table's fields, and at least its modification stamp. On PostgreSQL the UPDATE also
 * locks the row until the transaction ends, which serialises concurrent changes to the table's
 * values (their seq numbers come from the current maximum). False when the table does not exist.
 */
export async function updateTable(
  db: Db,
  orgId: number,
  id: string,
  patch: Updateable<LookupTablesTable>,
): Promise<boolean> {
  if (patch.name !== undefined && patch.name !== null) await assertNameFree(db, orgId, patch.name, id);
  try {
    const res = await db
      .updateTable('lookupTables')
      .set(patch)
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  } catch (err) {
    if (isUniqueViolation(err) && typeof patch.name === 'string') throw duplicateName(patch.name);
    throw err;
  }
}

/** Deletes a table, its values (cascade) and its unused exports. */
export async function deleteTable(db: Db, orgId: number, id: string): Promise<boolean> {
  await db
    .deleteFrom('exports')
    .where('orgId', '=', orgId)
    .where('kind', '=', LOOKUP_TABLE_EXPORT)
    .where('resourceId', '=', id)
    .execute();
  const res = await db.deleteFrom('lookupTables').where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** The `kind` of Lookup Table rows in the exports table. */
export const LOOKUP_TABLE_EXPORT = 'lookupTable';

/** Records a single-use export and returns its integer ID. */
export async function createExport(
  db: Db,
  orgId: number,
  kind: string,
  resourceId: string,
  now: string,
): Promise<number> {
  const row = await db
    .insertInto('exports')
    .values({ orgId, kind, resourceId, createdAt: now, usedAt: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/**
 * Marks an export used, once: `missing` when no such export of this resource exists, `used` when it
 * was already downloaded (also when a concurrent request won the race).
 */
export async function claimExport(
  db: Db,
  ref: { orgId: number; id: number; kind: string; resourceId: string },
  now: string,
): Promise<'claimed' | 'used' | 'missing'> {
  const row = await db
    .selectFrom('exports')
    .select(['id', 'usedAt'])
    .where('id', '=', ref.id)
    .where('orgId', '=', ref.orgId)
    .where('kind', '=', ref.kind)
    .where('resourceId', '=', ref.resourceId)
    .executeTakeFirst();
  if (!row) return 'missing';
  if (row.usedAt !== null) return 'used';
  const res = await db
    .updateTable('exports')
    .set({ usedAt: now })
    .where('id', '=', ref.id)
    .where('usedAt', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1 ? 'claimed' : 'used';
}

/**
 * Loads the Lookup Tables a Map run uses, once per run, into memory: the store side of the formula
 * functions LOOKUPTABLEVALUE1, LOOKUPTABLEVALUE2 and their _DEFAULT variants (see
 * `src/maps/lookup/lookup-set.ts`). Each reference is a table ID or name as the formulas write it;
 * references that match no table of the Organization are left out, and a lookup in them raises
 * MAP_LOOKUP_TABLE_NOT_FOUND per record. Values are read a page at a time and reduced as they
 * arrive to one answer per key and direction.
 */
export async function loadLookupTables(db: Db, orgId: number, namesOrIds: Iterable<string>): Promise<LookupTableSet> {
  const set = new LookupTableSet();
  const loaded = new Map<string, LookupTableIndex>();
  for (const ref of new Set(namesOrIds)) {
    const row = await findTable(db, orgId, ref);
    if (!row) continue;
    let table = loaded.get(row.id);
    if (!table) {
      table = new LookupTableIndex(row.id, row.name);
      for await (const page of pairPages(db, row.id)) for (const v of page) table.add(v.value1, v.value2);
      loaded.set(row.id, table);
    }
    set.add(table);
  }
  return set;
}
