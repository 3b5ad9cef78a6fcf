import type { PoolClient } from 'pg';
import { failed, type WriteResult } from '../../../src/connectors/sdk.js';
import { qualified, quoteIdent, type PgColumn, type PgTable } from '../catalogue.js';
import { recordErrorCode, recordMessage } from '../errors.js';
import { quoteLiteral } from './sql-text.js';

/**
 * The refusal machinery: what a table's own constraints will refuse of a batch, told before the
 * batch is written, so a large Create whose COPY was refused is written in one pass (rowByRow,
 * picksFirst) instead of being halved.
 */

/** A constraint of the table as rowByRow reads it: its columns (and the parent's), in key order. */
export interface ConstraintRow {
  /** CHECK, unique index (primary keys included), foreign key, NOT NULL column; 'l': a column's collation other than its type's (not a constraint). */
  kind: 'c' | 'u' | 'f' | 'n' | 'l';
  /** The constraint's name (CHECK); the collation, qualified and quoted ('l'). */
  name: string | null;
  expr: string | null;
  cols: string[];
  ref: string | null;
  ref_cols: string[] | null;
  /** The parent table of a foreign key. */
  ref_oid: number | null;
}

const REFUSAL_CONSTRAINTS = `
SELECT 'c' AS kind, c.conname::text AS name, pg_get_expr(c.conbin, c.conrelid) AS expr,
       array_to_json(ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o))::text AS cols,
       NULL::text AS ref, NULL::text AS ref_cols, NULL::text AS ref_oid
  FROM pg_constraint c WHERE c.conrelid = $1 AND c.contype = 'c'
UNION ALL
SELECT 'u', NULL, NULL,
       array_to_json(ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n ORDER BY k.o))::text,
       NULL, NULL, NULL
  FROM pg_index i WHERE i.indrelid = $1 AND i.indisunique AND i.indimmediate AND i.indexprs IS NULL AND i.indpred IS NULL
UNION ALL
SELECT 'f', NULL, NULL,
       array_to_json(ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o))::text,
       c.confrelid::regclass::text,
       array_to_json(ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o))::text,
       c.confrelid::text
  FROM pg_constraint c WHERE c.conrelid = $1 AND c.contype = 'f' AND NOT c.condeferrable
UNION ALL
SELECT 'n', NULL, NULL, array_to_json(ARRAY[a.attname::text])::text, NULL, NULL, NULL
  FROM pg_attribute a WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND a.attnotnull
UNION ALL
SELECT 'l', quote_ident(n.nspname) || '.' || quote_ident(co.collname), NULL, array_to_json(ARRAY[a.attname::text])::text, NULL, NULL, NULL
  FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid JOIN pg_collation co ON co.oid = a.attcollation JOIN pg_namespace n ON n.oid = co.collnamespace
 WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND a.attcollation <> t.typcollation`;

/** The table's constraints as they are now (the catalogue, not the metadata cache). */
export async function refusalConstraints(client: PoolClient, table: PgTable): Promise<ConstraintRow[]> {
  return (await client.query<Record<keyof ConstraintRow, string | null>>(REFUSAL_CONSTRAINTS, [table.oid])).rows.map(
    (r): ConstraintRow => ({
      kind: r.kind as ConstraintRow['kind'],
      name: r.name,
      expr: r.expr,
      cols: JSON.parse(r.cols ?? '[]') as string[],
      ref: r.ref,
      ref_cols: r.ref_cols === null ? null : (JSON.parse(r.ref_cols) as string[]),
      ref_oid: r.ref_oid === null ? null : Number(r.ref_oid),
    }),
  );
}

/**
 * What refuses a row of `s` before anything else, of the constraints on the batch's own columns:
 * the first NOT NULL column with a NULL ('n' + its name), else the first false CHECK by name ('c'
 * + its name), else NULL; `terms`, the conditions that make it not NULL; `read`, the columns they read.
 */
export function refusalReason(
  rows: readonly ConstraintRow[],
  cols: readonly PgColumn[],
): { reason: string; terms: string[]; read: Set<string> } {
  const have = new Set(cols.map((c) => c.name));
  const col = (c: string): string => `s.${quoteIdent(c)}`;
  const terms: string[] = [];
  const nulls: string[] = [];
  const checks: { name: string; expr: string }[] = [];
  const read = new Set<string>();
  for (const r of rows) {
    if (r.cols.length === 0 || !r.cols.every((c) => have.has(c))) continue;
    if (r.kind === 'n') {
      terms.push(`${col(r.cols[0] as string)} IS NULL`);
      nulls.push(r.cols[0] as string);
    } else if (r.kind === 'c' && r.expr && r.name) {
      terms.push(`(${r.expr}) IS FALSE`);
      checks.push({ name: r.name, expr: r.expr });
    } else continue;
    for (const c of r.cols) read.add(c);
  }
  const position = new Map(cols.map((c) => [c.name, c.attnum]));
  nulls.sort((a, b) => (position.get(a) ?? 0) - (position.get(b) ?? 0));
  const reasons = [
    ...nulls.map((c) => `WHEN ${col(c)} IS NULL THEN ${quoteLiteral(`n${c}`)}`),
    ...checks
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((c) => `WHEN (${c.expr}) IS FALSE THEN ${quoteLiteral(`c${c.name}`)}`),
  ];
  return { reason: reasons.length > 0 ? `CASE ${reasons.join(' ')} END` : 'NULL::text', terms, read };
}

/**
 * The error rowByRow gives a row its constraints refuse without trying it (`why` as
 * {@link refusalReason} tells it): the server's own words for it.
 */
export function guessedRefusal(table: PgTable, why: string): WriteResult {
  const name = why.slice(1);
  const state = why.startsWith('n') ? '23502' : '23514';
  const message =
    state === '23502'
      ? `null value in column "${name}" of relation "${table.name}" violates not-null constraint`
      : `new row for relation "${table.name}" violates check constraint "${name}"`;
  const field = state === '23502' ? (table.columns.find((c) => c.name === name)?.fullName ?? name) : undefined;
  return failed(recordErrorCode(state) ?? 'DatastoreError', recordMessage(message, null), {
    nativeCode: state,
    ...(field ? { field } : {}),
  });
}

/**
 * A condition on the rows of `stage` (alias `s`, in batch order by `ferry_ord`) that holds for the
 * rows the table's constraints will refuse, read from the catalogue at the time (not the metadata
 * cache): a CHECK that is false, a NULL in a NOT NULL column, a unique key the table already holds
 * or an earlier row of the batch has, a foreign key (not deferrable, MATCH SIMPLE: every column
 * set) with no parent row; and, as `reason`, what refuses a row before anything else: the first
 * NOT NULL column with a NULL ('n' + its name), else the first false CHECK by name ('c' + its
 * name). Only constraints on the batch's own columns count (the others would
 * see defaults the stage does not have); NULLS NOT DISTINCT keys are read as distinct, so their
 * rows are not picked, and the set INSERT tells. The key look-ups are one index probe a row (OFFSET
 * 0 keeps the planner from hashing the whole table instead, which it prefers while the statistics
 * of a table being filled lag behind: each batch would read all the rows written before it).
 */
export async function refusalPredicate(
  client: PoolClient,
  table: PgTable,
  cols: readonly PgColumn[],
  stage: string,
): Promise<{ picks: string; reason: string }> {
  const have = new Set(cols.map((c) => c.name));
  const rows = await refusalConstraints(client, table);
  const col = (c: string): string => `s.${quoteIdent(c)}`;
  const allSet = (cs: readonly string[], alias = 's.'): string =>
    cs.map((c) => `${alias}${quoteIdent(c)} IS NOT NULL`).join(' AND ');
  const { reason, terms } = refusalReason(rows, cols);
  for (const r of rows) {
    if (r.cols.length === 0 || !r.cols.every((c) => have.has(c))) continue;
    if (r.kind === 'u') {
      const same = r.cols.map((c) => `t.${quoteIdent(c)} = ${col(c)}`).join(' AND ');
      terms.push(`(${allSet(r.cols)} AND EXISTS (SELECT 1 FROM ${qualified(table)} t WHERE ${same} OFFSET 0))`);
      const key = r.cols.map(quoteIdent).join(', ');
      terms.push(
        `s.ferry_ord IN (SELECT d.ferry_ord FROM (SELECT ferry_ord, row_number() OVER (PARTITION BY ${key} ORDER BY ferry_ord) AS k FROM ${stage} WHERE ${allSet(r.cols, '')}) d WHERE d.k > 1)`,
      );
    } else if (r.kind === 'f' && r.ref && r.ref_cols?.length === r.cols.length) {
      const parent = r.ref_cols;
      const same = r.cols.map((c, i) => `p.${quoteIdent(parent[i] as string)} = ${col(c)}`).join(' AND ');
      terms.push(`(${allSet(r.cols)} AND NOT EXISTS (SELECT 1 FROM ${r.ref} p WHERE ${same} OFFSET 0))`);
    }
  }
  return {
    picks: terms.length > 0 ? terms.join('\n       OR ') : 'false',
    reason,
  };
}
