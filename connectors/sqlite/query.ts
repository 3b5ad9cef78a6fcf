import type Database from 'better-sqlite3';
import {
  CELL_DECIMAL,
  CELL_FALSE,
  CELL_NULL,
  CELL_NUMBER,
  CELL_TEXT,
  CELL_TRUE,
  CELL_VALUE,
  recordMaker,
  throwIfAborted,
  uniqueFullNames,
  type CallContext,
  type ConnectorRecord,
  type Filter,
  type PackedBatch,
  type PropertyType,
  type QueryOptions,
  type RecordBatch,
  type Value,
} from '../../src/connectors/sdk.js';
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
export async function* streamRows(
  db: Database.Database,
  sql: string,
  params: Bind[],
  names: string[],
  convs: ReadConvert[],
  batchSize: number,
  limitRows: number | undefined,
  ctx: CallContext,
): AsyncGenerator<RecordBatch, void, undefined> {
  let it: IterableIterator<Row>;
  try {
    it = db
      .prepare(sql)
      .raw(true)
      .safeIntegers(true)
      .iterate(...params) as IterableIterator<Row>;
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
export async function* threadRows(
  thread: ReadThread,
  sql: string,
  params: Bind[],
  names: string[],
  convs: ReadConvert[],
  batchSize: number,
  ctx: CallContext,
): AsyncGenerator<RecordBatch, void, undefined> {
  const n = names.length;
  const make = recordMaker(names);
  const vals = new Array<Value>(n);
  yield* threadBatches(thread, sql, params, n, batchSize, false, ctx, ({ rows, tags, nums, text, ends, blobs }) => {
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
    return batch;
  });
}

/**
 * The batches the reader thread answers for a statement, each turned into what `make` makes of
 * it (`bytes`: with the text as UTF-8 bytes); stopped early, the thread releases the statement
 * and its connection.
 */
async function* threadBatches<T>(
  thread: ReadThread,
  sql: string,
  params: Bind[],
  cols: number,
  batchSize: number,
  bytes: boolean,
  ctx: CallContext,
  make: (b: ReadBatch) => T,
): AsyncGenerator<T, void, undefined> {
  let b: ReadBatch;
  try {
    b = await thread.open(sql, params, batchSize, cols, bytes);
  } catch (err) {
    throw callError(err, 'The query failed');
  }
  let sent = 0;
  try {
    for (;;) {
      throwIfAborted(ctx.signal);
      sent += b.rows;
      if (b.rows) {
        yield make(b);
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
    if (!b.done) await thread.release(b.cursor).catch(() => undefined);
  }
}

/** How a column's stored values become packed cells: most without a string, the rest by the column's converter. */
const enum Pack {
  /** Numbers as numbers, text as text (the generic converter's cases). */
  Plain,
  /** A number is a decimal's text (String(n)). */
  Decimal,
  /** A number is true unless 0. */
  Boolean,
  /** Text `YYYY-MM-DD HH:…` gets its `T`. */
  Datetime,
}

function packOf(type: PropertyType): Pack {
  switch (type) {
    case 'decimal':
      return Pack.Decimal;
    case 'boolean':
      return Pack.Boolean;
    case 'datetime':
      return Pack.Datetime;
    default:
      return Pack.Plain;
  }
}

/**
 * The rows of a statement the reader thread runs, as packed batches (src/connectors/packed.ts):
 * the cells hold exactly the values {@link threadRows} would put in its records (the same
 * converters decide every case the fast paths below do not), and text stays in the thread's UTF-8
 * bytes, so no record and no string is made for it.
 */
export async function* threadPacked(
  thread: ReadThread,
  sql: string,
  params: Bind[],
  names: string[],
  types: PropertyType[],
  convs: ReadConvert[],
  batchSize: number,
  ctx: CallContext,
): AsyncGenerator<PackedBatch, void, undefined> {
  const n = names.length;
  const packs = types.map(packOf);
  yield* threadBatches(thread, sql, params, n, batchSize, true, ctx, (b) => {
    const { rows, tags, nums, ends, blobs } = b;
    const bytes = b.bytes ?? new Uint8Array(0);
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const cells = rows * n;
    const out = new Uint8Array(cells);
    const cellEnds = new Uint32Array(cells);
    const values: (Value | undefined)[] = [];
    let s = 0;
    let pos = 0;
    let o = 0;
    for (let v = 0, i = 0; v < cells; v++, i = i + 1 === n ? 0 : i + 1) {
      const t = tags[v];
      const pack = packs[i] as Pack;
      if (t === 0) {
        out[v] = CELL_NULL;
        continue;
      }
      if (t === 1) {
        const x = nums[v] as number;
        if (pack === Pack.Plain) out[v] = CELL_NUMBER;
        else if (pack === Pack.Decimal) out[v] = CELL_DECIMAL;
        else if (pack === Pack.Boolean) out[v] = x !== 0 ? CELL_TRUE : CELL_FALSE;
        else setValue(out, values, v, (convs[i] as ReadConvert)(x));
        continue;
      }
      if (t === 2 || t === 3) {
        const start = pos;
        const end = ends[s++] as number;
        pos = end;
        if (
          t === 2 &&
          (pack === Pack.Plain ||
            pack === Pack.Decimal ||
            (pack === Pack.Datetime && datetimeInPlace(text, start, end)))
        ) {
          out[v] = CELL_TEXT;
          nums[v] = start;
          cellEnds[v] = end;
          continue;
        }
        const str = text.toString('utf8', start, end);
        setValue(out, values, v, (convs[i] as ReadConvert)(t === 2 ? str : BigInt(str)));
        continue;
      }
      const u = blobs[o++] as Uint8Array;
      setValue(out, values, v, (convs[i] as ReadConvert)(Buffer.from(u.buffer, u.byteOffset, u.byteLength)));
    }
    return { rows, fields: names, tags: out, nums, ends: cellEnds, text, values };
  });
}

/** A converted value as a cell. */
function setValue(tags: Uint8Array, values: (Value | undefined)[], v: number, x: Value): void {
  if (x === null) tags[v] = CELL_NULL;
  else if (x === true) tags[v] = CELL_TRUE;
  else if (x === false) tags[v] = CELL_FALSE;
  else {
    tags[v] = CELL_VALUE;
    values[v] = x;
  }
}

/**
 * A datetime's text as the datetime converter gives it, changed in its bytes: `YYYY-MM-DD HH…`
 * gets a `T` at character 10. False when the text does not start with ten ASCII characters (the
 * converter then decides, on the string).
 */
function datetimeInPlace(text: Buffer, start: number, end: number): boolean {
  // Ten bytes are at most ten characters: such a text is left as it is.
  if (end - start <= 10) return true;
  if (!asciiPrefix(text, start, 11)) return false;
  if (text[start + 10] === 0x20) text[start + 10] = 0x54;
  return true;
}

function asciiPrefix(text: Buffer, start: number, n: number): boolean {
  for (let k = start; k < start + n; k++) if ((text[k] as number) >= 0x80) return false;
  return true;
}

/** A table's query, on a connection of the session's thread or in its reader thread. */
export function queryTable(
  from: Database.Database | ReadThread,
  table: SqliteTable,
  filter: Filter | undefined,
  options: QueryOptions,
  ctx: CallContext,
): AsyncGenerator<RecordBatch, void, undefined> {
  const { sql, params, columns } = selectSql(table, filter, options);
  const names = columns.map((c) => c.fullName);
  const convs = columns.map((c) => readConverter(c.type));
  return from instanceof ReadThread
    ? threadRows(from, sql, params, names, convs, options.batchSize, ctx)
    : streamRows(from, sql, params, names, convs, options.batchSize, undefined, ctx);
}

/** A table's query in the reader thread, as packed batches. */
export function queryTablePacked(
  thread: ReadThread,
  table: SqliteTable,
  filter: Filter | undefined,
  options: QueryOptions,
  ctx: CallContext,
): AsyncGenerator<PackedBatch, void, undefined> {
  const { sql, params, columns } = selectSql(table, filter, options);
  return threadPacked(
    thread,
    sql,
    params,
    columns.map((c) => c.fullName),
    columns.map((c) => c.type),
    columns.map((c) => readConverter(c.type)),
    options.batchSize,
    ctx,
  );
}

/** Native query: rows of a reading statement, or one record `{ affected }` for the others. */
export async function* nativeRows(
  db: Database.Database,
  statement: string,
  params: readonly Value[],
  batchSize: number,
  ctx: CallContext,
): AsyncGenerator<RecordBatch, void, undefined> {
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
  yield* streamRows(
    db,
    statement,
    binds,
    names,
    names.map(() => readConverter('string')),
    batchSize,
    undefined,
    ctx,
  );
}
