import type { PoolClient } from 'pg';
import { failed, type ConnectorRecord, type WriteResult } from '../../../src/connectors/sdk.js';
import { quoteIdent, type PgColumn, type PgTable } from '../catalogue.js';
import { bisect } from './bisect.js';
import type { Group } from './groups.js';
import { keyedStatements } from './keyed.js';

/**
 * Update: `UPDATE … FROM unnest(…) WITH ORDINALITY … RETURNING ordinality`; a record no row
 * matches fails NotFound. UpdateInsert: that UPDATE, then `INSERT … SELECT FROM unnest(…)` for
 * the records it missed.
 */
export async function updateByKey(
  action: 'Update' | 'UpdateInsert',
  client: PoolClient,
  table: PgTable,
  keys: PgColumn[],
  g: Group,
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
): Promise<void> {
  const { cols, setCols, t, insertSql, match, arrays, unnest, cast, statement, counted } = keyedStatements(
    client,
    table,
    keys,
    g,
    batch,
  );
  const notFound = (): WriteResult => failed('NotFound', `No record of ${table.fullName} matches the key.`);
  const upd = [...setCols, ...keys];
  const set = setCols.length
    ? setCols.map((c) => `${quoteIdent(c.name)} = ${cast(c)}`).join(', ')
    : `${quoteIdent((keys[0] as PgColumn).name)} = t.${quoteIdent((keys[0] as PgColumn).name)}`;
  const sql = `UPDATE ${t} AS t SET ${set} FROM ${unnest(upd, true)} WHERE ${match} RETURNING v.ord`;
  await bisect(
    g.indices,
    (idx) => counted(sql, upd, idx),
    (i) => i,
    results,
    table,
    action === 'Update' ? notFound : undefined,
  );
  if (action === 'UpdateInsert') {
    const missing = g.indices.filter((i) => results[i] === undefined);
    if (missing.length)
      await bisect(
        missing,
        async (idx) => void (await statement(insertSql, arrays(idx, cols))),
        (i) => i,
        results,
        table,
      );
  }
}
