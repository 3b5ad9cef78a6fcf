import type { PoolClient } from 'pg';
import { OK_ONE, type ConnectorRecord, type WriteResult } from '../../../src/connectors/sdk.js';
import { qualified, quoteIdent, type PgTable } from '../catalogue.js';
import { recordErrorCode, sqlState, connectionLost } from '../errors.js';
import { textConverter, type ToText } from '../types.js';
import { bisect } from './bisect.js';
import { copySender } from './copy-sender.js';
import type { Group } from './groups.js';
import { picksFirst } from './picks-first.js';
import { rowByRow } from './row-by-row.js';
import { backOff, backOffOf, type WriterState } from './state.js';

/** A failed Create COPY of at least this many records is written row by row on the server (rowByRow); fewer are halved. */
const ROW_BY_ROW_MIN = 64;

/**
 * Create: COPY of a group, bisected on record failures; `savepoints` inside a transaction (a
 * failed statement would end it). A large batch the COPY refuses is written with its picks first
 * (picks-first.ts), else row by row on the server (row-by-row.ts), not halved.
 */
export async function createByCopy(
  w: WriterState,
  client: PoolClient,
  table: PgTable,
  g: Group,
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
  savepoints = false,
): Promise<void> {
  const sql = `COPY ${qualified(table)} (${g.cols.map((c) => quoteIdent(c.name)).join(', ')}) FROM STDIN`;
  const send = copySender(g, batch, !savepoints);
  // Inside a transaction a COPY is not streamed: one abandoned for the text format would end it.
  const sendInTx = savepoints ? send : copySender(g, batch);
  let tx = savepoints;
  const run = async (ks: number[]): Promise<undefined> => {
    if (!tx) {
      await send(client, sql, ks);
      return undefined;
    }
    await client.query('SAVEPOINT ferry_copy');
    try {
      await sendInTx(client, sql, ks);
    } catch (err) {
      await client.query('ROLLBACK TO SAVEPOINT ferry_copy');
      throw err;
    }
    await client.query('RELEASE SAVEPOINT ferry_copy');
    return undefined;
  };
  const all = g.indices.map((_, k) => k);
  /**
   * Halving writes the batch in several statements: one transaction holds them, so a connection
   * lost half-way leaves none written and the batch can be written again whole.
   */
  const halve = async (): Promise<void> => {
    if (tx) return bisect(all, run, (k) => g.indices[k] as number, results, table);
    await client.query('BEGIN');
    tx = true;
    try {
      await bisect(all, run, (k) => g.indices[k] as number, results, table);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      tx = false;
    }
  };
  const large = all.length >= ROW_BY_ROW_MIN;
  // After a batch with refused records the next ones go to the stage at once (for twice as many
  // batches each time, at most COPY_BACKOFF_MAX), so a load where every batch has some does not
  // encode and send each batch twice; a staged batch with none refused ends the back-off.
  const state = backOffOf(w.createBackoff, table.oid);
  let tried = false;
  if (large && state.skip > 0) state.skip--;
  else {
    tried = true;
    try {
      await run(all);
      for (const i of g.indices) results[i] = OK_ONE;
      return;
    } catch (err) {
      // Many records may fail in a batch this large: one pass over it on the server beats halving it.
      // Not a record's failure (the connection, a permission, a lock): the call fails as a whole.
      if (!recordErrorCode(sqlState(err))) throw err;
      if (!large) {
        await halve();
        return;
      }
    }
  }
  try {
    const names = g.cols.map((c) => c.fullName);
    const toText = g.cols.map((c) => textConverter(c.type));
    const first = await picksFirst(
      w,
      client,
      {
        table,
        cols: g.cols,
        rows: all.length,
        text: (j, k) => (toText[j] as ToText)((batch[g.indices[k] as number] as ConnectorRecord)[names[j] as string]),
        copyRest: async (c, sql, skip) => {
          await send(
            c,
            sql,
            all.filter((k) => skip[k] === 0),
          );
          return true;
        },
        tried,
      },
      savepoints,
    );
    let refused: number;
    if (first) {
      for (const i of g.indices) results[i] = OK_ONE;
      for (const [k, r] of first) results[g.indices[k] as number] = r;
      refused = first.size;
    } else
      refused = await rowByRow(w, client, table, g, (c, sql) => copySender(g, batch)(c, sql, all), results, savepoints);
    if (refused === 0) state.backoff = state.skip = 0;
    else backOff(state);
  } catch (err) {
    if (connectionLost(err)) throw err;
    await halve();
  }
}
