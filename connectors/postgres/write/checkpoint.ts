import type { PoolClient } from 'pg';
import {
  CHECKPOINT_TABLE,
  throwIfAborted,
  type CallContext,
  type Checkpoint,
  type ConnectorRecord,
  type WriteResult,
} from '../../../src/connectors/sdk.js';
import { quoteIdent, type PgTable } from '../catalogue.js';
import { checkout } from '../cursor.js';
import { callError, sqlState, connectionLost } from '../errors.js';
import { createByCopy } from './create.js';
import type { Group } from './groups.js';
import type { WriterState } from './state.js';

/**
 * The checkpoint table (`CHECKPOINT_TABLE` in the Connection's targetSchema): a caller's
 * checkpoint saved in the transaction of the Create batch it describes, so it commits with the
 * records or not at all.
 */

const checkpointName = (w: WriterState): string => `${quoteIdent(w.schema)}.${quoteIdent(CHECKPOINT_TABLE)}`;

/** The checkpoint saved under `key` (by a Create batch with `checkpoint`), or null. */
export async function readCheckpoint(w: WriterState, key: string, ctx: CallContext): Promise<string | null> {
  const { client, release } = await checkout(w.pool, ctx);
  try {
    const found = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [checkpointName(w)]);
    const value = found.rows[0]?.t
      ? ((await client.query<{ value: string }>(`SELECT value FROM ${checkpointName(w)} WHERE key = $1`, [key])).rows[0]
          ?.value ?? null)
      : null;
    release();
    return value;
  } catch (err) {
    release(connectionLost(err) ? (err as Error) : undefined);
    throw callError(err, 'The checkpoint cannot be read', client);
  }
}

/**
 * A Create batch and a caller's checkpoint in one transaction: each COPY (and each part of its
 * bisection) runs in a savepoint, so a record's failure undoes only its statement, and the
 * checkpoint row commits with the records or not at all.
 */
export async function createWithCheckpoint(
  w: WriterState,
  client: PoolClient,
  table: PgTable,
  groups: Group[],
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
  cp: Checkpoint,
  ctx: CallContext,
): Promise<void> {
  if (!w.checkpointTable) {
    // Outside the batch's transaction: two sessions creating it at once must not fail a batch.
    try {
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${checkpointName(w)} (key text PRIMARY KEY, value text NOT NULL, saved_at timestamptz NOT NULL)`,
      );
    } catch (err) {
      // IF NOT EXISTS is not atomic: of two sessions creating it at once, one loses with 23505 or
      // 42710 (the table's row type, in the catalogue or as an object) or 42P07; it exists either way.
      const state = sqlState(err);
      if (state !== '23505' && state !== '42710' && state !== '42P07') throw err;
    }
    w.checkpointTable = true;
  }
  await client.query('BEGIN');
  try {
    for (const g of groups) {
      await createByCopy(w, client, table, g, batch, results, true);
      throwIfAborted(ctx.signal);
    }
    await client.query(
      `INSERT INTO ${checkpointName(w)} (key, value, saved_at) VALUES ($1, $2, now()) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, saved_at = EXCLUDED.saved_at`,
      [cp.key, cp.value],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
