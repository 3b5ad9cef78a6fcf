import type Database from 'better-sqlite3';
import {
  ConnectorError,
  failed,
  INVALID,
  OK_ONE,
  succeeded,
  type ConnectorRecord,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
  keyColumns,
  CHECKPOINT_TABLE,
  type Checkpoint,
} from '../../src/connectors/sdk.js';
import { quoteIdent, type SqliteColumn, type SqliteTable } from './catalogue.js';
import { callError, RECORD_SQLITE_CODES, recordErrorCode, sqliteCode } from './errors.js';
import { writeValue } from './types.js';
import type { Bind } from './sql.js';
import { FAILED, NOT_FOUND, sqliteExecutor, type ExecChunk, type ExecJob, type ExecResult } from './executor.js';
import type { WriteThread } from './thread.js';

/**
 * Writes of one batch run in one transaction (`BEGIN IMMEDIATE … COMMIT`). A constraint failure
 * of a statement undoes that statement only (SQLite's statement journal), so a failing record
 * fails alone and the others commit together. A failure that ends the transaction (disk full,
 * I/O) fails the whole call.
 *
 * Create and Upsert insert up to {@link ROWS_PER_STATEMENT} records per statement
 * (`INSERT … VALUES (…), (…), …`), which halves the cost per record; when such a statement fails
 * for a record's reason, its records are run again one by one, so exactly the bad ones fail.
 * Update, UpdateInsert and Delete run one statement per record (each needs its own count).
 *
 * Values are checked against the field types first (SQLite itself would store 'abc' in an
 * INTEGER column): a value that does not fit is an InvalidValue for its record.
 */
const ROWS_PER_STATEMENT = 64;
/** Records per part of a batch handed to the writer thread (a multiple of ROWS_PER_STATEMENT). */
const PART_RECORDS = 1024;
/**
 * Characters of text per part at most (plus one record's): a batch's text travels as one string,
 * and V8's strings stop at about 2^29 characters.
 */
const TEXT_BUDGET = 1 << 25;
const MAX_VARIABLES = 32_766;

interface Sql {
  insert: string;
  update: string;
  upsert: string;
  delete: string;
}

/** The checked records of a part of a batch: the executor's job, and each job record's index in the batch. */
interface Packed {
  job: ExecJob;
  indices: number[];
  /** The record after the last one packed: `to`, or earlier when the text reached TEXT_BUDGET. */
  to: number;
}

export class SqliteWriter {
  private readonly sqlCache = new Map<string, Sql>();
  private readonly exec: (job: ExecJob) => ExecResult;

  constructor(db: Database.Database) {
    this.exec = sqliteExecutor(db, RECORD_SQLITE_CODES, false);
  }

  /** The statements of one (table, field set, key, rows per statement); built once per combination. */
  private sqlFor(table: SqliteTable, cols: SqliteColumn[], keys: SqliteColumn[], rows = 1): Sql {
    let sig = `${table.name}\u0000${rows}`;
    for (const c of cols) sig += `\u0000${c.name}`;
    for (const k of keys) sig += `\u0001${k.name}`;
    let sql = this.sqlCache.get(sig);
    if (sql) return sql;
    const t = quoteIdent(table.name);
    const where = keys.map((k) => `${quoteIdent(k.name)} = ?`).join(' AND ');
    const tuple = `(${cols.map(() => '?').join(', ')})`;
    const insert = cols.length
      ? `INSERT INTO ${t} (${cols.map((c) => quoteIdent(c.name)).join(', ')}) VALUES ${Array.from({ length: rows }, () => tuple).join(', ')}`
      : `INSERT INTO ${t} DEFAULT VALUES`;
    const setCols = cols.filter((c) => !keys.includes(c));
    const first = keys[0];
    const set = setCols.length
      ? setCols.map((c) => `${quoteIdent(c.name)} = ?`).join(', ')
      : first
        ? `${quoteIdent(first.name)} = ${quoteIdent(first.name)}`
        : '';
    const target = keys.map((k) => quoteIdent(k.name)).join(', ');
    const onConflict = setCols.length
      ? `DO UPDATE SET ${setCols.map((c) => `${quoteIdent(c.name)} = excluded.${quoteIdent(c.name)}`).join(', ')}`
      : 'DO NOTHING';
    sql = {
      insert,
      update: `UPDATE ${t} SET ${set} WHERE ${where}`,
      upsert: `${insert} ON CONFLICT (${target}) ${onConflict}`,
      delete: `DELETE FROM ${t} WHERE ${where}`,
    };
    if (this.sqlCache.size >= 500) this.sqlCache.clear();
    this.sqlCache.set(sig, sql);
    return sql;
  }

  /**
   * Checks the batch here, then runs its statements through `thread` when given (the session's
   * writer thread), else on this thread; both run the same executor.
   */
  async write(
    action: WriteAction,
    table: SqliteTable,
    batch: readonly ConnectorRecord[],
    options: WriteOptions,
    thread?: WriteThread,
  ): Promise<WriteResult[]> {
    if (table.isView) throw new ConnectorError('Unsupported', `${table.fullName} is a view: it cannot be written.`);
    if (options.checkpoint && action !== 'Create')
      throw new ConnectorError('Unsupported', `A checkpoint is saved with Create batches only, not with ${action}.`);
    const byName = new Map(table.columns.map((c) => [c.fullName, c]));
    const keys = keyColumns(action, table.fullName, table.columns, byName, options.keyFields);
    const results: WriteResult[] = new Array<WriteResult>(batch.length);
    const exec = (job: ExecJob): Promise<ExecResult> | ExecResult => (thread ? thread.run(job) : this.exec(job));
    // With a thread, the batch goes over in parts: the thread runs one part while this thread
    // checks the next (a small first part, so that it starts at once). Parts share the batch's one
    // transaction. Any part also ends where its text would pass TEXT_BUDGET.
    const parts: { indices: number[]; out: Promise<ExecResult> | ExecResult }[] = [];
    let committed = false;
    try {
      let from = 0;
      do {
        const limit = !thread
          ? batch.length
          : Math.min(batch.length, from + (from === 0 ? PART_RECORDS / 4 : PART_RECORDS));
        const { job, indices, to } = this.pack(action, table, byName, keys, batch, results, from, limit);
        job.begin = from === 0;
        job.commit = to === batch.length;
        if (job.commit && options.checkpoint) job.finally = checkpointStatements(options.checkpoint);
        const out = exec(job);
        // Awaited below in order; a part failing after an earlier failure is not reported twice.
        if (out instanceof Promise) out.catch(() => undefined);
        parts.push({ indices, out });
        committed = job.commit;
        from = to;
      } while (from < batch.length);
      for (const part of parts) this.results(table, part.indices, await part.out, results);
    } catch (err) {
      // Every part posted has its answer before the call returns (the session's next write, or
      // its close, must not overtake them); a batch stopped before its last part is undone.
      await Promise.allSettled(parts.map((p) => Promise.resolve(p.out)));
      if (!committed && parts.length > 0) {
        try {
          await exec({
            begin: false,
            commit: false,
            abort: true,
            action,
            chunks: [],
            tags: new Uint8Array(0),
            nums: new Float64Array(0),
            text: '',
            ends: new Uint32Array(0),
            others: [],
          });
        } catch {
          // Nothing left to undo, or the thread is gone with its transaction.
        }
      }
      if (err instanceof ConnectorError) throw err;
      const mapped = callError(err, `The ${action} batch failed`);
      throw mapped === err && !sqliteCode(err)
        ? new ConnectorError(
            'Datastore',
            `The ${action} batch failed: ${err instanceof Error ? err.message : String(err)}`,
            { cause: err },
          )
        : mapped;
    }
    return results;
  }

  private results(table: SqliteTable, indices: number[], out: ExecResult, results: WriteResult[]): void {
    if (out.errors.length === 0 && !out.rowids) {
      // The common case: every record written once.
      const status = out.status;
      let k = 0;
      for (; k < indices.length && status[k] === 1; k++) results[indices[k] as number] = OK_ONE;
      if (k === indices.length) return;
    }
    const errors = new Map(out.errors.map((e) => [e.at, e]));
    for (let k = 0; k < indices.length; k++) {
      const index = indices[k] as number;
      const st = out.status[k] as number;
      if (st === NOT_FOUND) results[index] = failed('NotFound', `No record of ${table.fullName} matches the key.`);
      else if (st === FAILED) {
        const e = errors.get(k);
        results[index] = failed(
          recordErrorCode(e?.code) ?? 'ConstraintViolation',
          e?.message ?? 'The record was refused.',
          e ? { nativeCode: e.code } : {},
        );
      } else {
        const rowid = out.rowids?.[k];
        results[index] =
          rowid !== undefined && !Number.isNaN(rowid) && table.rowidAlias
            ? succeeded(st, { [table.rowidAlias]: rowid })
            : succeeded(st);
      }
    }
  }

  /**
   * Checks the records `from`–`to` of the batch and packs the valid ones for the executor; the
   * invalid ones get their result now. Records with the same fields in the same order share one
   * column list (checked once). Values are checked against the field types (SQLite itself would
   * store 'abc' in an INTEGER column) and packed in record order; consecutive records with the
   * same columns form a chunk: for Create and Upsert of {@link ROWS_PER_STATEMENT} records, one
   * statement (retried record by record when it fails for a record's reason); for the other
   * actions one statement per record (each needs its own count).
   */
  private pack(
    action: WriteAction,
    table: SqliteTable,
    byName: Map<string, SqliteColumn>,
    keys: SqliteColumn[],
    batch: readonly ConnectorRecord[],
    results: WriteResult[],
    from: number,
    to: number,
  ): Packed {
    const cap = (to - from) * table.columns.length;
    const tags = new Uint8Array(cap);
    const nums = new Float64Array(cap);
    const ends = new Uint32Array(cap);
    const others: unknown[] = [];
    let text = '';
    let v = 0;
    let s = 0;
    const indices: number[] = [];
    const colsOf: SqliteColumn[][] = [];
    const vals: Bind[] = new Array<Bind>(table.columns.length);
    const raw: unknown[] = new Array<unknown>(table.columns.length);
    let prevNames: string[] = [];
    let prevCols: SqliteColumn[] = [];
    let keyPos: number[] = keys.map(() => -1);
    let r = from;
    for (; r < to && text.length < TEXT_BUDGET; r++) {
      const rec = batch[r] as ConnectorRecord;
      // Same fields in the same order as the previous record: reuse its columns (no allocation).
      // The values are read in the same loop (for-in reads them by the enumeration's own index).
      let same = true;
      let n = 0;
      for (const name in rec) {
        if (prevNames[n] !== name) {
          same = false;
          break;
        }
        raw[n++] = rec[name];
      }
      let cols = prevCols;
      if (!same || n !== prevNames.length) {
        const names: string[] = [];
        cols = [];
        let bad: WriteResult | undefined;
        for (const name in rec) {
          const c = byName.get(name);
          if (!c) bad = failed('UnknownField', `The entity ${table.fullName} has no field ${name}.`, { field: name });
          else if (c.generated)
            bad = failed('InvalidValue', `The field ${name} is generated and cannot be written.`, { field: name });
          if (bad) break;
          names.push(name);
          cols.push(c as SqliteColumn);
        }
        if (bad) {
          results[r] = bad;
          continue;
        }
        prevNames = names;
        prevCols = cols;
        keyPos = keys.map((k) => cols.indexOf(k));
        for (let i = 0; i < cols.length; i++) raw[i] = rec[(cols[i] as SqliteColumn).fullName];
      }
      let bad: WriteResult | undefined;
      for (let i = 0; i < cols.length; i++) {
        const c = cols[i] as SqliteColumn;
        const x = writeValue(c.type, raw[i]);
        if (x === INVALID) {
          bad = failed('InvalidValue', `The value of ${c.fullName} is not a valid ${c.type}.`, { field: c.fullName });
          break;
        }
        // A decimal of at most 15 characters is exact as a double, and the column would store it
        // as that number anyway: bound as one it costs a fraction of a text.
        vals[i] = c.numeric && c.type === 'decimal' && typeof x === 'string' && x.length <= 15 ? Number(x) : x;
      }
      if (!bad) {
        for (let k = 0; k < keys.length; k++) {
          const at = keyPos[k] as number;
          if (at < 0 || vals[at] === null) {
            const key = keys[k] as SqliteColumn;
            bad = failed('MissingKey', `The record has no value for the key field ${key.fullName}.`, {
              field: key.fullName,
            });
            break;
          }
        }
      }
      if (bad) {
        results[r] = bad;
        continue;
      }
      for (let i = 0; i < cols.length; i++, v++) {
        const x = vals[i];
        if (typeof x === 'number') {
          tags[v] = 1;
          nums[v] = x;
        } else if (typeof x === 'string') {
          tags[v] = 2;
          text += x;
          ends[s++] = text.length;
        } else if (x !== null && x !== undefined) {
          tags[v] = 3;
          others.push(x);
        }
      }
      indices.push(r);
      colsOf.push(cols);
    }

    const chunks: ExecChunk[] = [];
    const bulk = action === 'Create' || action === 'Upsert';
    let i = 0;
    while (i < colsOf.length) {
      const cols = colsOf[i] as SqliteColumn[];
      // Records that need their rowid back take the single-row statement.
      const rowid =
        action === 'Create' && table.rowidAlias !== undefined && !cols.some((c) => c.fullName === table.rowidAlias);
      const per = !bulk
        ? Infinity
        : rowid || cols.length === 0
          ? 1
          : Math.max(1, Math.min(ROWS_PER_STATEMENT, Math.floor(MAX_VARIABLES / cols.length)));
      let j = i + 1;
      while (j < colsOf.length && j - i < per && colsOf[j] === cols) j++;
      const rows = j - i;
      i = j;
      const sql = this.sqlFor(table, cols, keys);
      if (bulk) {
        const chunk: ExecChunk = { rows, cols: cols.length, one: action === 'Create' ? sql.insert : sql.upsert };
        if (rows === per && per > 1) {
          const many = this.sqlFor(table, cols, keys, per);
          chunk.multi = action === 'Create' ? many.insert : many.upsert;
        }
        if (rowid) chunk.rowid = true;
        chunks.push(chunk);
      } else {
        const chunk: ExecChunk = {
          rows,
          cols: cols.length,
          one: action === 'Delete' ? sql.delete : sql.update,
          keyPos: keys.map((k) => cols.indexOf(k)),
        };
        if (action !== 'Delete') chunk.setPos = cols.flatMap((c, k) => (keys.includes(c) ? [] : [k]));
        if (action === 'UpdateInsert') chunk.insert = sql.insert;
        chunks.push(chunk);
      }
    }
    return { job: { begin: true, commit: true, action, chunks, tags, nums, text, ends, others }, indices, to: r };
  }
}

/**
 * A caller's checkpoint, saved last in the batch's transaction: the table is made on first use (in
 * that transaction too), so a checkpoint exists exactly when its batch committed.
 */
function checkpointStatements(cp: Checkpoint): { sql: string; params: unknown[] }[] {
  const t = quoteIdent(CHECKPOINT_TABLE);
  return [
    {
      sql: `CREATE TABLE IF NOT EXISTS ${t} (key TEXT PRIMARY KEY, value TEXT NOT NULL, saved_at TEXT NOT NULL)`,
      params: [],
    },
    {
      sql: `INSERT INTO ${t} (key, value, saved_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, saved_at = excluded.saved_at`,
      params: [cp.key, cp.value, new Date().toISOString()],
    },
  ];
}

/** The checkpoint saved under `key`, or null (none, or no checkpoint table yet). */
export function readCheckpoint(db: Database.Database, key: string): string | null {
  const exists = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(CHECKPOINT_TABLE);
  if (!exists) return null;
  const row = db.prepare(`SELECT value FROM ${quoteIdent(CHECKPOINT_TABLE)} WHERE key = ?`).get(key) as
    { value: string } | undefined;
  return row?.value ?? null;
}
