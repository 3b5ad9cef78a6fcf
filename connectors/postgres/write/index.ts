import type { Pool, PoolClient } from 'pg';
import {
  ConnectorError,
  keyColumns,
  recordMaker,
  throwIfAborted,
  unpackRecords,
  type CallContext,
  type ConnectorRecord,
  type PackedBatch,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
} from '../../../src/connectors/sdk.js';
import type { PgColumn, PgTable } from '../catalogue.js';
import { callError, connectionLost } from '../errors.js';
import { createWithCheckpoint, readCheckpoint } from './checkpoint.js';
import { writingClient } from './client.js';
import { createByCopy } from './create.js';
import { deleteByKey } from './delete.js';
import { groupRecords, uniqueKeySegments, type Group } from './groups.js';
import { writePacked } from './packed.js';
import { STAGE_MIN, type WriterState } from './state.js';
import { updateByKey } from './update.js';
import { upsertBulk, upsertByStatement } from './upsert.js';

/**
 * Bulk writes (docs/connectors.md "postgres"), one file per strategy:
 *
 *   Create        COPY … FROM STDIN, binary format when every column type has one (else text)   create.ts
 *   Upsert        bulk: COPY into the table when no key exists yet (tried while it keeps working,  upsert.ts
 *                 see upsertByCopy), else COPY into a stage table and INSERT … SELECT … ON CONFLICT;
 *                 small batches: INSERT … SELECT FROM unnest($1::text[], …) ON CONFLICT (key) DO UPDATE
 *   Update        UPDATE … FROM unnest(…) WITH ORDINALITY … RETURNING ordinality                update.ts
 *   UpdateInsert  that UPDATE, then INSERT … SELECT FROM unnest(…) for the records it missed     update.ts
 *   Delete        DELETE … USING unnest(…) WITH ORDINALITY … RETURNING ordinality               delete.ts
 *
 * beside them: packed.ts (a packed batch straight into binary COPY), checkpoint.ts (a Create batch
 * with its checkpoint in one transaction), picks-first.ts, row-by-row.ts and refusal.ts (a refused
 * large Create), bisect.ts (halving on record failures), groups.ts, keyed.ts, copy-sender.ts.
 *
 * One statement per batch (per field set), sent as a named prepared statement so the server plans
 * it once per connection. Values travel as text arrays cast to the column types, so any column
 * type works. Records with one key are split into consecutive statements first, so two records
 * with the same key apply in order.
 *
 * A statement fails as a whole. When it fails for a reason that belongs to records (SQLSTATE class
 * 22 data exception, 23 integrity violation, 21000), the records are split in halves and each half
 * is run again, recursively, until the failing records stand alone: exactly they fail, in place,
 * with their own error; every other record is written. One bad record in a batch of n costs about
 * 2·log2(n) extra statements carrying about 2n records. A large Create batch is not halved, since
 * many bad records would make halving cost thousands of statements: its NOT NULL and CHECK
 * constraints first pick the rows they refuse from only the columns they read, and one COPY writes
 * the others straight into the table (picksFirst); what the picks cannot tell (that COPY fails, a
 * key or a self-reference rowByRow tries one by one) is written row by row on the server in one
 * round trip (rowByRow). Other failures fail the call.
 */

/** A keyed write of one run of unique keys of a group. */
type KeyedWrite = (
  client: PoolClient,
  table: PgTable,
  keys: PgColumn[],
  g: Group,
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
) => Promise<void>;

/** The statement strategies by action (Create, and a bulk Upsert, go through COPY instead). */
const KEYED: Readonly<Record<Exclude<WriteAction, 'Create'>, KeyedWrite>> = {
  Upsert: upsertByStatement,
  Update: (...a) => updateByKey('Update', ...a),
  UpdateInsert: (...a) => updateByKey('UpdateInsert', ...a),
  Delete: deleteByKey,
};

export class PgWriter {
  readonly #state: WriterState;

  constructor(
    pool: Pool,
    /** The schema of the checkpoint table (the Connection's targetSchema). */
    schema: string,
    /** `picksFirst`: a refused large Create is written by picks first before rowByRow (off: rowByRow only, as tests compare). */
    options: { picksFirst: boolean } = { picksFirst: true },
  ) {
    this.#state = {
      pool,
      schema,
      picksFirst: options.picksFirst,
      stages: new WeakMap(),
      copyBackoff: new Map(),
      createBackoff: new Map(),
      checkpointTable: false,
      rowStages: 0,
    };
  }

  /** The checkpoint saved under `key` (by a Create batch with `checkpoint`), or null. */
  async readCheckpoint(key: string, ctx: CallContext): Promise<string | null> {
    return readCheckpoint(this.#state, key, ctx);
  }

  async write(
    action: WriteAction,
    table: PgTable,
    batch: readonly ConnectorRecord[],
    options: WriteOptions,
    ctx: CallContext,
  ): Promise<WriteResult[]> {
    if (table.kind !== 'table')
      throw new ConnectorError('Unsupported', `${table.fullName} is a view: it cannot be written.`);
    const w = this.#state;
    const byName = new Map(table.columns.map((c) => [c.fullName, c]));
    const keys = keyColumns(action, table.fullName, table.columns, byName, options.keyFields);
    const results: WriteResult[] = new Array<WriteResult>(batch.length);
    const groups = groupRecords(table, byName, keys, batch, results);
    if (groups.length === 0 && !options.checkpoint) return results;
    throwIfAborted(ctx.signal);
    const { client, release } = await writingClient(w.pool, ctx);
    let broken: Error | undefined;
    try {
      if (options.checkpoint) {
        if (action !== 'Create')
          throw new ConnectorError(
            'Unsupported',
            `A checkpoint is saved with Create batches only, not with ${action}.`,
          );
        await createWithCheckpoint(w, client, table, groups, batch, results, options.checkpoint, ctx);
      } else
        for (const g of groups) {
          if (action === 'Create') await createByCopy(w, client, table, g, batch, results);
          else if (action === 'Upsert' && g.indices.length >= STAGE_MIN)
            await upsertBulk(w, client, table, keys, g, batch, results, ctx);
          else
            for (const seg of uniqueKeySegments(g, keys, batch))
              await KEYED[action](client, table, keys, { cols: g.cols, indices: seg }, batch, results);
          throwIfAborted(ctx.signal);
        }
    } catch (err) {
      if (connectionLost(err)) broken = err as Error;
      throw callError(err, `The ${action} batch failed`, client);
    } finally {
      release(broken);
    }
    ctx.progress({ records: batch.length });
    return results;
  }

  /** A packed batch (src/connectors/packed.ts): straight into binary COPY when it can be (packed.ts), else as records. */
  async writePacked(
    action: WriteAction,
    table: PgTable,
    batch: PackedBatch,
    options: WriteOptions,
    ctx: CallContext,
  ): Promise<WriteResult[]> {
    const asRecords = (): Promise<WriteResult[]> =>
      this.write(action, table, unpackRecords(batch, recordMaker(batch.fields)), options, ctx);
    return writePacked(this.#state, action, table, batch, options, ctx, asRecords);
  }
}
