import type { PoolClient } from 'pg';
import { failed, type ConnectorRecord, type WriteResult } from '../../../src/connectors/sdk.js';
import type { PgColumn, PgTable } from '../catalogue.js';
import { bisect } from './bisect.js';
import type { Group } from './groups.js';
import { keyedStatements } from './keyed.js';

/** Delete: `DELETE … USING unnest(…) WITH ORDINALITY … RETURNING ordinality`; a record no row matches fails NotFound. */
export async function deleteByKey(
  client: PoolClient,
  table: PgTable,
  keys: PgColumn[],
  g: Group,
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
): Promise<void> {
  const { t, match, unnest, counted } = keyedStatements(client, table, keys, g, batch);
  const notFound = (): WriteResult => failed('NotFound', `No record of ${table.fullName} matches the key.`);
  const sql = `DELETE FROM ${t} AS t USING ${unnest(keys, true)} WHERE ${match} RETURNING v.ord`;
  await bisect(
    g.indices,
    (idx) => counted(sql, keys, idx),
    (i) => i,
    results,
    table,
    notFound,
  );
}
