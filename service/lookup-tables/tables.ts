import type { Kysely } from 'kysely';
import { FerryError } from '../../src/errors/ferry-error.js';
import {
  countTables,
  deleteTable,
  getTable,
  insertTable,
  listTables,
  nameKeyOf,
  updateTable,
} from '../store/repos/lookup-tables.repo.js';
import {
  countValues,
  deleteAllValues,
  insertValues,
  pairPages,
  type NewLookupValue,
} from '../store/repos/lookup-values.repo.js';
import type { Database, LookupTableRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import type { Store } from '../store/store.js';
import { newId, nowIso } from '../util/values.js';

/**
 * Lookup Tables of an Organization: create, read, modify (values sent replace all the values),
 * delete. Values go in with multi-row INSERTs in one transaction, so a table of 200,000 values is
 * one request.
 */

export const tableNotFound = (id: string): FerryError =>
  new FerryError('API_NOT_FOUND', `Lookup Table ${id} was not found.`);

/** A page of the Organization's tables, and how many there are. */
export async function tablesOf(
  db: Db,
  orgId: number,
  page: { limit: number; offset: number },
): Promise<{ rows: LookupTableRow[]; total: number }> {
  const total = await countTables(db, orgId);
  const rows = await listTables(db, orgId, page);
  return { rows, total };
}

/** One table of the Organization; 404 when it has none with this ID. */
export async function tableOf(db: Db, orgId: number, tableId: string): Promise<LookupTableRow> {
  const row = await getTable(db, orgId, tableId);
  if (!row) throw tableNotFound(tableId);
  return row;
}

/** A table as a client sends it; `lookupTableValues`, when sent, are all its values. */
export interface TableSpec {
  id?: string | null | undefined;
  name: string;
  description?: string | null | undefined;
  lookupTableValues?: readonly NewLookupValue[] | null | undefined;
}

/** Creates a table with its values. */
export async function createTable(
  store: Pick<Store, 'db' | 'dialect'>,
  orgId: number,
  spec: TableSpec,
  modifiedBy: string,
): Promise<LookupTableRow> {
  const now = nowIso();
  const row: LookupTableRow = {
    id: newId(),
    orgId,
    name: spec.name,
    nameKey: nameKeyOf(spec.name),
    description: spec.description ?? null,
    creationDate: now,
    lastModificationDate: now,
    modificationBy: modifiedBy,
  };
  await store.db.transaction().execute(async (tx) => {
    await insertTable(tx, row);
    await insertValues(tx, store.dialect, row.id, 0, spec.lookupTableValues ?? [], now);
  });
  return row;
}

/**
 * Changes a table's name and description and, when values are sent, replaces all its values —
 * unless they are the table's values as they are, in order (a table read and sent back): then the
 * values stay, with their IDs and dates.
 */
export async function modifyTable(
  store: Pick<Store, 'db' | 'dialect'>,
  orgId: number,
  tableId: string,
  spec: TableSpec,
  modifiedBy: string,
): Promise<LookupTableRow> {
  const id = tableId.toLowerCase();
  if (spec.id && spec.id.toLowerCase() !== id) {
    throw new FerryError('API_VALIDATION', 'The Lookup Table ID in the body differs from the one in the path.', {
      errors: [{ path: 'body.id', message: `must be ${id}` }],
    });
  }
  const now = nowIso();
  await store.db.transaction().execute(async (tx) => {
    const found = await updateTable(tx, orgId, id, {
      name: spec.name,
      nameKey: nameKeyOf(spec.name),
      description: spec.description ?? null,
      lastModificationDate: now,
      modificationBy: modifiedBy,
    });
    if (!found) throw tableNotFound(id);
    if (spec.lookupTableValues && !(await holdsExactly(tx, id, spec.lookupTableValues))) {
      await deleteAllValues(tx, id);
      await insertValues(tx, store.dialect, id, 0, spec.lookupTableValues, now);
    }
  });
  return tableOf(store.db, orgId, id);
}

/** Whether the table's values are `values`, in order. */
async function holdsExactly(db: Db, tableId: string, values: readonly NewLookupValue[]): Promise<boolean> {
  if ((await countValues(db, tableId)) !== values.length) return false;
  let i = 0;
  for await (const page of pairPages(db, tableId)) {
    for (const { value1, value2 } of page) {
      const sent = values[i++];
      if (!sent || sent.value1 !== value1 || sent.value2 !== value2) return false;
    }
  }
  return i === values.length;
}

/** Deletes a table and its values. */
export async function removeTable(db: Kysely<Database>, orgId: number, tableId: string): Promise<void> {
  const id = tableId.toLowerCase();
  const deleted = await db.transaction().execute((tx) => deleteTable(tx, orgId, id));
  if (!deleted) throw tableNotFound(id);
}
