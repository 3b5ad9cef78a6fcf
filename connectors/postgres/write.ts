import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import {
  coerceValue,
  ConnectorError,
  failed,
  INVALID,
  OK_ONE,
  succeeded,
  throwIfAborted,
  type CallContext,
  type ConnectorRecord,
  type PackedBatch,
  packedCell,
  recordMaker,
  unpackRecords,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
  keyColumns,
  CHECKPOINT_TABLE,
  type Checkpoint,
} from '../../src/connectors/sdk.js';
import { qualified, quoteIdent, type PgColumn, type PgTable } from './catalogue.js';
import { CopyIn, copyEncoder, type CopyEncode } from './copy.js';
import { binaryWriter, encodeBinary, encodePackedBinary, type FieldWriter } from './binary-copy.js';
import { cancelOnAbort, checkout } from './cursor.js';
import { callError, recordErrorCode, recordMessage, sqlState } from './errors.js';
import { textConverter, type ToText } from './types.js';

/**
 * Bulk writes (docs/connectors.md "postgres"):
 *
 *   Create        COPY … FROM STDIN, binary format when every column type has one (else text)
 *   Upsert        bulk: COPY into the table when no key exists yet (tried while it keeps working,
 *                 see upsertByCopy), else COPY into a stage table and INSERT … SELECT … ON CONFLICT;
 *                 small batches: INSERT … SELECT FROM unnest($1::text[], …) ON CONFLICT (key) DO UPDATE
 *   Update        UPDATE … FROM unnest(…) WITH ORDINALITY … RETURNING ordinality
 *   UpdateInsert  that UPDATE, then INSERT … SELECT FROM unnest(…) for the records it missed
 *   Delete        DELETE … USING unnest(…) WITH ORDINALITY … RETURNING ordinality
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

/**
 * A large Create batch for the picks (PgWriter.picksFirst): its table and columns, the text of
 * column j of row k, and the COPY of every row but those `skip` marks. `tried`: the whole batch was
 * just refused, so a pick of none would be refused again.
 */
interface PickBatch {
  table: PgTable;
  cols: readonly PgColumn[];
  rows: number;
  text: (j: number, k: number) => string | null;
  copyRest: (client: PoolClient, sql: string, skip: Uint8Array) => Promise<boolean>;
  tried: boolean;
}

interface Group {
  cols: PgColumn[];
  indices: number[];
}

const NAME_HASH_LEN = 20;

/** A failed Create COPY of at least this many records is written row by row on the server (rowByRow); fewer are halved. */
const ROW_BY_ROW_MIN = 64;

/** Upserts of at least this many records go through COPY; fewer take one unnest statement. */
const STAGE_MIN = 64;
/** Connections a bulk Upsert of existing keys runs on at once, and the least records for a second. */
const UPSERT_LANES = 3;
const LANE_MIN_RECORDS = 2000;
/** Most batches an Upsert skips the COPY into the table for after it met existing keys. */
const COPY_BACKOFF_MAX = 64;

/** After a failed attempt: the next batches skip it, twice as many as the last time (at most COPY_BACKOFF_MAX). */
function backOff(state: { skip: number; backoff: number }): void {
  state.backoff = Math.min(COPY_BACKOFF_MAX, Math.max(1, state.backoff * 2));
  state.skip = state.backoff;
}

/**
 * Sends the records `ks` (positions in the group) of a group through a COPY statement: in the
 * binary format when every column and value has a binary form (binary-copy.ts), else as text.
 * `streamed` (only outside a transaction): the binary data is sent as it is encoded, so the server
 * works on the first rows while the rest are encoded; a value without a binary form then abandons
 * that COPY (it fails, as a statement of its own) and the text format runs.
 */
function copySender(g: Group, batch: readonly ConnectorRecord[], streamed = false): (client: PoolClient, sql: string, ks: number[]) => Promise<number> {
  const names = g.cols.map((c) => c.fullName);
  const writers = g.cols.map((c) => binaryWriter(c.typname));
  const binary = writers.every((f) => f !== undefined) ? writers : undefined;
  const enc = g.cols.map((c) => copyEncoder(c.type));
  const n = names.length;
  const encode = (k: number): string => {
    const rec = batch[g.indices[k] as number] as ConnectorRecord;
    let line = (enc[0] as CopyEncode)(rec[names[0] as string]);
    for (let j = 1; j < n; j++) line += `\t${(enc[j] as CopyEncode)(rec[names[j] as string])}`;
    return `${line}\n`;
  };
  return async (client, sql, ks) => {
    const records = ks.map((k) => batch[g.indices[k] as number]);
    if (binary && streamed) {
      let textOnly = false;
      const streaming = new CopyIn(`${sql} WITH (FORMAT binary)`, (send) => {
        if (encodeBinary(records, names, binary, send)) return;
        textOnly = true;
        throw new Error('a value has no binary form');
      });
      client.query(streaming);
      try {
        return await streaming.done;
      } catch (err) {
        if (!textOnly) throw err;
      }
    }
    const data = binary && !streamed ? encodeBinary(records, names, binary) : undefined;
    const copy = data
      ? new CopyIn(`${sql} WITH (FORMAT binary)`, (send) => {
          for (const b of data) send(b);
        })
      : new CopyIn(sql, (send) => {
          let chunk = '';
          for (const k of ks) {
            chunk += encode(k);
            if (chunk.length >= 262144) {
              send(chunk);
              chunk = '';
            }
          }
          if (chunk) send(chunk);
        });
    client.query(copy);
    return copy.done;
  };
}

export class PgWriter {
  /** Stage tables already created, per pooled connection (temporary tables live per session). */
  private readonly stages = new WeakMap<PoolClient, Set<string>>();
  /** Per table oid: batches left before an Upsert tries COPY into the table again, and the current back-off. */
  private readonly copyBackoff = new Map<number, { skip: number; backoff: number }>();
  /** Per table oid: large Create batches left that go straight to the stage (rowByRow), and the current back-off. */
  private readonly createBackoff = new Map<number, { skip: number; backoff: number }>();

  /** Whether this session made sure the checkpoint table exists. */
  private checkpointTable = false;
  /** Numbers the temporary stage tables of {@link rowByRow} (a transaction may hold several). */
  private rowStages = 0;

  constructor(
    private readonly pool: Pool,
    /** The schema of the checkpoint table (the Connection's targetSchema). */
    private readonly schema: string,
    /** `picksFirst`: a refused large Create is written by {@link picksFirst} before rowByRow (off: rowByRow only, as tests compare). */
    private readonly options: { picksFirst: boolean } = { picksFirst: true },
  ) {}

  /** The checkpoint saved under `key` (by a Create batch with `checkpoint`), or null. */
  async readCheckpoint(key: string, ctx: CallContext): Promise<string | null> {
    const { client, release } = await checkout(this.pool, ctx);
    try {
      const found = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`${quoteIdent(this.schema)}.${quoteIdent(CHECKPOINT_TABLE)}`]);
      const value = found.rows[0]?.t ? (await client.query<{ value: string }>(`SELECT value FROM ${this.checkpointName()} WHERE key = $1`, [key])).rows[0]?.value ?? null : null;
      release();
      return value;
    } catch (err) {
      release(sqlState(err) === undefined ? (err as Error) : undefined);
      throw callError(err, 'The checkpoint cannot be read', client);
    }
  }

  /**
   * A client for a write call whose statement is cancelled on the server when the call's signal
   * fires (a stop past its grace, a restart, the host's time-out): a write waiting on a lock ends
   * then, not when the lock is released. A client that saw its signal fire is not pooled again.
   */
  private async writing(ctx: CallContext): Promise<{ client: PoolClient; release: (err?: Error) => void }> {
    const { client, release } = await checkout(this.pool, ctx);
    const stopCancel = cancelOnAbort(this.pool.options, client, ctx);
    // Once the signal fired the call sends nothing more: a fallback after the cancelled statement
    // (another way to write the batch) would wait on the same lock and commit after the run ended.
    const query = client.query.bind(client) as (...a: unknown[]) => unknown;
    const guarded = (...args: unknown[]): unknown => {
      throwIfAborted(ctx.signal);
      return query(...args);
    };
    Object.defineProperty(client, 'query', { value: guarded, configurable: true, writable: true });
    return {
      client,
      release: (err) => {
        void stopCancel();
        delete (client as { query?: unknown }).query;
        release(err ?? (ctx.signal.aborted ? new Error('cancelled') : undefined));
      },
    };
  }

  private checkpointName(): string {
    return `${quoteIdent(this.schema)}.${quoteIdent(CHECKPOINT_TABLE)}`;
  }

  /**
   * A Create batch and a caller's checkpoint in one transaction: each COPY (and each part of its
   * bisection) runs in a savepoint, so a record's failure undoes only its statement, and the
   * checkpoint row commits with the records or not at all.
   */
  private async createWithCheckpoint(client: PoolClient, table: PgTable, groups: Group[], batch: readonly ConnectorRecord[], results: WriteResult[], cp: Checkpoint, ctx: CallContext): Promise<void> {
    if (!this.checkpointTable) {
      // Outside the batch's transaction: two sessions creating it at once must not fail a batch.
      try {
        await client.query(`CREATE TABLE IF NOT EXISTS ${this.checkpointName()} (key text PRIMARY KEY, value text NOT NULL, saved_at timestamptz NOT NULL)`);
      } catch (err) {
        // IF NOT EXISTS is not atomic: of two sessions creating it at once, one loses with 23505 or
        // 42710 (the table's row type, in the catalogue or as an object) or 42P07; it exists either way.
        const state = sqlState(err);
        if (state !== '23505' && state !== '42710' && state !== '42P07') throw err;
      }
      this.checkpointTable = true;
    }
    await client.query('BEGIN');
    try {
      for (const g of groups) {
        await this.copy(client, table, g, batch, results, true);
        throwIfAborted(ctx.signal);
      }
      await client.query(`INSERT INTO ${this.checkpointName()} (key, value, saved_at) VALUES ($1, $2, now()) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, saved_at = EXCLUDED.saved_at`, [cp.key, cp.value]);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  async write(action: WriteAction, table: PgTable, batch: readonly ConnectorRecord[], options: WriteOptions, ctx: CallContext): Promise<WriteResult[]> {
    if (table.kind !== 'table') throw new ConnectorError('Unsupported', `${table.fullName} is a view: it cannot be written.`);
    const byName = new Map(table.columns.map((c) => [c.fullName, c]));
    const keys = keyColumns(action, table.fullName, table.columns, byName, options.keyFields);
    const results: WriteResult[] = new Array<WriteResult>(batch.length);
    const groups = groupRecords(table, byName, keys, batch, results);
    if (groups.length === 0 && !options.checkpoint) return results;
    throwIfAborted(ctx.signal);
    const { client, release } = await this.writing(ctx);
    let broken: Error | undefined;
    try {
      if (options.checkpoint) {
        if (action !== 'Create') throw new ConnectorError('Unsupported', `A checkpoint is saved with Create batches only, not with ${action}.`);
        await this.createWithCheckpoint(client, table, groups, batch, results, options.checkpoint, ctx);
      } else for (const g of groups) {
        if (action === 'Create') await this.copy(client, table, g, batch, results);
        else if (action === 'Upsert' && g.indices.length >= STAGE_MIN) {
          if (!(await this.upsertByCopy(client, table, keys, g, batch, results))) {
            // A COPY the call's own cancel ended is not retried another way.
            throwIfAborted(ctx.signal);
            await this.stagedUpsertLanes(client, table, keys, g, batch, results, ctx);
          }
        }
        else for (const seg of uniqueKeySegments(g, keys, batch)) await this.keyed(client, action, table, keys, { cols: g.cols, indices: seg }, batch, results);
        throwIfAborted(ctx.signal);
      }
    } catch (err) {
      if (sqlState(err) === undefined) broken = err as Error;
      throw callError(err, `The ${action} batch failed`, client);
    } finally {
      release(broken);
    }
    ctx.progress({ records: batch.length });
    return results;
  }

  /**
   * A packed batch (src/connectors/packed.ts). A Create, or an Upsert that {@link upsertByCopy}
   * would try as one COPY, goes straight from the batch's cells into binary COPY data, with no
   * record made. Anything else — a field the table lacks or cannot write, a value without a binary
   * form, a back-off in force, a COPY the server refuses — is written as the batch's records by
   * {@link write}, which decides as it always does (a refused COPY counts as that path's own
   * failed attempt, so it is not sent twice).
   */
  async writePacked(action: WriteAction, table: PgTable, batch: PackedBatch, options: WriteOptions, ctx: CallContext): Promise<WriteResult[]> {
    const asRecords = (): Promise<WriteResult[]> => this.write(action, table, unpackRecords(batch, recordMaker(batch.fields)), options, ctx);
    if (table.kind !== 'table' || options.checkpoint || (action !== 'Create' && action !== 'Upsert') || batch.rows < STAGE_MIN) return asRecords();
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
    let state: { skip: number; backoff: number };
    if (action === 'Upsert') {
      const keys = keyColumns(action, table.fullName, table.columns, byName, options.keyFields);
      const pk = table.columns.filter((c) => c.pk > 0);
      if (keys.length !== pk.length || !keys.every((k) => k.pk > 0)) return asRecords();
      state = this.copyBackoff.get(table.oid) ?? { skip: 0, backoff: 0 };
      this.copyBackoff.set(table.oid, state);
    } else {
      state = this.createBackoff.get(table.oid) ?? { skip: 0, backoff: 0 };
      this.createBackoff.set(table.oid, state);
    }
    if (state.skip > 0) {
      if (action !== 'Create') return asRecords();
      // As copy() in its back-off: this batch goes to the stage at once, from its cells.
      state.skip--;
      return this.packedRows(table, cols, writers, batch, state, asRecords, false, ctx);
    }
    throwIfAborted(ctx.signal);
    const { client, release } = await this.writing(ctx);
    let broken: Error | undefined;
    // Encoded as it is sent: the server works on the first buffers while the rest is encoded.
    let textOnly = false;
    const fields = cols.map((_, j) => j);
    try {
      const copy = new CopyIn(`COPY ${qualified(table)} (${cols.map((c) => quoteIdent(c.name)).join(', ')}) FROM STDIN WITH (FORMAT binary)`, (send) => {
        if (encodePackedBinary(batch, fields, writers, send)) return;
        textOnly = true;
        throw new Error('a value has no binary form');
      });
      client.query(copy);
      await copy.done;
    } catch (err) {
      // A value needs the text format: the COPY was abandoned, and the records path decides.
      if (textOnly) {
        release();
        return asRecords();
      }
      if (sqlState(err) === undefined) {
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
        // Refused for a record's sake: as copy() does, the batch is written row by row on the server.
        return this.packedRows(table, cols, writers, batch, state, asRecords, true, ctx);
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
   * A packed Create batch written row by row on the server ({@link rowByRow}), its stage filled
   * from the batch's cells; the back-off moves as copy() moves it. A stage that refuses a value,
   * or a value without a binary form, leaves the batch to the records path.
   */
  private async packedRows(table: PgTable, cols: PgColumn[], writers: FieldWriter[], batch: PackedBatch, state: { skip: number; backoff: number }, asRecords: () => Promise<WriteResult[]>, tried: boolean, ctx: CallContext): Promise<WriteResult[]> {
    throwIfAborted(ctx.signal);
    const { client, release } = await this.writing(ctx);
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
      const first = await this.picksFirst(client, { table, cols, rows: batch.rows, text: (j, k) => (toText[j] as ToText)(packedCell(batch, k, j)), copyRest, tried }, false);
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
      } else refused = await this.rowByRow(client, table, { cols, indices: Array.from({ length: batch.rows }, (_, i) => i) }, stageCopy, results, false);
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

  /** COPY of a group, bisected on record failures; `savepoints` inside a transaction (a failed statement would end it). */
  private async copy(client: PoolClient, table: PgTable, g: Group, batch: readonly ConnectorRecord[], results: WriteResult[], savepoints = false): Promise<void> {
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
    const state = this.createBackoff.get(table.oid) ?? { skip: 0, backoff: 0 };
    this.createBackoff.set(table.oid, state);
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
      const first = await this.picksFirst(
        client,
        {
          table,
          cols: g.cols,
          rows: all.length,
          text: (j, k) => (toText[j] as ToText)((batch[g.indices[k] as number] as ConnectorRecord)[names[j] as string]),
          copyRest: async (c, sql, skip) => {
            await send(c, sql, all.filter((k) => skip[k] === 0));
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
      } else refused = await this.rowByRow(client, table, g, (c, sql) => copySender(g, batch)(c, sql, all), results, savepoints);
      if (refused === 0) state.backoff = state.skip = 0;
      else backOff(state);
    } catch (err) {
      if (sqlState(err) === undefined) throw err;
      await halve();
    }
  }

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
  private async rowByRow(client: PoolClient, table: PgTable, g: Group, stageCopy: (client: PoolClient, sql: string) => Promise<unknown>, results: WriteResult[], inTransaction: boolean): Promise<number> {
    const n = ++this.rowStages;
    const stage = quoteIdent(`ferry_rows_${n}`);
    const errors = quoteIdent(`ferry_row_errors_${n}`);
    const cols = g.cols.map((c) => quoteIdent(c.name));
    await client.query(inTransaction ? 'SAVEPOINT ferry_rows' : 'BEGIN');
    try {
      // CREATE … AS takes the column types without their NOT NULL, CHECK or key constraints.
      await client.query(`CREATE TEMP TABLE ${stage} ON COMMIT DROP AS SELECT ${cols.join(', ')} FROM ${qualified(table)} WITH NO DATA`);
      await client.query(`ALTER TABLE ${stage} ADD COLUMN ferry_ord bigserial`);
      await client.query(`CREATE TEMP TABLE ${errors} (ord bigint, state text, message text, detail text, col text) ON COMMIT DROP`);
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
      const refused = (await client.query<{ ord: string; state: string; message: string; detail: string | null; col: string | null }>(`SELECT ord, state, message, detail, col FROM ${errors}`)).rows;
      await client.query(inTransaction ? 'RELEASE SAVEPOINT ferry_rows' : 'COMMIT');
      for (const i of g.indices) results[i] = OK_ONE;
      for (const e of refused) {
        const i = g.indices[Number(e.ord) - 1];
        if (i === undefined) continue;
        const field = e.col ? (table.columns.find((c) => c.name === e.col)?.fullName ?? e.col) : undefined;
        results[i] = failed(recordErrorCode(e.state) ?? 'DatastoreError', recordMessage(e.message, e.detail), { nativeCode: e.state, ...(field ? { field } : {}) });
      }
      return refused.length;
    } catch (err) {
      await client.query(inTransaction ? 'ROLLBACK TO SAVEPOINT ferry_rows' : 'ROLLBACK').catch(() => undefined);
      if (inTransaction) await client.query('RELEASE SAVEPOINT ferry_rows').catch(() => undefined);
      throw err;
    }
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
  private async picksFirst(client: PoolClient, job: PickBatch, inTransaction: boolean): Promise<Map<number, WriteResult> | undefined> {
    if (!this.options.picksFirst) return undefined;
    if (inTransaction) await client.query('SAVEPOINT ferry_picks');
    let out: Map<number, WriteResult> | undefined;
    try {
      out = await this.picksThenCopy(client, job);
    } catch (err) {
      if (inTransaction) {
        await client.query('ROLLBACK TO SAVEPOINT ferry_picks');
        await client.query('RELEASE SAVEPOINT ferry_picks');
      }
      if (sqlState(err) === undefined) throw err;
      return undefined;
    }
    if (inTransaction) await client.query(out ? 'RELEASE SAVEPOINT ferry_picks' : 'ROLLBACK TO SAVEPOINT ferry_picks; RELEASE SAVEPOINT ferry_picks');
    return out;
  }

  private async picksThenCopy(client: PoolClient, { table, cols, rows, text, copyRest, tried }: PickBatch): Promise<Map<number, WriteResult> | undefined> {
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
    const collation = new Map(constraints.filter((r) => r.kind === 'l' && r.name).map((r) => [r.cols[0] as string, r.name as string]));
    const arrays = sent.map((c) => {
      const j = index.get(c.name) as number;
      let lit = '{';
      for (let k = 0; k < rows; k++) {
        if (k) lit += ',';
        lit += arrayElement(text(j, k));
      }
      return `${lit}}`;
    });
    const cast = sent.map((c, i) => `x.c${i}::${c.sqlType}${collation.has(c.name) ? ` COLLATE ${collation.get(c.name) as string}` : ''} AS ${quoteIdent(c.name)}`);
    const sql = `WITH s0 AS (SELECT ${cast.join(', ')}, x.ferry_ord FROM unnest(${sent.map((_, i) => `$${i + 1}::text[]`).join(', ')}) WITH ORDINALITY AS x(${sent.map((_, i) => `c${i}`).join(', ')}, ferry_ord))
SELECT s.ferry_ord::int AS ord, ${reason} AS why FROM s0 s WHERE ${terms.join(' OR ')}`;
    const name = `ferry_p_${createHash('sha1').update(sql).digest('hex').slice(0, NAME_HASH_LEN)}`;
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
    if (out.size < rows && !(await copyRest(client, `COPY ${qualified(table)} (${cols.map((c) => quoteIdent(c.name)).join(', ')}) FROM STDIN`, skip))) return undefined;
    return out;
  }

  /**
   * Upsert of a bulk batch whose keys are all new is a Create: one COPY into the table, no stage
   * and no conflict check per row. The COPY fails as a whole at the first key that exists (or any
   * other error), nothing is written, and the caller runs the staged upsert. After a failure the
   * table's next batches go straight to the stage, for twice as many batches each time (at most
   * {@link COPY_BACKOFF_MAX}), so a table whose keys mostly exist seldom pays the failed attempt.
   * Only for the primary key: an Upsert on other fields must still be refused when they have no
   * unique constraint.
   */
  private async upsertByCopy(client: PoolClient, table: PgTable, keys: PgColumn[], g: Group, batch: readonly ConnectorRecord[], results: WriteResult[]): Promise<boolean> {
    const pk = table.columns.filter((c) => c.pk > 0);
    if (keys.length !== pk.length || !keys.every((k) => k.pk > 0)) return false;
    const state = this.copyBackoff.get(table.oid) ?? { skip: 0, backoff: 0 };
    this.copyBackoff.set(table.oid, state);
    if (state.skip > 0) {
      state.skip--;
      return false;
    }
    const sql = `COPY ${qualified(table)} (${g.cols.map((c) => quoteIdent(c.name)).join(', ')}) FROM STDIN`;
    try {
      await copySender(g, batch)(
        client,
        sql,
        g.indices.map((_, k) => k),
      );
    } catch (err) {
      if (sqlState(err) === undefined) throw err;
      backOff(state);
      return false;
    }
    state.backoff = 0;
    for (const i of g.indices) results[i] = OK_ONE;
    return true;
  }

  /**
   * The staged upsert of a bulk batch on up to {@link UPSERT_LANES} connections at once. The
   * server's conflict work (finding, locking and rewriting each existing row) bounds an upsert of
   * existing keys, and one backend does it on one core; lanes put more backends beside it (three
   * measured best on two cores: a lane waiting for its COPY or commit leaves the core to another). Records are
   * split by key, so records with one key stay in one lane, in order, and two lanes never touch
   * one row. Each lane runs its own stage and transactions. A lane that meets another on some
   * other unique constraint or a trigger's rows (deadlock, serialization failure) runs again after
   * the others, alone; an upsert is idempotent, so its parts already committed are simply written
   * again. Without a second connection (the pool or the server has none to give) one lane runs.
   */
  private async stagedUpsertLanes(client: PoolClient, table: PgTable, keys: PgColumn[], g: Group, batch: readonly ConnectorRecord[], results: WriteResult[], ctx: CallContext): Promise<void> {
    const run = async (c: PoolClient, indices: number[]): Promise<void> => {
      for (const seg of uniqueKeySegments({ cols: g.cols, indices }, keys, batch)) await this.stagedUpsert(c, table, keys, { cols: g.cols, indices: seg }, batch, results);
    };
    if (g.indices.length < LANE_MIN_RECORDS) return run(client, g.indices);
    const extras: Awaited<ReturnType<typeof checkout>>[] = [];
    // Only connections the pool can give at once: waiting for one another call holds (a query's
    // cursor) would stall the batch, or never end.
    const spare = (): boolean => this.pool.waitingCount === 0 && (this.pool.idleCount > 0 || this.pool.totalCount < (this.pool.options.max ?? 10));
    while (extras.length < UPSERT_LANES - 1 && spare()) {
      try {
        // Cancelled with the call, as its own client is (writing()).
        extras.push(await this.writing(ctx));
      } catch {
        break;
      }
    }
    const clients = [client, ...extras.map((e) => e.client)];
    const broken = new Map<PoolClient, Error>();
    try {
      const lanes = splitByKey(g, keys, batch, clients.length);
      const settled = await Promise.allSettled(lanes.map((indices, i) => run(clients[i] as PoolClient, indices)));
      // Every lane's outcome first, so that each broken connection is known before anything throws.
      const again: number[][] = [];
      let fatal: Error | undefined;
      for (const [i, s] of settled.entries()) {
        if (s.status === 'fulfilled') continue;
        const state = sqlState(s.reason);
        if (state === undefined) broken.set(clients[i] as PoolClient, s.reason as Error);
        if (state === '40P01' || state === '40001') again.push(lanes[i] as number[]);
        else fatal ??= s.reason instanceof Error ? s.reason : new Error(String(s.reason));
      }
      if (fatal !== undefined) throw fatal;
      for (const indices of again) await run(client, indices);
    } finally {
      for (const e of extras) e.release(broken.get(e.client));
    }
  }

  /**
   * Upsert of a bulk batch: COPY into a temporary stage table (no WAL, no index), then one
   * `INSERT … SELECT … ON CONFLICT DO UPDATE` from it, in one transaction; the stage empties on
   * commit. Twice as fast as unnest arrays: values are parsed by COPY, once.
   */
  private async stagedUpsert(client: PoolClient, table: PgTable, keys: PgColumn[], g: Group, batch: readonly ConnectorRecord[], results: WriteResult[]): Promise<void> {
    const stage = `pg_temp.${quoteIdent(`ferry_stage_${table.oid}_${table.columns.length}`)}`;
    let known = this.stages.get(client);
    if (!known) this.stages.set(client, (known = new Set()));
    if (!known.has(stage)) {
      // Column types only: no NOT NULL or defaults, the target checks those on INSERT.
      await client.query(`CREATE TEMP TABLE IF NOT EXISTS ${stage.slice('pg_temp.'.length)} ON COMMIT DELETE ROWS AS SELECT * FROM ${qualified(table)} WITH NO DATA`);
      known.add(stage);
    }
    const list = g.cols.map((c) => quoteIdent(c.name)).join(', ');
    const setCols = g.cols.filter((c) => !keys.includes(c));
    const onConflict = setCols.length ? `DO UPDATE SET ${setCols.map((c) => `${quoteIdent(c.name)} = EXCLUDED.${quoteIdent(c.name)}`).join(', ')}` : 'DO NOTHING';
    const upsert = `INSERT INTO ${qualified(table)} (${list}) SELECT ${list} FROM ${stage} ON CONFLICT (${keys.map((k) => quoteIdent(k.name)).join(', ')}) ${onConflict}`;
    const send = copySender(g, batch);
    const run = async (ks: number[]): Promise<undefined> => {
      await client.query('BEGIN');
      try {
        await send(client, `COPY ${stage} (${list}) FROM STDIN`, ks);
        await client.query(upsert);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
      return undefined;
    };
    await bisect(
      g.indices.map((_, k) => k),
      run,
      (k) => g.indices[k] as number,
      results,
      table,
    );
  }

  private async keyed(client: PoolClient, action: WriteAction, table: PgTable, keys: PgColumn[], g: Group, batch: readonly ConnectorRecord[], results: WriteResult[]): Promise<void> {
    const cols = g.cols;
    const conv = cols.map((c) => textConverter(c.type));
    // Each column travels as one text[] literal built here: pg's own array serialisation
    // (prepareValue and a regular-expression escape per element) costs twice as much.
    const arrays = (idx: number[], which: PgColumn[]): string[] =>
      which.map((c) => {
        const f = conv[cols.indexOf(c)] as ToText;
        let lit = '{';
        for (let k = 0; k < idx.length; k++) {
          if (k) lit += ',';
          lit += arrayElement(f((batch[idx[k] as number] as ConnectorRecord)[c.fullName]));
        }
        return `${lit}}`;
      });
    const t = qualified(table);
    const alias = (c: PgColumn): string => `a${cols.indexOf(c)}`;
    const unnest = (which: PgColumn[], ordinality: boolean): string =>
      `unnest(${which.map((_, i) => `$${i + 1}::text[]`).join(', ')})${ordinality ? ' WITH ORDINALITY' : ''} AS v(${which.map(alias).join(', ')}${ordinality ? ', ord' : ''})`;
    const cast = (c: PgColumn): string => `v.${alias(c)}::${c.sqlType}`;
    const match = keys.map((k) => `t.${quoteIdent(k.name)} = ${cast(k)}`).join(' AND ');
    const setCols = cols.filter((c) => !keys.includes(c));
    const insertSql = `INSERT INTO ${t} (${cols.map((c) => quoteIdent(c.name)).join(', ')}) SELECT ${cols.map(cast).join(', ')} FROM ${unnest(cols, false)}`;

    const statement = async (sql: string, values: string[]): Promise<{ rows: { ord: number }[] }> => {
      const name = `ferry_w_${createHash('sha1').update(sql).digest('hex').slice(0, NAME_HASH_LEN)}`;
      return client.query<{ ord: number }>({ name, text: sql, values });
    };
    const counted = async (sql: string, which: PgColumn[], idx: number[]): Promise<number[]> => {
      const r = await statement(sql, arrays(idx, which));
      const counts = new Array<number>(idx.length).fill(0);
      for (const row of r.rows) counts[Number(row.ord) - 1] = (counts[Number(row.ord) - 1] ?? 0) + 1;
      return counts;
    };
    const notFound = (): WriteResult => failed('NotFound', `No record of ${table.fullName} matches the key.`);

    switch (action) {
      case 'Upsert': {
        const target = keys.map((k) => quoteIdent(k.name)).join(', ');
        const onConflict = setCols.length ? `DO UPDATE SET ${setCols.map((c) => `${quoteIdent(c.name)} = EXCLUDED.${quoteIdent(c.name)}`).join(', ')}` : 'DO NOTHING';
        const sql = `${insertSql} ON CONFLICT (${target}) ${onConflict}`;
        await bisect(g.indices, async (idx) => void (await statement(sql, arrays(idx, cols))), (i) => i, results, table);
        return;
      }
      case 'Delete': {
        const sql = `DELETE FROM ${t} AS t USING ${unnest(keys, true)} WHERE ${match} RETURNING v.ord`;
        await bisect(g.indices, (idx) => counted(sql, keys, idx), (i) => i, results, table, notFound);
        return;
      }
      case 'Update':
      case 'UpdateInsert': {
        const upd = [...setCols, ...keys];
        const set = setCols.length ? setCols.map((c) => `${quoteIdent(c.name)} = ${cast(c)}`).join(', ') : `${quoteIdent((keys[0] as PgColumn).name)} = t.${quoteIdent((keys[0] as PgColumn).name)}`;
        const sql = `UPDATE ${t} AS t SET ${set} FROM ${unnest(upd, true)} WHERE ${match} RETURNING v.ord`;
        await bisect(g.indices, (idx) => counted(sql, upd, idx), (i) => i, results, table, action === 'Update' ? notFound : undefined);
        if (action === 'UpdateInsert') {
          const missing = g.indices.filter((i) => results[i] === undefined);
          if (missing.length) await bisect(missing, async (idx) => void (await statement(insertSql, arrays(idx, cols))), (i) => i, results, table);
        }
        return;
      }
      case 'Create':
        return;
    }
  }
}

const ARRAY_ESCAPE = /["\\]/;
const ARRAY_ESCAPES = /["\\]/g;

/** One element of a text[] literal: NULL, or the text in double quotes with `"` and `\` escaped. */
/** A string as an SQL literal (standard_conforming_strings: only quotes are doubled). */
const quoteLiteral = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** A constraint of the table as rowByRow reads it: its columns (and the parent's), in key order. */
interface ConstraintRow {
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
async function refusalConstraints(client: PoolClient, table: PgTable): Promise<ConstraintRow[]> {
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
function refusalReason(rows: readonly ConstraintRow[], cols: readonly PgColumn[]): { reason: string; terms: string[]; read: Set<string> } {
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
  const reasons = [...nulls.map((c) => `WHEN ${col(c)} IS NULL THEN ${quoteLiteral(`n${c}`)}`), ...checks.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((c) => `WHEN (${c.expr}) IS FALSE THEN ${quoteLiteral(`c${c.name}`)}`)];
  return { reason: reasons.length > 0 ? `CASE ${reasons.join(' ')} END` : 'NULL::text', terms, read };
}

/**
 * The error rowByRow gives a row its constraints refuse without trying it (`why` as
 * {@link refusalReason} tells it): the server's own words for it.
 */
function guessedRefusal(table: PgTable, why: string): WriteResult {
  const name = why.slice(1);
  const state = why.startsWith('n') ? '23502' : '23514';
  const message = state === '23502' ? `null value in column "${name}" of relation "${table.name}" violates not-null constraint` : `new row for relation "${table.name}" violates check constraint "${name}"`;
  const field = state === '23502' ? (table.columns.find((c) => c.name === name)?.fullName ?? name) : undefined;
  return failed(recordErrorCode(state) ?? 'DatastoreError', recordMessage(message, null), { nativeCode: state, ...(field ? { field } : {}) });
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
async function refusalPredicate(client: PoolClient, table: PgTable, cols: readonly PgColumn[], stage: string): Promise<{ picks: string; reason: string }> {
  const have = new Set(cols.map((c) => c.name));
  const rows = await refusalConstraints(client, table);
  const col = (c: string): string => `s.${quoteIdent(c)}`;
  const allSet = (cs: readonly string[], alias = 's.'): string => cs.map((c) => `${alias}${quoteIdent(c)} IS NOT NULL`).join(' AND ');
  const { reason, terms } = refusalReason(rows, cols);
  for (const r of rows) {
    if (r.cols.length === 0 || !r.cols.every((c) => have.has(c))) continue;
    if (r.kind === 'u') {
      const same = r.cols.map((c) => `t.${quoteIdent(c)} = ${col(c)}`).join(' AND ');
      terms.push(`(${allSet(r.cols)} AND EXISTS (SELECT 1 FROM ${qualified(table)} t WHERE ${same} OFFSET 0))`);
      const key = r.cols.map(quoteIdent).join(', ');
      terms.push(`s.ferry_ord IN (SELECT d.ferry_ord FROM (SELECT ferry_ord, row_number() OVER (PARTITION BY ${key} ORDER BY ferry_ord) AS k FROM ${stage} WHERE ${allSet(r.cols, '')}) d WHERE d.k > 1)`);
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

function arrayElement(v: string | null): string {
  if (v === null) return 'NULL';
  return ARRAY_ESCAPE.test(v) ? `"${v.replace(ARRAY_ESCAPES, '\\$&')}"` : `"${v}"`;
}

/**
 * Runs `run` over items; on a record-class failure splits them in halves and retries each, down
 * to single items, which then get their own error. `run` returns affected counts per item (or
 * undefined for one each); a count of 0 gets `zero()` if given, else stays unset (UpdateInsert
 * inserts those next).
 */
async function bisect<T>(
  items: T[],
  run: (items: T[]) => Promise<number[] | undefined>,
  index: (item: T) => number,
  results: WriteResult[],
  table: PgTable,
  zero?: () => WriteResult,
): Promise<void> {
  if (items.length === 0) return;
  let counts: number[] | undefined;
  try {
    counts = await run(items);
  } catch (err) {
    const state = sqlState(err);
    const code = recordErrorCode(state);
    if (!code) throw err;
    if (items.length === 1) {
      const e = err as { message?: string; detail?: string; column?: string };
      const field = e.column ? (table.columns.find((c) => c.name === e.column)?.fullName ?? e.column) : undefined;
      results[index(items[0] as T)] = failed(code, recordMessage(e.message, e.detail), { ...(state ? { nativeCode: state } : {}), ...(field ? { field } : {}) });
      return;
    }
    const mid = items.length >> 1;
    await bisect(items.slice(0, mid), run, index, results, table, zero);
    await bisect(items.slice(mid), run, index, results, table, zero);
    return;
  }
  items.forEach((item, k) => {
    const n = counts ? (counts[k] ?? 0) : 1;
    if (n > 0) results[index(item)] = succeeded(n);
    else if (zero) results[index(item)] = zero();
  });
}

/**
 * Checks each record and groups the valid ones by their field set (in column order), keeping input
 * order inside a group. Invalid records get their result here.
 */
function groupRecords(table: PgTable, byName: Map<string, PgColumn>, keys: PgColumn[], batch: readonly ConnectorRecord[], results: WriteResult[]): Group[] {
  const groups = new Map<string, Group>();
  let prevKeys: string[] | undefined;
  let prevGroup: Group | undefined;
  for (let r = 0; r < batch.length; r++) {
    const rec = batch[r] as ConnectorRecord;
    if (prevKeys && prevGroup && sameKeys(prevKeys, rec)) {
      if (keys.length && !hasKeys(rec, keys, results, r)) continue;
      prevGroup.indices.push(r);
      continue;
    }
    const names = Object.keys(rec);
    const cols: PgColumn[] = [];
    let bad: WriteResult | undefined;
    for (const n of names) {
      const c = byName.get(n);
      if (!c) bad = failed('UnknownField', `The entity ${table.fullName} has no field ${n}.`, { field: n });
      else if (c.readOnly) bad = failed('InvalidValue', `The field ${n} is generated and cannot be written.`, { field: n });
      if (bad) break;
      cols.push(c as PgColumn);
    }
    if (bad) {
      results[r] = bad;
      continue;
    }
    if (keys.length && !hasKeys(rec, keys, results, r)) continue;
    // Grouped by field set; the group's columns keep its first record's order (its COPY reads
    // records in that order).
    const sig = [...cols]
      .sort((a, b) => a.attnum - b.attnum)
      .map((c) => c.name)
      .join('\u0000');
    let g = groups.get(sig);
    if (!g) {
      g = { cols, indices: [] };
      groups.set(sig, g);
    }
    g.indices.push(r);
    prevKeys = names;
    prevGroup = g;
  }
  return [...groups.values()];
}

/** The record has exactly these fields in this order (checked without allocating). */
function sameKeys(names: string[], rec: ConnectorRecord): boolean {
  let n = 0;
  for (const k in rec) if (names[n++] !== k) return false;
  return n === names.length;
}

function hasKeys(rec: ConnectorRecord, keys: PgColumn[], results: WriteResult[], r: number): boolean {
  for (const k of keys) {
    const v = rec[k.fullName];
    if (v === null || v === undefined) {
      results[r] = failed('MissingKey', `The record has no value for the key field ${k.fullName}.`, { field: k.fullName });
      return false;
    }
  }
  return true;
}

/** Splits a group into consecutive runs in which no key repeats, so each statement sees a key once. */
/** The group's records in `n` lanes by a hash of their key values; one key, one lane, in order. */
function splitByKey(g: Group, keys: PgColumn[], batch: readonly ConnectorRecord[], n: number): number[][] {
  const lanes: number[][] = Array.from({ length: n }, () => []);
  for (const i of g.indices) {
    const rec = batch[i] as ConnectorRecord;
    let h = 0x811c9dc5;
    for (const k of keys) {
      // FNV-1a of the value's canonical text: values the server takes for one key (7 and '07',
      // datetimes in two zones) land in one lane.
      const raw = rec[k.fullName];
      const c = coerceValue(k.type, raw);
      const t = String(c === INVALID ? raw : c);
      for (let j = 0; j < t.length; j++) h = Math.imul(h ^ t.charCodeAt(j), 0x01000193);
      h = Math.imul(h ^ 0x1f, 0x01000193);
    }
    (lanes[(h >>> 0) % n] as number[]).push(i);
  }
  return lanes.filter((l) => l.length > 0);
}

function uniqueKeySegments(g: Group, keys: PgColumn[], batch: readonly ConnectorRecord[]): number[][] {
  const out: number[][] = [];
  let seen = new Set<unknown>();
  let cur: number[] = [];
  const single = keys.length === 1 ? (keys[0] as PgColumn).fullName : undefined;
  for (const i of g.indices) {
    const rec = batch[i] as ConnectorRecord;
    // One key field: its value itself (a Set tells 1 from '1' as the tagged text below does).
    const key = single !== undefined ? rec[single] : keys.map((k) => `${typeof rec[k.fullName]}:${String(rec[k.fullName])}`).join('\u0001');
    if (seen.has(key)) {
      out.push(cur);
      cur = [];
      seen = new Set();
    }
    seen.add(key);
    cur.push(i);
  }
  if (cur.length) out.push(cur);
  return out;
}
