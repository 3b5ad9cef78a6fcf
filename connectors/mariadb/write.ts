import { Readable } from 'node:stream';
import type { Pool, PoolConnection, PoolOptions } from 'mysql2';
import {
  CHECKPOINT_TABLE,
  ConnectorError,
  failed,
  keyColumns,
  OK_ONE,
  recordMaker,
  throwIfAborted,
  unpackRecords,
  type PackedBatch,
  type CallContext,
  type Checkpoint,
  type ConnectorRecord,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
} from '../../src/connectors/sdk.js';
import { quoteIdent, type MariaColumn, type MariaTable } from './catalogue.js';
import { callError, recordErrorCode, recordMessage, serverErrno } from './errors.js';
import { runKeyed, recordStatements } from './keyed.js';
import { change, checkout, killOnAbort, rows, run } from './pool.js';
import type { BulkMethod } from './properties.js';
import { packedTsv } from './packed.js';
import { invalid, rowLiteral, tsvEncoder } from './sql-text.js';

/**
 * Writes (docs/connectors.md "mariadb"):
 *
 *   Create        LOAD DATA LOCAL INFILE of the batch as a tab-separated stream, in a transaction
 *                 that commits only when the server loaded every row without a warning; else (or
 *                 where the server refuses local files) multi-row INSERT statements
 *   Upsert        multi-row INSERT … ON DUPLICATE KEY UPDATE when the key fields are the primary
 *                 or a unique key; else as Update/Insert
 *   Update, Delete, Update/Insert   statements per record, many per round trip (keyed.ts)
 *
 * A multi-row statement fails as a whole; when it fails for a record's sake (a duplicate key, a
 * constraint, a value that does not fit) it is split in halves and each half is sent again,
 * recursively, until the failing records stand alone: exactly they fail, in place, with the
 * server's error; every other record is written. Tables without transactions (MyISAM, Aria) are
 * written one row per statement, since a failed statement there keeps the rows before the failure.
 */

/** LOAD DATA LOCAL refused by the server or the client: the session stops trying it. */
const LOCAL_REFUSED = new Set([1148, 1227, 2068, 3948, 4166]);

export interface WriterState {
  pool: Pool;
  poolOptions: PoolOptions;
  bulkMethod: BulkMethod;
  /** False once the server refused LOAD DATA LOCAL. */
  loadData: boolean;
  /** Most bytes of one INSERT statement (a part of the server's max_allowed_packet). */
  statementBytes: number;
  checkpointTable: boolean;
}

/** Consecutive records with one field set: their columns and their positions in the batch. */
interface Segment {
  cols: MariaColumn[];
  indices: number[];
}

/**
 * Checks each record (unknown and generated fields, missing keys) and splits the valid ones into
 * runs of consecutive records with one field set, so that the order of the batch is kept.
 */
function segments(
  table: MariaTable,
  byName: Map<string, MariaColumn>,
  keys: MariaColumn[],
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
): Segment[] {
  const out: Segment[] = [];
  let cur: Segment | undefined;
  let names: string[] = [];
  for (let r = 0; r < batch.length; r++) {
    const rec = batch[r] as ConnectorRecord;
    const same = cur !== undefined && sameKeys(names, rec);
    let bad: WriteResult | undefined;
    for (const k of keys) {
      const v = rec[k.fullName];
      if (v === null || v === undefined) {
        bad = failed('MissingKey', `The record has no value for the key field ${k.fullName}.`, { field: k.fullName });
        break;
      }
    }
    if (!bad && !same) {
      names = Object.keys(rec);
      const cols: MariaColumn[] = [];
      for (const n of names) {
        const c = byName.get(n);
        if (!c) bad = failed('UnknownField', `The entity ${table.fullName} has no field ${n}.`, { field: n });
        else if (c.readOnly)
          bad = failed('InvalidValue', `The field ${n} is generated and cannot be written.`, { field: n });
        if (bad) break;
        cols.push(c as MariaColumn);
      }
      if (!bad) {
        cur = { cols, indices: [] };
        out.push(cur);
      } else cur = undefined;
    }
    if (bad) results[r] = bad;
    else cur?.indices.push(r);
  }
  return out;
}

/** The record has exactly these fields in this order (checked without allocating). */
function sameKeys(names: string[], rec: ConnectorRecord): boolean {
  let n = 0;
  for (const k in rec) if (names[n++] !== k) return false;
  return n === names.length;
}

/** Whether the key fields are the primary key or a unique key of the table (Upsert's conflict target). */
function isUniqueKey(table: MariaTable, keys: MariaColumn[]): boolean {
  const names = new Set(keys.map((k) => k.name));
  return table.uniqueKeys.some((u) => u.length === names.size && u.every((c) => names.has(c)));
}

export class MariaWriter {
  constructor(readonly state: WriterState) {}

  async write(
    action: WriteAction,
    table: MariaTable,
    batch: readonly ConnectorRecord[],
    options: WriteOptions,
    ctx: CallContext,
    /** The batch's LOAD DATA was just refused (writePacked): straight to INSERTs. */
    noLoad = false,
  ): Promise<WriteResult[]> {
    if (table.kind !== 'table')
      throw new ConnectorError('Unsupported', `${table.fullName} is a view: it cannot be written.`);
    if (options.checkpoint && action !== 'Create')
      throw new ConnectorError('Unsupported', `A checkpoint is saved with Create batches only, not with ${action}.`);
    const byName = new Map(table.columns.map((c) => [c.fullName, c]));
    const keys = keyColumns(action, table.fullName, table.columns, byName, options.keyFields);
    const results: WriteResult[] = new Array<WriteResult>(batch.length);
    const segs = segments(table, byName, keys, batch, results);
    if (segs.length === 0 && !options.checkpoint) return results;
    throwIfAborted(ctx.signal);
    const { conn, release } = await checkout(this.state.pool, ctx);
    const stopKill = killOnAbort(this.state.poolOptions, conn, ctx);
    let broken = false;
    try {
      if (options.checkpoint) await this.createWithCheckpoint(conn, table, segs, batch, results, options.checkpoint);
      else
        for (const seg of segs) {
          await this.segment(conn, action, table, keys, seg, batch, results, false, noLoad);
          throwIfAborted(ctx.signal);
        }
    } catch (err) {
      broken = serverErrno(err) === undefined;
      throw callError(err, `The ${action} batch failed`);
    } finally {
      const killed = await stopKill();
      release(broken || killed);
    }
    ctx.progress({ records: batch.length });
    return results;
  }

  private async segment(
    conn: PoolConnection,
    action: WriteAction,
    table: MariaTable,
    keys: MariaColumn[],
    seg: Segment,
    batch: readonly ConnectorRecord[],
    results: WriteResult[],
    inTransaction: boolean,
    noLoad = false,
  ): Promise<void> {
    if (action === 'Create') return this.create(conn, table, seg, batch, results, inTransaction, noLoad);
    if (action === 'Upsert' && isUniqueKey(table, keys)) {
      const keyNames = new Set(keys.map((k) => k.name));
      const rest = seg.cols.filter((c) => !keyNames.has(c.name));
      const set = (rest.length ? rest : [keys[0] as MariaColumn])
        .map((c) => `${quoteIdent(c.name)} = VALUES(${quoteIdent(c.name)})`)
        .join(', ');
      return this.insert(conn, table, seg, batch, results, ` ON DUPLICATE KEY UPDATE ${set}`);
    }
    const stmtAction = action === 'Upsert' ? 'UpdateInsert' : action;
    const records: { index: number; sql: string[] }[] = [];
    for (const i of seg.indices) {
      const sql = recordStatements(stmtAction, table, seg.cols, keys, batch[i] as ConnectorRecord);
      if (Array.isArray(sql)) records.push({ index: i, sql });
      else results[i] = sql;
    }
    await runKeyed(conn, action, table, records, results);
  }

  /** Create: LOAD DATA where it can be used, else multi-row INSERT. */
  private async create(
    conn: PoolConnection,
    table: MariaTable,
    seg: Segment,
    batch: readonly ConnectorRecord[],
    results: WriteResult[],
    inTransaction: boolean,
    noLoad = false,
  ): Promise<void> {
    const w = this.state;
    if (!noLoad && w.bulkMethod !== 'insert' && w.loadData && table.transactional && seg.indices.length > 1) {
      if (await this.loadData(conn, table, seg, batch, results, inTransaction)) return;
    }
    await this.insert(conn, table, seg, batch, results, '');
  }

  /**
   * The segment as a LOAD DATA LOCAL stream, in a transaction (a savepoint inside the checkpoint's
   * transaction). True when every row went in without a warning; otherwise it is rolled back (the
   * server turns a refused row of a local file into a warning and goes on) and false is returned,
   * for the INSERT path to find the refused records.
   */
  private async loadData(
    conn: PoolConnection,
    table: MariaTable,
    seg: Segment,
    batch: readonly ConnectorRecord[],
    results: WriteResult[],
    inTransaction: boolean,
  ): Promise<boolean> {
    const sent: number[] = [];
    const sql = loadDataSql(table, seg.cols);
    await run(conn, inTransaction ? 'SAVEPOINT ferry_load' : 'START TRANSACTION');
    let header: { affectedRows: number; warningStatus: number };
    try {
      // The file is encoded as the server reads it: the server loads one part while the next is made.
      header = await change(conn, {
        sql,
        infile: () => Readable.from(tsvChunks(batch, seg, results, sent), { objectMode: false }),
      });
    } catch (err) {
      await run(conn, inTransaction ? 'ROLLBACK TO SAVEPOINT ferry_load' : 'ROLLBACK');
      const errno = serverErrno(err) ?? (err as { errno?: number }).errno;
      if (errno !== undefined && LOCAL_REFUSED.has(errno)) {
        this.state.loadData = false;
        return false;
      }
      if (recordErrorCode(err)) return false;
      throw err;
    }
    if (sent.length === 0) {
      await run(conn, inTransaction ? 'RELEASE SAVEPOINT ferry_load' : 'COMMIT');
      return true;
    }
    if (header.affectedRows === sent.length && header.warningStatus === 0) {
      if (!inTransaction) await run(conn, 'COMMIT');
      for (const i of sent) results[i] = OK_ONE;
      return true;
    }
    await run(conn, inTransaction ? 'ROLLBACK TO SAVEPOINT ferry_load' : 'ROLLBACK');
    return false;
  }

  /** Multi-row INSERT statements (with `tail`, an ON DUPLICATE KEY clause), halved on a record's refusal. */
  private async insert(
    conn: PoolConnection,
    table: MariaTable,
    seg: Segment,
    batch: readonly ConnectorRecord[],
    results: WriteResult[],
    tail: string,
  ): Promise<void> {
    const head = `INSERT INTO ${quoteIdent(table.name)} (${seg.cols.map((c) => quoteIdent(c.name)).join(', ')}) VALUES `;
    const values: string[] = [];
    const indices: number[] = [];
    for (const i of seg.indices) {
      const row = rowLiteral(batch[i] as ConnectorRecord, seg.cols);
      if (typeof row === 'string') {
        values.push(row);
        indices.push(i);
      } else results[i] = row;
    }
    const limit = table.transactional ? this.state.statementBytes : 0;
    let start = 0;
    while (start < values.length) {
      let end = start + 1;
      let bytes = (values[start] as string).length;
      while (end < values.length && bytes + (values[end] as string).length < limit)
        bytes += (values[end++] as string).length + 1;
      await this.insertPart(conn, head, tail, values.slice(start, end), indices.slice(start, end), results);
      start = end;
    }
  }

  private async insertPart(
    conn: PoolConnection,
    head: string,
    tail: string,
    values: string[],
    indices: number[],
    results: WriteResult[],
  ): Promise<void> {
    try {
      await run(conn, head + values.join(',') + tail);
      for (const i of indices) results[i] = OK_ONE;
    } catch (err) {
      const code = recordErrorCode(err);
      if (!code) throw err;
      if (values.length === 1) {
        results[indices[0] as number] = failed(code, recordMessage(err), { nativeCode: String(serverErrno(err)) });
        return;
      }
      const half = values.length >> 1;
      await this.insertPart(conn, head, tail, values.slice(0, half), indices.slice(0, half), results);
      await this.insertPart(conn, head, tail, values.slice(half), indices.slice(half), results);
    }
  }

  /**
   * A packed Create (src/connectors/packed.ts) as one LOAD DATA straight from its cells (packed.ts),
   * when it can be: a plain Create of a table with transactions, every field a writable column,
   * every cell in a form packed.ts writes as it is. Anything else, and a load the server does not
   * take whole, goes the records way (the latter straight to INSERTs, so it is not loaded twice).
   */
  async writePacked(
    action: WriteAction,
    table: MariaTable,
    batch: PackedBatch,
    options: WriteOptions,
    ctx: CallContext,
  ): Promise<WriteResult[]> {
    const asRecords = (noLoad: boolean): Promise<WriteResult[]> =>
      this.write(action, table, unpackRecords(batch, recordMaker(batch.fields)), options, ctx, noLoad);
    const w = this.state;
    if (action !== 'Create' || options.checkpoint || table.kind !== 'table' || !table.transactional)
      return asRecords(false);
    if (w.bulkMethod === 'insert' || !w.loadData || batch.rows < 2) return asRecords(false);
    const byName = new Map(table.columns.map((c) => [c.fullName, c]));
    const cols = batch.fields.map((f) => byName.get(f));
    if (cols.some((c) => !c || c.readOnly)) return asRecords(false);
    const state = { refused: false };
    throwIfAborted(ctx.signal);
    const { conn, release } = await checkout(w.pool, ctx);
    const stopKill = killOnAbort(w.poolOptions, conn, ctx);
    let broken = false;
    let loaded: boolean;
    try {
      await run(conn, 'START TRANSACTION');
      let header: { affectedRows: number; warningStatus: number } | undefined;
      try {
        header = await change(conn, {
          sql: loadDataSql(table, cols as MariaColumn[]),
          infile: () => Readable.from(packedTsv(batch, cols as MariaColumn[], state)),
        });
      } catch (err) {
        await run(conn, 'ROLLBACK');
        const errno = serverErrno(err) ?? (err as { errno?: number }).errno;
        if (errno !== undefined && LOCAL_REFUSED.has(errno)) w.loadData = false;
        else if (!recordErrorCode(err)) throw err;
      }
      loaded =
        !state.refused && header !== undefined && header.affectedRows === batch.rows && header.warningStatus === 0;
      await run(conn, loaded ? 'COMMIT' : 'ROLLBACK');
    } catch (err) {
      broken = serverErrno(err) === undefined;
      throw callError(err, `The ${action} batch failed`);
    } finally {
      const killed = await stopKill();
      release(broken || killed);
    }
    // A cell packed.ts does not write as it is: the records way decides, LOAD DATA included.
    if (!loaded) return asRecords(!state.refused);
    ctx.progress({ records: batch.rows });
    return new Array<WriteResult>(batch.rows).fill(OK_ONE);
  }

  /** A Create batch and a caller's checkpoint in one transaction: both commit or neither. */
  private async createWithCheckpoint(
    conn: PoolConnection,
    table: MariaTable,
    segs: Segment[],
    batch: readonly ConnectorRecord[],
    results: WriteResult[],
    cp: Checkpoint,
  ): Promise<void> {
    if (!table.transactional)
      throw new ConnectorError(
        'Unsupported',
        `The table ${table.fullName} has no transactions (its engine): a checkpoint cannot commit with its rows.`,
      );
    await this.ensureCheckpointTable(conn);
    await run(conn, 'START TRANSACTION');
    try {
      for (const seg of segs) await this.create(conn, table, seg, batch, results, true);
      await run(conn, {
        sql: `INSERT INTO ${quoteIdent(CHECKPOINT_TABLE)} (\`key\`, value, saved_at) VALUES (?, ?, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE value = VALUES(value), saved_at = VALUES(saved_at)`,
        values: [cp.key, cp.value],
      });
      await run(conn, 'COMMIT');
    } catch (err) {
      await run(conn, 'ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  private async ensureCheckpointTable(conn: PoolConnection): Promise<void> {
    if (this.state.checkpointTable) return;
    await run(
      conn,
      `CREATE TABLE IF NOT EXISTS ${quoteIdent(CHECKPOINT_TABLE)} (\`key\` varchar(500) NOT NULL PRIMARY KEY, value longtext NOT NULL, saved_at datetime(6) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
    );
    this.state.checkpointTable = true;
  }

  /** The checkpoint saved under `key`, or null. */
  async readCheckpoint(key: string, ctx: CallContext): Promise<string | null> {
    const { conn, release } = await checkout(this.state.pool, ctx);
    try {
      const found = await rows<{ n: number }>(
        conn,
        'SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?',
        [CHECKPOINT_TABLE],
      );
      const value = Number(found[0]?.n)
        ? ((
            await rows<{ value: string }>(conn, `SELECT value FROM ${quoteIdent(CHECKPOINT_TABLE)} WHERE \`key\` = ?`, [
              key,
            ])
          )[0]?.value ?? null)
        : null;
      release();
      return value;
    } catch (err) {
      release(serverErrno(err) === undefined);
      throw callError(err, 'The checkpoint cannot be read');
    }
  }
}

/** LOAD DATA LOCAL of a tab-separated stream into the columns (binary ones as hex, unhexed by the statement). */
function loadDataSql(table: MariaTable, cols: readonly MariaColumn[]): string {
  const targets = cols.map((c, j) => (c.type === 'binary' ? `@b${j}` : quoteIdent(c.name)));
  const sets = cols.flatMap((c, j) => (c.type === 'binary' ? [`${quoteIdent(c.name)} = UNHEX(@b${j})`] : []));
  return (
    `LOAD DATA LOCAL INFILE 'ferry.tsv' INTO TABLE ${quoteIdent(table.name)} CHARACTER SET utf8mb4 ` +
    `FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' (${targets.join(', ')})` +
    (sets.length ? ` SET ${sets.join(', ')}` : '')
  );
}

/** Characters of one part of a LOAD DATA file. */
const PART = 128 * 1024;

/**
 * The segment's records as LOAD DATA lines, in parts of about 128 Ki characters, made as they are
 * read. A record with a value that is not one of its field's type gets its failed result and is
 * left out; the positions of the records sent are added to `sent`.
 */
function* tsvChunks(
  batch: readonly ConnectorRecord[],
  seg: Segment,
  results: WriteResult[],
  sent: number[],
): Generator<Buffer> {
  const encode = tsvEncoder(seg.cols);
  let part = '';
  for (const i of seg.indices) {
    const rec = batch[i] as ConnectorRecord;
    const line = encode(rec);
    if (typeof line === 'number') {
      const c = seg.cols[line] as MariaColumn;
      results[i] = invalid(c, rec[c.fullName]);
      continue;
    }
    sent.push(i);
    part += line;
    if (part.length >= PART) {
      yield Buffer.from(part, 'utf8');
      part = '';
    }
  }
  if (part) yield Buffer.from(part, 'utf8');
}
