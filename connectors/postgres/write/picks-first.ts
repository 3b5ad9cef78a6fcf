import type { PoolClient } from 'pg';
import type { WriteResult } from '../../../src/connectors/sdk.js';
import { qualified, quoteIdent, type PgColumn, type PgTable } from '../catalogue.js';
import { connectionLost } from '../errors.js';
import { guessedRefusal, refusalConstraints, refusalReason } from './refusal.js';
import { arrayElement, statementName } from './sql-text.js';
import type { WriterState } from './state.js';

/**
 * A large Create batch for the picks ({@link picksFirst}): its table and columns, the text of
 * column j of row k, and the COPY of every row but those `skip` marks. `tried`: the whole batch was
 * just refused, so a pick of none would be refused again.
 */
export interface PickBatch {
  table: PgTable;
  cols: readonly PgColumn[];
  rows: number;
  text: (j: number, k: number) => string | null;
  copyRest: (client: PoolClient, sql: string, skip: Uint8Array) => Promise<boolean>;
  tried: boolean;
}

/**
 * A Create batch whose COPY failed for a record's sake (or that a back-off sends here), written
 * with its picks made first, from only the columns its NOT NULL and CHECK constraints read: one
 * statement sends those columns of every row as text arrays cast to the column types and returns
 * the rows they refuse, with the reason {@link refusalReason} tells (the one rowByRow gives them
 * without trying them); then one COPY writes every other row straight into the table. No stage
 * of the whole batch, no INSERT … SELECT. Returns the refused rows' results by position (`k`),
 * every other row is written; or undefined when the batch is rowByRow's to write, nothing written:
 * the constraints tell nothing, or the COPY failed (a key the table or the batch holds, a missing
 * parent, a trigger …), or a later row has the key of a refused one (rowByRow tries it on its own
 * after the others), or a CHECK reads a column whose cast could cut a value the COPY refuses, or
 * the table refers to itself (rowByRow tries such rows one by one, in order), or a value cannot
 * be cast. Keys held by the table and missing parents are not looked up here (a probe per row
 * costs as much as the COPY): a row that has one fails the COPY, and rowByRow writes the batch.
 * `tried`: the whole batch was just refused, so a pick of none would be refused again.
 */
export async function picksFirst(
  w: WriterState,
  client: PoolClient,
  job: PickBatch,
  inTransaction: boolean,
): Promise<Map<number, WriteResult> | undefined> {
  if (!w.picksFirst) return undefined;
  if (inTransaction) await client.query('SAVEPOINT ferry_picks');
  let out: Map<number, WriteResult> | undefined;
  try {
    out = await picksThenCopy(client, job);
  } catch (err) {
    if (inTransaction) {
      await client.query('ROLLBACK TO SAVEPOINT ferry_picks');
      await client.query('RELEASE SAVEPOINT ferry_picks');
    }
    if (connectionLost(err)) throw err;
    return undefined;
  }
  if (inTransaction)
    await client.query(
      out ? 'RELEASE SAVEPOINT ferry_picks' : 'ROLLBACK TO SAVEPOINT ferry_picks; RELEASE SAVEPOINT ferry_picks',
    );
  return out;
}

async function picksThenCopy(
  client: PoolClient,
  { table, cols, rows, text, copyRest, tried }: PickBatch,
): Promise<Map<number, WriteResult> | undefined> {
  const constraints = await refusalConstraints(client, table);
  const index = new Map(cols.map((c, j) => [c.name, j]));
  const considered = constraints.filter((r) => r.cols.length > 0 && r.cols.every((c) => index.has(c)));
  if (considered.some((r) => r.kind === 'f' && r.ref_oid === table.oid)) return undefined;
  const { reason, terms, read } = refusalReason(considered, cols);
  if (terms.length === 0) return undefined;
  const checked = new Set(considered.flatMap((r) => (r.kind === 'c' ? r.cols : [])));
  const sent = cols.filter((c) => read.has(c.name));
  for (const c of sent) {
    if (!checked.has(c.name)) continue;
    // An explicit cast cuts a text too long for its type, which COPY refuses; the CHECK must not see it cut.
    if (c.typname === 'bit' || c.typname === 'varbit') return undefined;
    if ((c.typname === 'varchar' || c.typname === 'bpchar') && c.size > 0) {
      const j = index.get(c.name) as number;
      for (let k = 0; k < rows; k++) if ((text(j, k)?.length ?? 0) > c.size) return undefined;
    }
  }
  const collation = new Map(
    constraints.filter((r) => r.kind === 'l' && r.name).map((r) => [r.cols[0] as string, r.name as string]),
  );
  const arrays = sent.map((c) => {
    const j = index.get(c.name) as number;
    let lit = '{';
    for (let k = 0; k < rows; k++) {
      if (k) lit += ',';
      lit += arrayElement(text(j, k));
    }
    return `${lit}}`;
  });
  const cast = sent.map(
    (c, i) =>
      `x.c${i}::${c.sqlType}${collation.has(c.name) ? ` COLLATE ${collation.get(c.name) as string}` : ''} AS ${quoteIdent(c.name)}`,
  );
  const sql = `WITH s0 AS (SELECT ${cast.join(', ')}, x.ferry_ord FROM unnest(${sent.map((_, i) => `$${i + 1}::text[]`).join(', ')}) WITH ORDINALITY AS x(${sent.map((_, i) => `c${i}`).join(', ')}, ferry_ord))
SELECT s.ferry_ord::int AS ord, ${reason} AS why FROM s0 s WHERE ${terms.join(' OR ')}`;
  const name = statementName('ferry_p_', sql);
  const picked = (await client.query<{ ord: number; why: string | null }>({ name, text: sql, values: arrays })).rows;
  if (tried && picked.length === 0) return undefined;
  const skip = new Uint8Array(rows);
  const out = new Map<number, WriteResult>();
  // The rows one constraint refuses share one result: the Map's run then describes the refusal once, not once a row.
  const refusals = new Map<string, WriteResult>();
  for (const p of picked) {
    const k = Number(p.ord) - 1;
    if (p.why === null || k < 0 || k >= rows) return undefined;
    skip[k] = 1;
    let result = refusals.get(p.why);
    if (!result) refusals.set(p.why, (result = guessedRefusal(table, p.why)));
    out.set(k, result);
  }
  // rowByRow picks a row whose key an earlier row has, and tries it on its own after the others:
  // when that earlier row is refused, this row goes in where rowByRow puts it (same text, same key).
  for (const u of considered) {
    if (u.kind !== 'u' || picked.length === 0) continue;
    const js = u.cols.map((c) => index.get(c) as number);
    const refusedKeys = new Set<string>();
    for (let k = 0; k < rows; k++) {
      let key = '';
      let set = true;
      for (const j of js) {
        const v = text(j, k);
        if (v === null) set = false;
        key += `${v ?? ''}\u0000`;
      }
      if (!set) continue;
      if (skip[k]) refusedKeys.add(key);
      else if (refusedKeys.has(key)) return undefined;
    }
  }
  if (
    out.size < rows &&
    !(await copyRest(
      client,
      `COPY ${qualified(table)} (${cols.map((c) => quoteIdent(c.name)).join(', ')}) FROM STDIN`,
      skip,
    ))
  )
    return undefined;
  return out;
}
