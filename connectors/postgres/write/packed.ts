import type { PoolClient } from 'pg';
import {
  keyColumns,
  OK_ONE,
  packedCell,
  throwIfAborted,
  type CallContext,
  type PackedBatch,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
} from '../../../src/connectors/sdk.js';
import { binaryWriter, encodePackedBinary, type FieldWriter } from '../binary-copy.js';
import { qualified, quoteIdent, type PgColumn, type PgTable } from '../catalogue.js';
import { CopyIn } from '../copy.js';
import { callError, recordErrorCode, sqlState, connectionLost } from '../errors.js';
import { textConverter, type ToText } from '../types.js';
import { writingClient } from './client.js';
import { picksFirst } from './picks-first.js';
import { rowByRow } from './row-by-row.js';
import { backOff, backOffOf, STAGE_MIN, type BackOff, type WriterState } from './state.js';

/** The batch written as records (PgWriter.write), which decides as it always does. */
export type AsRecords = () => Promise<WriteResult[]>;

/**
 * A packed batch (src/connectors/packed.ts). A Create, or an Upsert that upsertByCopy (upsert.ts)
 * would try as one COPY, goes straight from the batch's cells into binary COPY data, with no
 * record made. Anything else — a field the table lacks or cannot write, a value without a binary
 * form, a back-off in force, a COPY the server refuses — is written as the batch's records by
 * `asRecords` (PgWriter.write), which decides as it always does (a refused COPY counts as that
 * path's own failed attempt, so it is not sent twice).
 */
export async function writePacked(
  w: WriterState,
  action: WriteAction,
  table: PgTable,
  batch: PackedBatch,
  options: WriteOptions,
  ctx: CallContext,
  asRecords: AsRecords,
): Promise<WriteResult[]> {
  if (
    table.kind !== 'table' ||
    options.checkpoint ||
    (action !== 'Create' && action !== 'Upsert') ||
    batch.rows < STAGE_MIN
  )
    return asRecords();
  const byName = new Map(table.columns.map((c) => [c.fullName, c]));
  const cols: PgColumn[] = [];
  for (const f of batch.fields) {
    const c = byName.get(f);
    if (!c || c.readOnly) return asRecords();
    cols.push(c);
  }
  const writers: FieldWriter[] = [];
  for (const c of cols) {
    const f = binaryWriter(c.typname);
    if (!f) return asRecords();
    writers.push(f);
  }
  let state: BackOff;
  if (action === 'Upsert') {
    const keys = keyColumns(action, table.fullName, table.columns, byName, options.keyFields);
    const pk = table.columns.filter((c) => c.pk > 0);
    if (keys.length !== pk.length || !keys.every((k) => k.pk > 0)) return asRecords();
    state = backOffOf(w.copyBackoff, table.oid);
  } else {
    state = backOffOf(w.createBackoff, table.oid);
  }
  if (state.skip > 0) {
    if (action !== 'Create') return asRecords();
    // As createByCopy (create.ts) in its back-off: this batch goes to the stage at once, from its cells.
    state.skip--;
    return packedRows(w, table, cols, writers, batch, state, asRecords, false, ctx);
  }
  throwIfAborted(ctx.signal);
  const { client, release } = await writingClient(w.pool, ctx);
  let broken: Error | undefined;
  // Encoded as it is sent: the server works on the first buffers while the rest is encoded.
  let textOnly = false;
  const fields = cols.map((_, j) => j);
  try {
    const copy = new CopyIn(
      `COPY ${qualified(table)} (${cols.map((c) => quoteIdent(c.name)).join(', ')}) FROM STDIN WITH (FORMAT binary)`,
      (send) => {
        if (encodePackedBinary(batch, fields, writers, send)) return;
        textOnly = true;
        throw new Error('a value has no binary form');
      },
    );
    client.query(copy);
    await copy.done;
  } catch (err) {
    // A value needs the text format: the COPY was abandoned, and the records path decides.
    if (textOnly) {
      release();
      return asRecords();
    }
    if (connectionLost(err)) {
      broken = err as Error;
      throw callError(err, `The ${action} batch failed`, client);
    }
    release();
    if (action === 'Upsert') {
      // As upsertByCopy after a refused COPY: the next batches go to the stage for a while.
      backOff(state);
      // The records path takes one of them for this batch.
      state.skip++;
    } else if (recordErrorCode(sqlState(err))) {
      // Refused for a record's sake: as createByCopy (create.ts) does, the batch is written row by row on the server.
      return packedRows(w, table, cols, writers, batch, state, asRecords, true, ctx);
    } else state.skip = Math.max(state.skip, 1);
    return asRecords();
  } finally {
    release(broken);
  }
  // As upsertByCopy after a COPY that went in: the back-off starts over.
  if (action === 'Upsert') state.backoff = 0;
  ctx.progress({ records: batch.rows });
  return new Array<WriteResult>(batch.rows).fill(OK_ONE);
}

/**
 * A packed Create batch written row by row on the server (rowByRow), its stage filled
 * from the batch's cells; the back-off moves as createByCopy (create.ts) moves it. A stage that refuses a value,
 * or a value without a binary form, leaves the batch to the records path.
 */
async function packedRows(
  w: WriterState,
  table: PgTable,
  cols: PgColumn[],
  writers: FieldWriter[],
  batch: PackedBatch,
  state: BackOff,
  asRecords: AsRecords,
  tried: boolean,
  ctx: CallContext,
): Promise<WriteResult[]> {
  throwIfAborted(ctx.signal);
  const { client, release } = await writingClient(w.pool, ctx);
  const fields = cols.map((_, j) => j);
  const results = new Array<WriteResult>(batch.rows);
  let textOnly = false;
  const stageCopy = async (c: PoolClient, sql: string): Promise<unknown> => {
    const copy = new CopyIn(`${sql} WITH (FORMAT binary)`, (send) => {
      if (encodePackedBinary(batch, fields, writers, send)) return;
      textOnly = true;
      throw new Error('a value has no binary form');
    });
    c.query(copy);
    return copy.done;
  };
  const toText = cols.map((c) => textConverter(c.type));
  const copyRest = async (c: PoolClient, sql: string, skip: Uint8Array): Promise<boolean> => {
    const copy = new CopyIn(`${sql} WITH (FORMAT binary)`, (send) => {
      if (encodePackedBinary(batch, fields, writers, send, skip)) return;
      textOnly = true;
      throw new Error('a value has no binary form');
    });
    c.query(copy);
    try {
      await copy.done;
    } catch (err) {
      if (textOnly) return false;
      throw err;
    }
    return true;
  };
  let refused: number;
  try {
    const first = await picksFirst(
      w,
      client,
      {
        table,
        cols,
        rows: batch.rows,
        text: (j, k) => (toText[j] as ToText)(packedCell(batch, k, j)),
        copyRest,
        tried,
      },
      false,
    );
    if (first) {
      results.fill(OK_ONE);
      for (const [k, r] of first) results[k] = r;
      refused = first.size;
    } else if (textOnly) {
      // A value needs the text format, and the stage would meet it too: the records path decides
      // (at its stage: this batch's COPY into the table was refused or skipped already).
      release();
      state.skip = Math.max(state.skip, 1);
      return asRecords();
    } else
      refused = await rowByRow(
        w,
        client,
        table,
        { cols, indices: Array.from({ length: batch.rows }, (_, i) => i) },
        stageCopy,
        results,
        false,
      );
  } catch (err) {
    if (textOnly || sqlState(err) !== undefined) {
      release();
      state.skip = Math.max(state.skip, 1);
      return asRecords();
    }
    release(err as Error);
    throw callError(err, 'The Create batch failed', client);
  }
  release();
  if (refused === 0) state.backoff = state.skip = 0;
  else backOff(state);
  ctx.progress({ records: batch.rows });
  return results;
}
