import {
  ConnectorError,
  filterToSql,
  INVALID,
  type Filter,
  type FilterValue,
  type OrderBy,
  type QueryOptions,
} from '../../src/connectors/sdk.js';
import { quoteIdent, type SqliteColumn, type SqliteTable } from './catalogue.js';
import { writeValue } from './types.js';

export type Bind = number | bigint | string | Buffer | null;

/** A column of a table by fullName, or FieldNotFound. */
export function columnOf(table: SqliteTable, field: string): SqliteColumn {
  const c = table.columns.find((x) => x.fullName === field);
  if (!c) throw new ConnectorError('FieldNotFound', `The entity ${table.fullName} has no field ${field}.`);
  return c;
}

/** Datetimes are compared and ordered by instant (julianday), whatever their stored text form. */
function expr(c: SqliteColumn): string {
  return c.type === 'datetime' ? `julianday(${quoteIdent(c.name)})` : quoteIdent(c.name);
}

/** The SELECT of a query, with its bound parameters. */
export function selectSql(
  table: SqliteTable,
  filter: Filter | undefined,
  options: QueryOptions,
): { sql: string; params: Bind[]; columns: SqliteColumn[] } {
  const params: Bind[] = [];
  const columns = options.fields ? options.fields.map((f) => columnOf(table, f)) : table.columns;
  const bind = (v: FilterValue, field: string, kind: 'value' | 'pattern'): string => {
    const c = columnOf(table, field);
    if (kind === 'pattern') params.push(v === null ? null : typeof v === 'boolean' ? (v ? 1 : 0) : v);
    else {
      const w = writeValue(c.type, v);
      params.push(w === INVALID ? null : w);
    }
    return '?';
  };
  const dialect = {
    column: (f: string) => quoteIdent(columnOf(table, f).name),
    param: bind,
    compare: (f: string, col: string, op: string, p: string) =>
      columnOf(table, f).type === 'datetime' ? `julianday(${col}) ${op} julianday(${p})` : `${col} ${op} ${p}`,
  };
  const where: string[] = [];
  if (filter) where.push(filterToSql(filter, dialect));
  let order: OrderBy[] = options.orderBy ?? [];
  if (options.netChange) {
    const nc = options.netChange;
    where.push(filterToSql({ op: '>=', field: nc.field, value: nc.since }, dialect));
    order = [{ field: nc.field, direction: 'asc' }];
  }
  let sql = `SELECT ${columns.map((c) => quoteIdent(c.name)).join(', ')} FROM ${quoteIdent(table.name)}`;
  if (where.length) sql += ` WHERE ${where.join(' AND ')}`;
  if (order.length)
    sql += ` ORDER BY ${order.map((o) => `${expr(columnOf(table, o.field))} ${o.direction === 'desc' ? 'DESC' : 'ASC'} NULLS LAST`).join(', ')}`;
  if (options.limit !== undefined) {
    sql += ' LIMIT ?';
    params.push(options.limit);
  }
  return { sql, params, columns };
}
