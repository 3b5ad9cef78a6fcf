import type { Connection, Pool, PoolConfig, Submittable } from 'pg';
import {
  CELL_FALSE,
  CELL_NULL,
  CELL_NUMBER,
  CELL_TEXT,
  CELL_TRUE,
  CELL_VALUE,
  throwIfAborted,
  type CallContext,
  type Filter,
  type PackedBatch,
  type QueryOptions,
  type Value,
} from '../../src/connectors/sdk.js';
import { columnOf, selectSql } from './query.js';
import type { PgColumn, PgTable } from './catalogue.js';
import { cancelOnAbort, checkout } from './cursor.js';
import { callError } from './errors.js';

/**
 * Packed reads (src/connectors/packed.ts): the SELECT of a query run as `COPY (…) TO STDOUT` in
 * text format, its rows turned straight into packed cells — no row object, no string per text
 * value. The cells hold exactly what `query` gives (types.ts): numbers for the integer and float
 * types (int8 only while exact), true/false, timestamps with a `T` (and `Z` for UTC), bytea as
 * base64, every other type its text. The text is the rows' own bytes, unescaped and patched in
 * place. At most two batches wait for the caller; the socket is paused meanwhile.
 */

type Kind = 'number' | 'int8' | 'bool' | 'timestamp' | 'timestamptz' | 'bytea' | 'text';

function kindOf(c: PgColumn): Kind {
  switch (c.typname) {
    case 'int2':
    case 'int4':
    case 'oid':
    case 'float4':
    case 'float8':
      return 'number';
    case 'int8':
      return 'int8';
    case 'bool':
      return 'bool';
    case 'timestamp':
      return 'timestamp';
    case 'timestamptz':
      return 'timestamptz';
    case 'bytea':
      return 'bytea';
    default:
      return 'text';
  }
}

const TAB = 0x09;
const NL = 0x0a;
const BACKSLASH = 0x5c;

/** Unescapes COPY text in place in [s, e); answers the new end. */
function unescape(buf: Buffer, s: number, e: number): number {
  let w = s;
  for (let r = s; r < e; r++) {
    const b = buf[r] as number;
    if (b !== BACKSLASH || r + 1 >= e) {
      buf[w++] = b;
      continue;
    }
    const n = buf[++r] as number;
    switch (n) {
      case 0x6e: // n
        buf[w++] = NL;
        break;
      case 0x74: // t
        buf[w++] = TAB;
        break;
      case 0x72: // r
        buf[w++] = 0x0d;
        break;
      case 0x62: // b
        buf[w++] = 0x08;
        break;
      case 0x66: // f
        buf[w++] = 0x0c;
        break;
      case 0x76: // v
        buf[w++] = 0x0b;
        break;
      default:
        if (n >= 0x30 && n <= 0x37) {
          // \ooo: up to three octal digits.
          let v = n - 0x30;
          for (let k = 0; k < 2 && r + 1 < e && (buf[r + 1] as number) >= 0x30 && (buf[r + 1] as number) <= 0x37; k++)
            v = v * 8 + ((buf[++r] as number) - 0x30);
          buf[w++] = v & 0xff;
        } else if (n === 0x78 && r + 1 < e && isHex(buf[r + 1] as number)) {
          let v = hex(buf[++r] as number);
          if (r + 1 < e && isHex(buf[r + 1] as number)) v = v * 16 + hex(buf[++r] as number);
          buf[w++] = v;
        } else buf[w++] = n;
    }
  }
  return w;
}

const isHex = (b: number): boolean => (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);
const hex = (b: number): number => (b <= 0x39 ? b - 0x30 : (b | 0x20) - 0x61 + 10);

/** The rows of `raw` (COPY text, complete lines) as a packed batch of `fields`. */
export function packCopyText(
  raw: Buffer,
  rows: number,
  fields: readonly string[],
  kinds: readonly Kind[],
): PackedBatch {
  const width = fields.length;
  const cells = rows * width;
  const tags = new Uint8Array(cells);
  const nums = new Float64Array(cells);
  const ends = new Uint32Array(cells);
  let values: (Value | undefined)[] | undefined;
  let p = 0;
  for (let v = 0; v < cells; v++) {
    const col = v % width;
    const s = p;
    let escaped = false;
    let b = raw[p] as number;
    while (b !== TAB && b !== NL && p < raw.length) {
      if (b === BACKSLASH) {
        escaped = true;
        p++;
      }
      b = raw[++p] as number;
    }
    let e = p;
    p++;
    if (e - s === 2 && raw[s] === BACKSLASH && raw[s + 1] === 0x4e) continue; // \N: CELL_NULL (0)
    if (escaped) e = unescape(raw, s, e);
    switch (kinds[col]) {
      case 'number':
        tags[v] = CELL_NUMBER;
        nums[v] = Number(raw.toString('latin1', s, e));
        break;
      case 'int8': {
        const n = Number(raw.toString('latin1', s, e));
        if (Number.isSafeInteger(n)) {
          tags[v] = CELL_NUMBER;
          nums[v] = n;
        } else {
          tags[v] = CELL_TEXT;
          nums[v] = s;
          ends[v] = e;
        }
        break;
      }
      case 'bool':
        tags[v] = raw[s] === 0x74 ? CELL_TRUE : CELL_FALSE;
        break;
      case 'timestamptz':
      case 'timestamp':
        if (
          kinds[col] === 'timestamptz' &&
          e - s > 3 &&
          raw[e - 3] === 0x2b &&
          raw[e - 2] === 0x30 &&
          raw[e - 1] === 0x30
        ) {
          raw[e - 3] = 0x5a; // +00 → Z
          e -= 2;
        }
        if (e - s > 10 && raw[s + 10] === 0x20) raw[s + 10] = 0x54; // ' ' → 'T'
        tags[v] = CELL_TEXT;
        nums[v] = s;
        ends[v] = e;
        break;
      case 'bytea': {
        const t = raw.toString('utf8', s, e);
        tags[v] = CELL_VALUE;
        (values ??= new Array<Value | undefined>(cells))[v] = t.startsWith('\\x')
          ? Buffer.from(t.slice(2), 'hex').toString('base64')
          : t;
        break;
      }
      default:
        tags[v] = CELL_TEXT;
        nums[v] = s;
        ends[v] = e;
    }
  }
  if (values === undefined) values = [];
  void CELL_NULL;
  return { rows, fields, tags, nums, ends, text: raw, values };
}

/** `COPY (…) TO STDOUT` as pg's Submittable: each CopyData is one row. */
class CopyOut implements Submittable {
  /** The rows of the batch being gathered: each row's bytes copied in (pg reuses the buffer a row arrives in). */
  #buf = Buffer.allocUnsafe(1 << 16);
  #rows = 0;
  #bytes = 0;
  readonly #ready: Array<{ raw: Buffer; rows: number }> = [];
  #ended = false;
  #error: Error | undefined;
  #wake: (() => void) | undefined;
  #connection: Connection | undefined;
  #paused = false;

  constructor(
    private readonly text: string,
    private readonly batchSize: number,
  ) {}

  submit(connection: Connection): void {
    this.#connection = connection;
    (connection as unknown as { query(text: string): void }).query(this.text);
  }

  handleCopyOutResponse(): void {}

  handleCopyData(msg: { chunk: Buffer }): void {
    const c = msg.chunk;
    if (this.#bytes + c.length > this.#buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#bytes + c.length));
      this.#buf.copy(grown, 0, 0, this.#bytes);
      this.#buf = grown;
    }
    c.copy(this.#buf, this.#bytes);
    this.#bytes += c.length;
    if (++this.#rows >= this.batchSize) this.#cut();
  }

  #cut(): void {
    if (this.#rows === 0) return;
    this.#ready.push({ raw: this.#buf.subarray(0, this.#bytes), rows: this.#rows });
    // The next batch gets a buffer of its own, about this one's size: the batch handed on keeps its bytes.
    this.#buf = Buffer.allocUnsafe(Math.max(1 << 16, this.#bytes + (this.#bytes >> 3)));
    this.#rows = 0;
    this.#bytes = 0;
    if (this.#ready.length >= 2 && !this.#paused) {
      this.#paused = true;
      (this.#connection as unknown as { stream: { pause(): void } }).stream.pause();
    }
    this.#wake?.();
  }

  handleCommandComplete(): void {
    this.#cut();
  }

  handleReadyForQuery(): void {
    this.#ended = true;
    this.#wake?.();
  }

  handleError(err: Error): void {
    this.#error ??= err;
    this.#wake?.();
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handlePortalSuspended(): void {}
  handleEmptyQuery(): void {}
  handleCopyInResponse(): void {}

  /** The next batch's rows, or undefined at the end. */
  async next(): Promise<{ raw: Buffer; rows: number } | undefined> {
    for (;;) {
      const b = this.#ready.shift();
      if (b) {
        if (this.#paused && this.#ready.length < 2) {
          this.#paused = false;
          (this.#connection as unknown as { stream: { resume(): void } }).stream.resume();
        }
        return b;
      }
      if (this.#error) throw this.#error;
      if (this.#ended) return undefined;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }

  get finished(): boolean {
    return this.#ended;
  }
}

/** The query's rows as packed batches (queryPacked). */
export async function* queryTablePacked(
  pool: Pool,
  config: PoolConfig,
  table: PgTable,
  filter: Filter | undefined,
  options: QueryOptions,
  ctx: CallContext,
): AsyncGenerator<PackedBatch, void, undefined> {
  throwIfAborted(ctx.signal);
  const { sql, params } = selectSql(table, filter, options);
  const columns = options.fields ? options.fields.map((f) => columnOf(table, f)) : table.columns;
  const fields = columns.map((c) => c.fullName);
  const kinds = columns.map(kindOf);
  const { client, release } = await checkout(pool, ctx);
  const stopCancel = cancelOnAbort(config, client, ctx);
  // COPY takes no parameters: they are bound by a prepared statement's text, inlined as literals.
  const text = `COPY (${inline(sql, params)}) TO STDOUT`;
  const copy = new CopyOut(text, options.batchSize);
  let failed: Error | undefined;
  let sent = 0;
  try {
    client.query(copy);
    for (;;) {
      const b = await copy.next();
      if (!b) break;
      throwIfAborted(ctx.signal);
      sent += b.rows;
      yield packCopyText(b.raw, b.rows, fields, kinds);
      ctx.progress({ records: sent });
    }
  } catch (err) {
    failed = err as Error;
    throw callError(err, 'The query failed', client);
  } finally {
    const cancelled = await stopCancel();
    // A COPY left before its end (the caller stopped reading) is not reused: the session goes.
    if (cancelled || !copy.finished) release(new Error('copy not finished'));
    else release(failed);
  }
}

/** `$n` parameters as SQL literals (COPY cannot bind them). */
function inline(sql: string, params: readonly unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => literal(params[Number(n) - 1]));
}

function literal(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'number' || typeof v === 'bigint') return Number.isFinite(Number(v)) ? String(v) : `'${String(v)}'`;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return `'${text.replace(/'/g, "''")}'`;
}
