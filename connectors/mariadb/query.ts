import type { FieldPacket, Pool, PoolOptions } from 'mysql2';
import {
  ConnectorError,
  filterToSql,
  recordMaker,
  uniqueFullNames,
  INVALID,
  type CallContext,
  type Filter,
  type FilterValue,
  type OrderBy,
  type QueryOptions,
  type RecordBatch,
  type Value,
} from '../../src/connectors/sdk.js';
import { quoteIdent, type MariaColumn, type MariaTable } from './catalogue.js';
import { callError } from './errors.js';
import { checkout, killOnAbort, run, streamRows } from './pool.js';
import { readUntyped, readValue, writeText } from './types.js';

export function columnOf(table: MariaTable, field: string): MariaColumn {
  const c = table.columns.find((x) => x.fullName === field);
  if (!c) throw new ConnectorError('FieldNotFound', `The entity ${table.fullName} has no field ${field}.`);
  return c;
}

/**
 * A filter's literal as the server compares it with the column: datetimes in UTC wall time,
 * booleans as 1/0, integers and decimals cast so that a big integer compares exactly (a string
 * compared with a number is compared as a double).
 */
function bind(c: MariaColumn, v: FilterValue, params: unknown[]): string {
  const t = writeText(c.type, v);
  if (t === INVALID)
    throw new ConnectorError(
      'InvalidQuery',
      `The value ${JSON.stringify(v)} is not a value of the field ${c.fullName}.`,
    );
  params.push(t);
  if (t === null) return '?';
  if (c.type === 'integer') return 'CAST(? AS SIGNED)';
  if (c.type === 'decimal') return 'CAST(? AS DECIMAL(65,30))';
  if (c.type === 'double') return 'CAST(? AS DOUBLE)';
  if (c.type === 'boolean') return 'CAST(? AS SIGNED)';
  return '?';
}

/**
 * Text compares as the other Connectors do, by character, case-sensitively: the column's bytes
 * (`BINARY`) rather than its collation, which is usually case-insensitive.
 */
const textual = (c: MariaColumn): boolean => c.type === 'string' || c.type === 'json' || c.type === 'guid';

/** The SELECT of a query (columns in the order of `columns`) and its parameters. */
export function selectSql(
  table: MariaTable,
  filter: Filter | undefined,
  options: QueryOptions,
): { sql: string; params: unknown[]; columns: MariaColumn[] } {
  const params: unknown[] = [];
  const columns = options.fields ? options.fields.map((f) => columnOf(table, f)) : table.columns;
  const dialect = {
    column: (f: string) => {
      const c = columnOf(table, f);
      return textual(c) ? `BINARY ${quoteIdent(c.name)}` : quoteIdent(c.name);
    },
    param: (v: FilterValue, f: string, kind: 'value' | 'pattern') => {
      if (kind === 'pattern') {
        params.push(String(v));
        return '?';
      }
      return bind(columnOf(table, f), v, params);
    },
    like: (col: string, p: string) =>
      `${col.startsWith('BINARY ') ? col : `BINARY CAST(${col} AS CHAR)`} LIKE BINARY ${p} ESCAPE '\\\\'`,
  };
  const where: string[] = [];
  if (filter) where.push(filterToSql(filter, dialect));
  let order: OrderBy[] = options.orderBy ?? [];
  if (options.netChange) {
    where.push(filterToSql({ op: '>=', field: options.netChange.field, value: options.netChange.since }, dialect));
    order = [{ field: options.netChange.field, direction: 'asc' }];
  }
  let sql = `SELECT ${columns.map((c) => quoteIdent(c.name)).join(', ')} FROM ${quoteIdent(table.name)}`;
  if (where.length) sql += ` WHERE ${where.join(' AND ')}`;
  // NULLs last, as the other Connectors order them.
  if (order.length)
    sql += ` ORDER BY ${order
      .map((o) => {
        const col = quoteIdent(columnOf(table, o.field).name);
        return `${col} IS NULL, ${col} ${o.direction === 'desc' ? 'DESC' : 'ASC'}`;
      })
      .join(', ')}`;
  if (options.limit !== undefined) {
    params.push(options.limit);
    sql += ' LIMIT ?';
  }
  return { sql, params, columns };
}

export async function* queryTable(
  pool: Pool,
  poolOptions: PoolOptions,
  table: MariaTable,
  filter: Filter | undefined,
  options: QueryOptions,
  ctx: CallContext,
): AsyncGenerator<RecordBatch, void, undefined> {
  const { sql, params, columns } = selectSql(table, filter, options);
  const make = recordMaker(columns.map((c) => c.fullName));
  const kinds = columns.map((c) => c.readKind);
  // Most columns need no conversion: only those that do are visited per row.
  const convert = kinds.flatMap((k, i) => (k === 'plain' ? [] : [i]));
  const plainBuffers = kinds.flatMap((k, i) => (k === 'plain' ? [i] : []));
  let sent = 0;
  for await (const batch of streamRows(pool, poolOptions, sql, params, options.batchSize, ctx)) {
    const out: RecordBatch = new Array(batch.length);
    for (let r = 0; r < batch.length; r++) {
      const row = batch[r] as unknown[];
      for (const i of convert) row[i] = readValue(kinds[i] as (typeof kinds)[number], row[i]);
      for (const i of plainBuffers) if (Buffer.isBuffer(row[i])) row[i] = row[i].toString('utf8');
      out[r] = make(row as Value[]);
    }
    sent += out.length;
    ctx.progress({ records: sent });
    yield out;
  }
}

/** Statements that return rows and stream: the rest run once and answer `{ affected }`. */
const ROW_STATEMENT = /^\s*(?:\(\s*)*(?:SELECT|VALUES|TABLE|WITH|SHOW|DESCRIBE|DESC|EXPLAIN)\b/i;

/**
 * Native query with `?` parameters: a statement that returns rows streams them (columns named by
 * unique fullNames); any other runs once and yields one record `{ affected }`.
 */
export async function* nativeRows(
  pool: Pool,
  poolOptions: PoolOptions,
  statement: string,
  params: readonly Value[],
  batchSize: number,
  ctx: CallContext,
): AsyncGenerator<RecordBatch, void, undefined> {
  const sql = statement.replace(/;\s*$/, '');
  if (ROW_STATEMENT.test(sql)) {
    let make: ((values: ArrayLike<Value>) => Record<string, Value>) | undefined;
    const onFields = (fields: FieldPacket[]): void => {
      make = recordMaker(uniqueFullNames(fields.map((f) => f.name)));
    };
    for await (const batch of streamRows(pool, poolOptions, sql, [...params], batchSize, ctx, onFields)) {
      const m = make ?? recordMaker([]);
      yield batch.map((row) => m(row.map(readUntyped)));
    }
    return;
  }
  const { conn, release } = await checkout(pool, ctx);
  const stopKill = killOnAbort(poolOptions, conn, ctx);
  let failed = false;
  try {
    const r = (await run(conn, { sql, values: [...params] })) as { affectedRows?: number } | unknown[];
    const results = Array.isArray(r) ? r : [r];
    const affected = results.reduce<number>(
      (n, x) =>
        n +
        (typeof (x as { affectedRows?: unknown }).affectedRows === 'number'
          ? (x as { affectedRows: number }).affectedRows
          : 0),
      0,
    );
    yield [{ affected }];
  } catch (err) {
    failed = true;
    throw callError(err, 'The native query failed');
  } finally {
    const killed = await stopKill();
    release(killed || failed);
  }
}
