import type { PoolClient } from 'pg';
import type { ConnectorRecord } from '../../../src/connectors/sdk.js';
import { qualified, quoteIdent, type PgColumn, type PgTable } from '../catalogue.js';
import { textConverter, type ToText } from '../types.js';
import type { Group } from './groups.js';
import { arrayElement, statementName } from './sql-text.js';

/**
 * The pieces of a keyed statement (a small Upsert, Update, UpdateInsert, Delete) over one run of
 * unique keys of a group: values travel as one text[] per column, unnested and cast to the column
 * types (`v.a<j>::type`), and the statement is prepared under a name of its text.
 */
export interface KeyedStatements {
  /** The group's columns, and those not in the key. */
  cols: PgColumn[];
  setCols: PgColumn[];
  /** The table, qualified and quoted. */
  t: string;
  /** `INSERT INTO t (cols) SELECT … FROM unnest(…)` of every column. */
  insertSql: string;
  /** The key columns equal to the unnested values (alias `t` for the table). */
  match: string;
  /** The text[] literal of each column of `which`, over the records at `idx`. */
  arrays: (idx: number[], which: PgColumn[]) => string[];
  /** `unnest($1::text[], …) AS v(…)` of `which`, `WITH ORDINALITY` (`v.ord`) when asked. */
  unnest: (which: PgColumn[], ordinality: boolean) => string;
  /** The unnested value of a column, cast to its type. */
  cast: (c: PgColumn) => string;
  statement: (sql: string, values: string[]) => Promise<{ rows: { ord: number }[] }>;
  /** Runs a statement returning `v.ord` per affected row: the count of each record at `idx`. */
  counted: (sql: string, which: PgColumn[], idx: number[]) => Promise<number[]>;
}

export function keyedStatements(
  client: PoolClient,
  table: PgTable,
  keys: PgColumn[],
  g: Group,
  batch: readonly ConnectorRecord[],
): KeyedStatements {
  const cols = g.cols;
  const conv = cols.map((c) => textConverter(c.type));
  // Each column travels as one text[] literal built here: pg's own array serialisation
  // (prepareValue and a regular-expression escape per element) costs twice as much.
  const arrays = (idx: number[], which: PgColumn[]): string[] =>
    which.map((c) => {
      const f = conv[cols.indexOf(c)] as ToText;
      let lit = '{';
      for (let k = 0; k < idx.length; k++) {
        if (k) lit += ',';
        lit += arrayElement(f((batch[idx[k] as number] as ConnectorRecord)[c.fullName]));
      }
      return `${lit}}`;
    });
  const t = qualified(table);
  const alias = (c: PgColumn): string => `a${cols.indexOf(c)}`;
  const unnest = (which: PgColumn[], ordinality: boolean): string =>
    `unnest(${which.map((_, i) => `$${i + 1}::text[]`).join(', ')})${ordinality ? ' WITH ORDINALITY' : ''} AS v(${which.map(alias).join(', ')}${ordinality ? ', ord' : ''})`;
  const cast = (c: PgColumn): string => `v.${alias(c)}::${c.sqlType}`;
  const match = keys.map((k) => `t.${quoteIdent(k.name)} = ${cast(k)}`).join(' AND ');
  const setCols = cols.filter((c) => !keys.includes(c));
  const insertSql = `INSERT INTO ${t} (${cols.map((c) => quoteIdent(c.name)).join(', ')}) SELECT ${cols.map(cast).join(', ')} FROM ${unnest(cols, false)}`;

  const statement = async (sql: string, values: string[]): Promise<{ rows: { ord: number }[] }> =>
    client.query<{ ord: number }>({ name: statementName('ferry_w_', sql), text: sql, values });
  const counted = async (sql: string, which: PgColumn[], idx: number[]): Promise<number[]> => {
    const r = await statement(sql, arrays(idx, which));
    const counts = new Array<number>(idx.length).fill(0);
    for (const row of r.rows) counts[Number(row.ord) - 1] = (counts[Number(row.ord) - 1] ?? 0) + 1;
    return counts;
  };
  return { cols, setCols, t, insertSql, match, arrays, unnest, cast, statement, counted };
}
