import type Database from 'better-sqlite3';
import { recordMaker, throwIfAborted, uniqueFullNames, type CallContext, type ConnectorRecord, type Filter, type QueryOptions, type RecordBatch, type Value } from '../../src/connectors/sdk.js';
import type { SqliteTable } from './catalogue.js';
import { callError } from './errors.js';
import type { ReadBatch } from './reader.js';
import { selectSql, type Bind } from './sql.js';
import { ReadThread } from './thread.js';
import { readConverter, type ReadConvert } from './types.js';

type Row = (number | bigint | string | Buffer | null)[];

/**
 * Streams the rows of a statement in batches. better-sqlite3 steps the statement one row at a time
 * (`iterate`), so only one batch is in memory; the statement and its connection are released when
 * the caller stops.
 */
export async function* streamRows(db: Database.Database, sql: string, params: Bind[], names: string[], convs: ReadConvert[], batchSize: number, limitRows: number | undefined, ctx: CallContext): AsyncGenerator<RecordBatch, void, undefined> {
  let it: IterableIterator<Row>;
  try {
    it = db.prepare(sql).raw(true).safeIntegers(true).iterate(...params) as IterableIterator<Row>;
  } catch (err) {
    throw callError(err, 'The query failed');
  }
  const n = names.length;
  // Each record is one object literal with every field (recordMaker).
  const make = recordMaker(names);
  const vals = new Array<Value>(n);
  let sent = 0;
  try {
    for (;;) {
      throwIfAborted(ctx.signal);
      const batch: ConnectorRecord[] = [];
      let done = false;
      try {
        while (batch.length < batchSize) {
          const r = it.next();
          if (r.done) {
            done = true;
            break;
          }
          const row = r.value;
          for (let i = 0; i < n; i++) vals[i] = (convs[i] as ReadConvert)(row[i] ?? null);
          batch.push(make(vals));
        }
      } catch (err) {
        throw callError(err, 'The query failed');
      }
      sent += batch.length;
      if (batch.length) {
        yield batch;
        ctx.progress({ records: sent });
      }
      if (done || (limitRows !== undefined && sent >= limitRows)) return;
    }
  } finally {
    it.return?.();
  }
}

/**
 * Streams the rows of a statement the session's reader thread runs (thread.ts, reader.ts): the
 * thread steps the statement and packs each batch; this side turns the packed values into records
 * with the same converters as {@link streamRows}, while the thread reads the next batch.
 */
export async function* threadRows(thread: ReadThread, sql: string, params: Bind[], names: string[], convs: ReadConvert[], batchSize: number, ctx: CallContext): AsyncGenerator<RecordBatch, void, undefined> {
  const n = names.length;
  const make = recordMaker(names);
  const vals = new Array<Value>(n);
  let b: ReadBatch;
  try {
    b = await thread.open(sql, params, batchSize, n);
  } catch (err) {
    throw callError(err, 'The query failed');
  }
  let sent = 0;
  try {
    for (;;) {
      throwIfAborted(ctx.signal);
      const { rows, tags, nums, text, ends, blobs } = b;
      const batch = new Array<ConnectorRecord>(rows);
      let v = 0;
      let s = 0;
      let pos = 0;
      let o = 0;
      for (let r = 0; r < rows; r++) {
        for (let i = 0; i < n; i++, v++) {
          const t = tags[v];
          let raw: number | bigint | string | Buffer | null = null;
          if (t === 1) raw = nums[v] as number;
          else if (t === 2 || t === 3) {
            const e = ends[s++] as number;
            raw = t === 2 ? text.slice(pos, e) : BigInt(text.slice(pos, e));
            pos = e;
          } else if (t === 4) {
            const u = blobs[o++] as Uint8Array;
            raw = Buffer.from(u.buffer, u.byteOffset, u.byteLength);
          }
          vals[i] = (convs[i] as ReadConvert)(raw);
        }
        batch[r] = make(vals);
      }
      sent += rows;
      if (rows) {
        yield batch;
        ctx.progress({ records: sent });
      }
      if (b.done) return;
      try {
        b = await thread.next(b.cursor);
      } catch (err) {
        throw callError(err, 'The query failed');
      }
    }
  } finally {
    // Stopped early: the thread releases the statement and its connection.
    if (!b.done) await thread.release(b.cursor).catch(() => undefined);
  }
}

/** A table's query, on a connection of the session's thread or in its reader thread. */
export function queryTable(from: Database.Database | ReadThread, table: SqliteTable, filter: Filter | undefined, options: QueryOptions, ctx: CallContext): AsyncGenerator<RecordBatch, void, undefined> {
  const { sql, params, columns } = selectSql(table, filter, options);
  const names = columns.map((c) => c.fullName);
  const convs = columns.map((c) => readConverter(c.type));
  return from instanceof ReadThread ? threadRows(from, sql, params, names, convs, options.batchSize, ctx) : streamRows(from, sql, params, names, convs, options.batchSize, undefined, ctx);
}

/** Native query: rows of a reading statement, or one record `{ affected }` for the others. */
export async function* nativeRows(db: Database.Database, statement: string, params: readonly Value[], batchSize: number, ctx: CallContext): AsyncGenerator<RecordBatch, void, undefined> {
  let stmt: Database.Statement;
  try {
    stmt = db.prepare(statement);
  } catch (err) {
    throw callError(err, 'The native query is not valid');
  }
  const binds = params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p));
  if (!stmt.reader) {
    try {
      const r = stmt.run(...binds);
      yield [{ affected: r.changes }];
    } catch (err) {
      throw callError(err, 'The native query failed');
    }
    return;
  }
  const names = uniqueFullNames(stmt.columns().map((c) => c.name));
  yield* streamRows(db, statement, binds, names, names.map(() => readConverter('string')), batchSize, undefined, ctx);
}
