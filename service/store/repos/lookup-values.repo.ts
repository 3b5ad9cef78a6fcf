import { setImmediate as nextTurn } from 'node:timers/promises';
import { CompiledQuery, type Updateable } from 'kysely';
import type { StoreDialect } from '../dialect.js';
import type { LookupTableValueRow, LookupTableValuesTable } from '../schema.js';
import type { Db } from '../sql.js';
import { uuidV7 } from '../../util/uuid-v7.js';

/** A pair to store; the Service gives it its ID, seq and dates. */
export interface NewLookupValue {
  value1: string;
  value2: string;
}

/**
 * SQLite binds at most 32,766 parameters per statement (SQLITE_MAX_VARIABLE_NUMBER since 3.32);
 * a row binds 4 (ID, seq, value1, value2) and the statement 3 more (table ID and two dates).
 */
export const SQLITE_MAX_PARAMS = 32_766;
const SQLITE_ROWS_PER_INSERT = Math.floor((SQLITE_MAX_PARAMS - 3) / 4);
/**
 * PostgreSQL (65,535 parameters at most) gets each column as one array parameter through
 * `unnest`: six parameters whatever the row count, so the chunk is bounded by memory instead.
 */
const POSTGRES_ROWS_PER_INSERT = 10_000;

/** Rows per INSERT statement on each store. */
export const ROWS_PER_INSERT: Readonly<Record<StoreDialect, number>> = {
  sqlite: SQLITE_ROWS_PER_INSERT,
  postgres: POSTGRES_ROWS_PER_INSERT,
};

const COLUMNS = 'id, table_id, seq, value1, value2, creation_date, last_modification_date';

/**
 * Inserts pairs with consecutive seq numbers from `firstSeq`, in multi-row statements of at most
 * {@link ROWS_PER_INSERT} rows: never one statement per row, and the event loop gets a turn between
 * statements (on SQLite each one runs on the main thread). Run it inside a transaction so that a
 * failure leaves nothing behind. Returns the seq after the last row.
 */
export async function insertValues(
  db: Db,
  dialect: StoreDialect,
  tableId: string,
  firstSeq: number,
  values: readonly NewLookupValue[],
  now: string,
): Promise<number> {
  const chunk = ROWS_PER_INSERT[dialect];
  let seq = firstSeq;
  for (let start = 0; start < values.length; start += chunk) {
    const part = values.slice(start, start + chunk);
    if (start > 0) await nextTurn();
    await db.executeQuery(
      dialect === 'postgres' ? postgresInsert(tableId, seq, part, now) : sqliteInsert(tableId, seq, part, now),
    );
    seq += part.length;
  }
  return seq;
}

function sqliteInsert(tableId: string, firstSeq: number, part: readonly NewLookupValue[], now: string): CompiledQuery {
  const params: unknown[] = [tableId, now, now];
  const tuples: string[] = [];
  let seq = firstSeq;
  for (const v of part) {
    tuples.push('(?,?,?,?)');
    params.push(uuidV7(), seq++, v.value1, v.value2);
  }
  return CompiledQuery.raw(
    `INSERT INTO lookup_table_values (${COLUMNS}) SELECT column1, ?, column2, column3, column4, ?, ? FROM (VALUES ${tuples.join(',')})`,
    params,
  );
}

function postgresInsert(
  tableId: string,
  firstSeq: number,
  part: readonly NewLookupValue[],
  now: string,
): CompiledQuery {
  const ids: string[] = [];
  const seqs: number[] = [];
  const v1: string[] = [];
  const v2: string[] = [];
  let seq = firstSeq;
  for (const v of part) {
    ids.push(uuidV7());
    seqs.push(seq++);
    v1.push(v.value1);
    v2.push(v.value2);
  }
  return CompiledQuery.raw(
    `INSERT INTO lookup_table_values (${COLUMNS}) SELECT u.id, $1, u.seq, u.v1, u.v2, $2, $2 FROM unnest($3::text[], $4::int[], $5::text[], $6::text[]) AS u(id, seq, v1, v2)`,
    [tableId, now, ids, seqs, v1, v2],
  );
}

/** The seq the next appended value gets. */
export async function nextSeq(db: Db, tableId: string): Promise<number> {
  const row = await db
    .selectFrom('lookupTableValues')
    .select((eb) => eb.fn.max('seq').as('last'))
    .where('tableId', '=', tableId)
    .executeTakeFirst();
  const last = row?.last;
  return last === null || last === undefined ? 0 : Number(last) + 1;
}

export async function deleteAllValues(db: Db, tableId: string): Promise<number> {
  const res = await db.deleteFrom('lookupTableValues').where('tableId', '=', tableId).executeTakeFirst();
  return Number(res.numDeletedRows);
}

export async function countValues(db: Db, tableId: string): Promise<number> {
  const row = await db
    .selectFrom('lookupTableValues')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('tableId', '=', tableId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** One page of a table's values in insertion order. */
export async function listValues(
  db: Db,
  tableId: string,
  page: { limit: number; offset: number },
): Promise<LookupTableValueRow[]> {
  return db
    .selectFrom('lookupTableValues')
    .selectAll()
    .where('tableId', '=', tableId)
    .orderBy('seq')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

/** The lowest and highest seq of a table; undefined when it has no values. */
async function seqBounds(db: Db, tableId: string): Promise<{ first: number; last: number } | undefined> {
  const row = await db
    .selectFrom('lookupTableValues')
    .select((eb) => [eb.fn.min('seq').as('first'), eb.fn.max('seq').as('last')])
    .where('tableId', '=', tableId)
    .executeTakeFirst();
  if (row?.first === null || row?.first === undefined || row.last === null || row.last === undefined) return undefined;
  return { first: Number(row.first), last: Number(row.last) };
}

/**
 * The seq ranges `[from, to)` that cover a table's values, for reading it a page at a time. Pages
 * are bounded ranges of the (table_id, seq) index rather than `seq > ? LIMIT n`: every query then
 * reads at most one page whatever plan the store picks (PostgreSQL without fresh statistics,
 * right after a bulk insert, would otherwise scan and sort the whole rest of the table per page).
 * Values appended while the pages are read are not included.
 */
async function* seqRanges(db: Db, tableId: string, pageSize: number): AsyncGenerator<[number, number]> {
  const bounds = await seqBounds(db, tableId);
  if (!bounds) return;
  for (let from = bounds.first; from <= bounds.last; from += pageSize) yield [from, from + pageSize];
}

/** Every value of a table in insertion order, a page at a time: callers stream them out without holding the table in memory. */
export async function* valuePages(db: Db, tableId: string, pageSize = 5_000): AsyncGenerator<LookupTableValueRow[]> {
  for await (const [from, to] of seqRanges(db, tableId, pageSize)) {
    const rows = await db
      .selectFrom('lookupTableValues')
      .selectAll()
      .where('tableId', '=', tableId)
      .where('seq', '>=', from)
      .where('seq', '<', to)
      .orderBy('seq')
      .execute();
    if (rows.length > 0) yield rows;
  }
}

/** value1 and value2 of every value of a table in insertion order, a page at a time (exports, Map runs). */
export async function* pairPages(
  db: Db,
  tableId: string,
  pageSize = 10_000,
): AsyncGenerator<Array<{ value1: string; value2: string }>> {
  for await (const [from, to] of seqRanges(db, tableId, pageSize)) {
    const rows = await db
      .selectFrom('lookupTableValues')
      .select(['value1', 'value2'])
      .where('tableId', '=', tableId)
      .where('seq', '>=', from)
      .where('seq', '<', to)
      .orderBy('seq')
      .execute();
    if (rows.length > 0) yield rows;
  }
}

export async function getValue(db: Db, tableId: string, id: string): Promise<LookupTableValueRow | undefined> {
  return db
    .selectFrom('lookupTableValues')
    .selectAll()
    .where('tableId', '=', tableId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function insertValue(
  db: Db,
  tableId: string,
  value: NewLookupValue,
  now: string,
): Promise<LookupTableValueRow> {
  const row: LookupTableValueRow = {
    id: uuidV7(),
    tableId,
    seq: await nextSeq(db, tableId),
    value1: value.value1,
    value2: value.value2,
    creationDate: now,
    lastModificationDate: now,
  };
  await db.insertInto('lookupTableValues').values(row).execute();
  return row;
}

export async function updateValue(
  db: Db,
  tableId: string,
  id: string,
  patch: Updateable<LookupTableValuesTable>,
): Promise<boolean> {
  const res = await db
    .updateTable('lookupTableValues')
    .set(patch)
    .where('tableId', '=', tableId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function deleteValue(db: Db, tableId: string, id: string): Promise<boolean> {
  const res = await db
    .deleteFrom('lookupTableValues')
    .where('tableId', '=', tableId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/**
 * The pair whose `by` column equals `value`; among duplicates the one whose other value comes
 * first in code-point order (then the oldest). Served by the lookup indexes: the first entry of a range.
 */
export async function findPair(
  db: Db,
  tableId: string,
  by: 'value1' | 'value2',
  value: string,
): Promise<LookupTableValueRow | undefined> {
  const other = by === 'value1' ? 'value2' : 'value1';
  return db
    .selectFrom('lookupTableValues')
    .selectAll()
    .where('tableId', '=', tableId)
    .where(by, '=', value)
    .orderBy(other)
    .orderBy('seq')
    .limit(1)
    .executeTakeFirst();
}
