import type { PoolConnection, ResultSetHeader } from 'mysql2';
import {
  failed,
  succeeded,
  type ConnectorRecord,
  type WriteAction,
  type WriteResult,
} from '../../src/connectors/sdk.js';
import { quoteIdent, type MariaColumn, type MariaTable } from './catalogue.js';
import { recordErrorCode, recordMessage, serverErrno } from './errors.js';
import { run } from './pool.js';
import { assignment, rowLiteral } from './sql-text.js';

/**
 * Update, Delete and Update/Insert: one statement per record (two for Update/Insert), sent in
 * chunks of many statements per round trip, each chunk one transaction. The server answers each
 * statement's affected rows, which become the records' results. A chunk that the server refuses
 * part-way is rolled back and its records are sent again one by one, so that exactly the refused
 * records fail, in place.
 *
 * Update/Insert is `UPDATE …; INSERT … SELECT … FROM DUAL WHERE ROW_COUNT() = 0`: the insert runs
 * only when the update found nothing, on the server, in order, so a key repeated in a batch sees
 * the effect of the record before it.
 */

/** Most statements and bytes of SQL per chunk. */
const CHUNK_RECORDS = 1000;
const CHUNK_BYTES = 1 << 20;

/** A record's statements: one, or two for Update/Insert. */
interface RecordSql {
  index: number;
  sql: string[];
}

function whereKeys(keys: readonly MariaColumn[], rec: ConnectorRecord): string | WriteResult {
  const parts: string[] = [];
  for (const k of keys) {
    const v = assignment(k, rec[k.fullName]);
    if (typeof v !== 'string') return v;
    parts.push(`${quoteIdent(k.name)} = ${v}`);
  }
  return parts.join(' AND ');
}

/** The statements of one record, or its failed result. */
export function recordStatements(
  action: Exclude<WriteAction, 'Create' | 'Upsert'>,
  table: MariaTable,
  cols: readonly MariaColumn[],
  keys: readonly MariaColumn[],
  rec: ConnectorRecord,
): string[] | WriteResult {
  const where = whereKeys(keys, rec);
  if (typeof where !== 'string') return where;
  const name = quoteIdent(table.name);
  if (action === 'Delete') return [`DELETE FROM ${name} WHERE ${where}`];
  const keyNames = new Set(keys.map((k) => k.name));
  const sets: string[] = [];
  for (const c of cols) {
    if (keyNames.has(c.name)) continue;
    const v = assignment(c, rec[c.fullName]);
    if (typeof v !== 'string') return v;
    sets.push(`${quoteIdent(c.name)} = ${v}`);
  }
  const first = keys[0] as MariaColumn;
  // A record of key fields only still finds its row (the affected count is of rows found).
  if (!sets.length) sets.push(`${quoteIdent(first.name)} = ${quoteIdent(first.name)}`);
  const update = `UPDATE ${name} SET ${sets.join(', ')} WHERE ${where}`;
  if (action === 'Update') return [update];
  // Update/Insert: the key fields belong in the inserted row even when the record lacks them.
  const insertCols = [...cols, ...keys.filter((k) => !cols.includes(k))];
  const values = rowLiteral(rec, insertCols);
  if (typeof values !== 'string') return values;
  return [
    update,
    `INSERT INTO ${name} (${insertCols.map((c) => quoteIdent(c.name)).join(', ')}) SELECT ${values.slice(1, -1)} FROM DUAL WHERE ROW_COUNT() = 0`,
  ];
}

/** The result of a record from its statements' headers. */
function resultOf(action: WriteAction, headers: ResultSetHeader[]): WriteResult {
  const found = headers[0]?.affectedRows ?? 0;
  if (found > 0) return succeeded(found);
  if (action === 'UpdateInsert' || action === 'Upsert') return succeeded(headers[1]?.affectedRows ?? 0);
  return failed('NotFound', 'No record matches the key.');
}

const asHeaders = (r: unknown): ResultSetHeader[] => (Array.isArray(r) ? r : [r]) as ResultSetHeader[];

/**
 * Runs the records' statements in chunks (one transaction each when the table has transactions),
 * falling back to one record at a time for a chunk the server refuses for a record's sake.
 */
export async function runKeyed(
  conn: PoolConnection,
  action: WriteAction,
  table: MariaTable,
  records: RecordSql[],
  results: WriteResult[],
): Promise<void> {
  let start = 0;
  while (start < records.length) {
    let end = start;
    let bytes = 0;
    while (end < records.length && end - start < CHUNK_RECORDS && bytes < CHUNK_BYTES) {
      for (const s of (records[end] as RecordSql).sql) bytes += s.length + 1;
      end++;
    }
    const chunk = records.slice(start, end);
    start = end;
    if (!table.transactional || chunk.length === 1) {
      for (const r of chunk) await runOne(conn, action, r, results);
      continue;
    }
    const sql = `START TRANSACTION;${chunk.map((r) => r.sql.join(';')).join(';')};COMMIT`;
    let outcome: unknown;
    try {
      outcome = await run(conn, sql);
    } catch (err) {
      if (serverErrno(err) === undefined || !recordErrorCode(err)) {
        await run(conn, 'ROLLBACK').catch(() => undefined);
        throw err;
      }
      await run(conn, 'ROLLBACK');
      for (const r of chunk) await runOne(conn, action, r, results);
      continue;
    }
    // Headers: START TRANSACTION, each record's statements, COMMIT.
    const headers = asHeaders(outcome);
    let h = 1;
    for (const r of chunk) {
      results[r.index] = resultOf(action, headers.slice(h, h + r.sql.length));
      h += r.sql.length;
    }
  }
}

async function runOne(conn: PoolConnection, action: WriteAction, r: RecordSql, results: WriteResult[]): Promise<void> {
  try {
    results[r.index] = resultOf(action, asHeaders(await run(conn, r.sql.join(';'))));
  } catch (err) {
    const code = recordErrorCode(err);
    if (!code) throw err;
    results[r.index] = failed(code, recordMessage(err), { nativeCode: String(serverErrno(err)) });
  }
}
