import type { Kysely } from 'kysely';
import { FerryError } from '../../src/errors/ferry-error.js';
import { findTable, updateTable } from '../store/repos/lookup-tables.repo.js';
import {
  countValues,
  deleteValue,
  findPair,
  getValue,
  insertValue,
  listValues,
  updateValue,
  type NewLookupValue,
} from '../store/repos/lookup-values.repo.js';
import type { Database, LookupTableValueRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { nowIso } from '../util/values.js';
import { tableNotFound, tableOf } from './tables.js';

/**
 * The values of a Lookup Table one at a time, and the two lookups by table ID or name. Each change
 * stamps the table as modified in the same transaction.
 */

/**
 * The longest value1 or value2, in characters (UTF-16 code units). It keeps an entry of the
 * lookup indexes under PostgreSQL's B-tree limit (see migration 002).
 */
export const MAX_VALUE_LENGTH = 400;

const valueNotFound = (tableId: string, id: string): FerryError =>
  new FerryError('API_NOT_FOUND', `Lookup Table ${tableId} has no value ${id}.`);

/**
 * Stamps the table as modified, inside the transaction that changes one of its values (on
 * PostgreSQL the row lock also orders concurrent appends). 404 when it does not exist.
 */
async function touchTable(tx: Db, orgId: number, tableId: string, modifiedBy: string, now: string): Promise<void> {
  if (!(await updateTable(tx, orgId, tableId, { lastModificationDate: now, modificationBy: modifiedBy })))
    throw tableNotFound(tableId);
}

/** A page of a table's values in insertion order, and how many it has. */
export async function valuesOf(
  db: Db,
  orgId: number,
  tableId: string,
  page: { limit: number; offset: number },
): Promise<{ rows: LookupTableValueRow[]; total: number }> {
  const table = await tableOf(db, orgId, tableId);
  const [total, rows] = await Promise.all([countValues(db, table.id), listValues(db, table.id, page)]);
  return { rows, total };
}

/** One value of a table. */
export async function valueOf(db: Db, orgId: number, tableId: string, valueId: string): Promise<LookupTableValueRow> {
  const table = await tableOf(db, orgId, tableId);
  const row = await getValue(db, table.id, valueId.toLowerCase());
  if (!row) throw valueNotFound(table.id, valueId);
  return row;
}

/** Appends a value to a table. */
export async function addValue(
  db: Kysely<Database>,
  orgId: number,
  tableId: string,
  value: NewLookupValue,
  modifiedBy: string,
): Promise<LookupTableValueRow> {
  const id = tableId.toLowerCase();
  const now = nowIso();
  return db.transaction().execute(async (tx) => {
    await touchTable(tx, orgId, id, modifiedBy, now);
    return insertValue(tx, id, value, now);
  });
}

/** Changes a value; an ID sent with it must be the one of the path. */
export async function modifyValue(
  db: Kysely<Database>,
  orgId: number,
  tableId: string,
  valueId: string,
  value: NewLookupValue & { id?: string | null | undefined },
  modifiedBy: string,
): Promise<LookupTableValueRow> {
  const table = tableId.toLowerCase();
  const id = valueId.toLowerCase();
  if (value.id && value.id.toLowerCase() !== id) {
    throw new FerryError('API_VALIDATION', 'The value ID in the body differs from the one in the path.', {
      errors: [{ path: 'body.id', message: `must be ${id}` }],
    });
  }
  const now = nowIso();
  const row = await db.transaction().execute(async (tx) => {
    await touchTable(tx, orgId, table, modifiedBy, now);
    if (!(await updateValue(tx, table, id, { value1: value.value1, value2: value.value2, lastModificationDate: now })))
      throw valueNotFound(table, id);
    return getValue(tx, table, id);
  });
  if (!row) throw valueNotFound(table, id);
  return row;
}

/** Deletes a value. */
export async function removeValue(
  db: Kysely<Database>,
  orgId: number,
  tableId: string,
  valueId: string,
  modifiedBy: string,
): Promise<void> {
  const table = tableId.toLowerCase();
  const id = valueId.toLowerCase();
  await db.transaction().execute(async (tx) => {
    await touchTable(tx, orgId, table, modifiedBy, nowIso());
    if (!(await deleteValue(tx, table, id))) throw valueNotFound(table, id);
  });
}

/**
 * Both lookups: the pair of the table (named by ID or name) whose `by` value matches; with
 * duplicates, the first by the other value in code-point order.
 */
export async function lookupValue(
  db: Db,
  orgId: number,
  tableIdOrName: string,
  by: 'value1' | 'value2',
  value: string,
): Promise<LookupTableValueRow> {
  const table = await findTable(db, orgId, tableIdOrName);
  if (!table)
    throw new FerryError(
      'API_NOT_FOUND',
      `Lookup Table "${tableIdOrName}" was not found (neither an ID nor a name in this Organization).`,
    );
  const row = await findPair(db, table.id, by, value);
  if (!row) throw new FerryError('API_NOT_FOUND', `Lookup Table "${table.name}" has no value with ${by} "${value}".`);
  return row;
}
