import type { PoolClient } from 'pg';
import { failed, OK_ONE, type WriteResult } from '../../../src/connectors/sdk.js';
import { qualified, quoteIdent, type PgTable } from '../catalogue.js';
import { recordErrorCode, recordMessage } from '../errors.js';
import type { Group } from './groups.js';
import { refusalPredicate } from './refusal.js';
import { quoteLiteral } from './sql-text.js';
import type { WriterState } from './state.js';

/**
 * A Create batch whose COPY failed for a record's sake, written in one server round trip instead
 * of by halving it (which costs about 2·f·log2(n/f) statements for f failing records, and f is
 * often large: a constraint many rows break): the batch is COPYed into a temporary stage without
 * constraints. The table's own constraints then pick, set-based, the rows they will refuse
 * ({@link refusalPredicate}: CHECK, NOT NULL, unique keys against the table and earlier rows of
 * the batch, foreign keys); the others go in with one INSERT … SELECT, and only the picked ones
 * are tried one by one, each in its own subtransaction, keeping the error the server gives. A
 * pick is only a guess that saves work: a picked row the server takes is written, and when the
 * set INSERT fails for something the constraints did not tell (a trigger, a domain, an exclusion
 * constraint) every row is tried one by one. Every record gets its own result, in order. A stage
 * COPY that fails (a value the column type itself refuses) throws, and the caller halves the
 * batch instead.
 */
export async function rowByRow(
  w: WriterState,
  client: PoolClient,
  table: PgTable,
  g: Group,
  stageCopy: (client: PoolClient, sql: string) => Promise<unknown>,
  results: WriteResult[],
  inTransaction: boolean,
): Promise<number> {
  const n = ++w.rowStages;
  const stage = quoteIdent(`ferry_rows_${n}`);
  const errors = quoteIdent(`ferry_row_errors_${n}`);
  const cols = g.cols.map((c) => quoteIdent(c.name));
  await client.query(inTransaction ? 'SAVEPOINT ferry_rows' : 'BEGIN');
  try {
    // CREATE … AS takes the column types without their NOT NULL, CHECK or key constraints.
    await client.query(
      `CREATE TEMP TABLE ${stage} ON COMMIT DROP AS SELECT ${cols.join(', ')} FROM ${qualified(table)} WITH NO DATA`,
    );
    await client.query(`ALTER TABLE ${stage} ADD COLUMN ferry_ord bigserial`);
    await client.query(
      `CREATE TEMP TABLE ${errors} (ord bigint, state text, message text, detail text, col text) ON COMMIT DROP`,
    );
    await stageCopy(client, `COPY ${stage} (${cols.join(', ')}) FROM STDIN`);
    const picked = quoteIdent(`ferry_row_picks_${n}`);
    const refusal = await refusalPredicate(client, table, g.cols, stage);
    const tryEach = (rows: string): string => `FOR r IN ${rows} LOOP
    BEGIN
      INSERT INTO ${qualified(table)} (${cols.join(', ')}) VALUES (${cols.map((c) => `r.${c}`).join(', ')});
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL, col = COLUMN_NAME;
      INSERT INTO ${errors} VALUES (r.ferry_ord, st, msg, det, col);
    END;
  END LOOP;`;
    const relname = quoteLiteral(table.name);
    // The picks' own plans cost enough to start the JIT compiler, which takes longer than they run.
    await client.query('SET LOCAL jit = off');
    await client.query(`DO $ferry$
DECLARE r record; st text; msg text; det text; col text; guessed boolean := true;
BEGIN
BEGIN
  CREATE TEMP TABLE ${picked} ON COMMIT DROP AS SELECT s.ferry_ord AS ord, ${refusal.reason} AS why FROM ${stage} s WHERE ${refusal.picks};
  INSERT INTO ${qualified(table)} (${cols.join(', ')})
    SELECT ${cols.map((c) => `s.${c}`).join(', ')} FROM ${stage} s
     WHERE NOT EXISTS (SELECT 1 FROM ${picked} p WHERE p.ord = s.ferry_ord) ORDER BY s.ferry_ord;
EXCEPTION WHEN OTHERS THEN
  guessed := false;
END;
IF guessed THEN
  -- A NULL in a NOT NULL column and a false CHECK are checked before anything else, in that
  -- order (columns by position, CHECKs by name): such a row gets the error the server would give.
  INSERT INTO ${errors}
    SELECT ord, CASE WHEN left(why, 1) = 'n' THEN '23502' ELSE '23514' END,
           CASE WHEN left(why, 1) = 'n' THEN format('null value in column "%s" of relation "%s" violates not-null constraint', substr(why, 2), ${relname})
                ELSE format('new row for relation "%s" violates check constraint "%s"', ${relname}, substr(why, 2)) END,
           NULL, CASE WHEN left(why, 1) = 'n' THEN substr(why, 2) END
      FROM ${picked} WHERE why IS NOT NULL;
  ${tryEach(`SELECT s.* FROM ${stage} s JOIN ${picked} p ON p.ord = s.ferry_ord WHERE p.why IS NULL ORDER BY s.ferry_ord`)}
ELSE
  ${tryEach(`SELECT * FROM ${stage} ORDER BY ferry_ord`)}
END IF;
END $ferry$`);
    const refused = (
      await client.query<{ ord: string; state: string; message: string; detail: string | null; col: string | null }>(
        `SELECT ord, state, message, detail, col FROM ${errors}`,
      )
    ).rows;
    await client.query(inTransaction ? 'RELEASE SAVEPOINT ferry_rows' : 'COMMIT');
    for (const i of g.indices) results[i] = OK_ONE;
    for (const e of refused) {
      const i = g.indices[Number(e.ord) - 1];
      if (i === undefined) continue;
      const field = e.col ? (table.columns.find((c) => c.name === e.col)?.fullName ?? e.col) : undefined;
      results[i] = failed(recordErrorCode(e.state) ?? 'DatastoreError', recordMessage(e.message, e.detail), {
        nativeCode: e.state,
        ...(field ? { field } : {}),
      });
    }
    return refused.length;
  } catch (err) {
    await client.query(inTransaction ? 'ROLLBACK TO SAVEPOINT ferry_rows' : 'ROLLBACK').catch(() => undefined);
    if (inTransaction) await client.query('RELEASE SAVEPOINT ferry_rows').catch(() => undefined);
    throw err;
  }
}
