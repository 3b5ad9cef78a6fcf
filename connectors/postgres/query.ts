import type { Pool, PoolConfig } from 'pg';
import {
  ConnectorError,
  filterToSql,
  uniqueFullNames,
  type CallContext,
  type Filter,
  type FilterValue,
  type OrderBy,
  type QueryOptions,
  type RecordBatch,
  type Value,
} from '../../src/connectors/sdk.js';
import { qualified, quoteIdent, type PgColumn, type PgTable } from './catalogue.js';
import { checkout, cancelOnAbort, cursorRows } from './cursor.js';
import { callError } from './errors.js';

export function columnOf(table: PgTable, field: string): PgColumn {
  const c = table.columns.find((x) => x.fullName === field);
  if (!c) throw new ConnectorError('FieldNotFound', `The entity ${table.fullName} has no field ${field}.`);
  return c;
}

/** The SELECT of a query (columns aliased to fullNames) and its parameters. */
export function selectSql(
  table: PgTable,
  filter: Filter | undefined,
  options: QueryOptions,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const columns = options.fields ? options.fields.map((f) => columnOf(table, f)) : table.columns;
  const dialect = {
    column: (f: string) => quoteIdent(columnOf(table, f).name),
    param: (v: FilterValue, f: string, kind: 'value' | 'pattern') => {
      params.push(v);
      // Patterns are text whatever the column; values take the column's type for the comparison.
      return kind === 'pattern' ? `$${params.length}::text` : `$${params.length}::${columnOf(table, f).sqlType}`;
    },
    like: (col: string, p: string) => `${col}::text LIKE ${p} ESCAPE '\\'`,
  };
  const where: string[] = [];
  if (filter) where.push(filterToSql(filter, dialect));
  let order: OrderBy[] = options.orderBy ?? [];
  if (options.netChange) {
    where.push(filterToSql({ op: '>=', field: options.netChange.field, value: options.netChange.since }, dialect));
    order = [{ field: options.netChange.field, direction: 'asc' }];
  }
  let sql = `SELECT ${columns.map((c) => `${quoteIdent(c.name)} AS ${quoteIdent(c.fullName)}`).join(', ')} FROM ${qualified(table)}`;
  if (where.length) sql += ` WHERE ${where.join(' AND ')}`;
  if (order.length)
    sql += ` ORDER BY ${order.map((o) => `${quoteIdent(columnOf(table, o.field).name)} ${o.direction === 'desc' ? 'DESC' : 'ASC'} NULLS LAST`).join(', ')}`;
  if (options.limit !== undefined) {
    params.push(options.limit);
    sql += ` LIMIT $${params.length}`;
  }
  return { sql, params };
}

export function queryTable(
  pool: Pool,
  config: PoolConfig,
  table: PgTable,
  filter: Filter | undefined,
  options: QueryOptions,
  ctx: CallContext,
): AsyncGenerator<RecordBatch, void, undefined> {
  const { sql, params } = selectSql(table, filter, options);
  return cursorRows(pool, config, sql, params, options.batchSize, ctx);
}

const CURSOR_STATEMENT = /^\s*(?:\(\s*)*(?:SELECT|VALUES|TABLE|WITH)\b/i;

/**
 * Native query: a reading statement (SELECT, VALUES, TABLE, WITH) streams through a cursor; other
 * statements run once and yield their RETURNING rows, or one record `{ affected }`. Column names
 * become fullNames (unique). A WITH that modifies data cannot be a cursor: it is run once.
 */
export async function* nativeRows(
  pool: Pool,
  config: PoolConfig,
  statement: string,
  params: readonly Value[],
  batchSize: number,
  ctx: CallContext,
): AsyncGenerator<RecordBatch, void, undefined> {
  if (CURSOR_STATEMENT.test(statement)) {
    let yielded = false;
    try {
      for await (const batch of renamed(
        cursorRows(pool, config, statement.replace(/;\s*$/, ''), [...params], batchSize, ctx),
      )) {
        yielded = true;
        yield batch;
      }
      return;
    } catch (err) {
      // 0A000: DECLARE refuses a data-modifying WITH; anything else is the statement's own error.
      if (yielded || (err as { nativeCode?: string }).nativeCode !== '0A000') throw err;
    }
  }
  const { client, release } = await checkout(pool, ctx);
  const stopCancel = cancelOnAbort(config, client, ctx);
  try {
    const r = await client.query({ text: statement, values: [...params], rowMode: 'array' });
    if (!r.fields?.length) {
      yield [{ affected: r.rowCount ?? 0 }];
      return;
    }
    const names = uniqueFullNames(r.fields.map((f) => f.name));
    const rows = r.rows as Value[][];
    for (let i = 0; i < rows.length; i += batchSize) {
      yield rows.slice(i, i + batchSize).map((row) => Object.fromEntries(names.map((n, j) => [n, row[j] ?? null])));
    }
  } catch (err) {
    throw callError(err, 'The native query failed', client);
  } finally {
    const cancelled = await stopCancel();
    release(cancelled ? new Error('cancelled') : undefined);
  }
}

/** Cursor rows keyed by column name → keyed by fullName. */
async function* renamed(
  source: AsyncGenerator<RecordBatch, void, undefined>,
): AsyncGenerator<RecordBatch, void, undefined> {
  let names: Map<string, string> | undefined;
  for await (const batch of source) {
    if (!names) {
      const keys = Object.keys(batch[0] ?? {});
      const full = uniqueFullNames(keys);
      names = keys.some((k, i) => k !== full[i]) ? new Map(keys.map((k, i) => [k, full[i] as string])) : new Map();
    }
    const map = names;
    yield map.size === 0
      ? batch
      : batch.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [map.get(k) ?? k, v])));
  }
}
