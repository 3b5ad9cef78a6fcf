import mysql from 'mysql2';
import type { Pool, PoolConnection, PoolOptions } from 'mysql2';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  CELL_FALSE,
  CELL_NUMBER,
  CELL_TEXT,
  CELL_TRUE,
  CELL_VALUE,
  integerValue,
  throwIfAborted,
  type CallContext,
  type Filter,
  type PackedBatch,
  type QueryOptions,
  type Value,
} from '../../src/connectors/sdk.js';
import type { MariaColumn, MariaTable } from './catalogue.js';
import { pumpBatches, type BatchSink } from './pool.js';
import { selectSql } from './query.js';
import type { ReadKind } from './types.js';

/**
 * Packed reads (src/connectors/packed.ts): a query's rows turned straight from the server's text
 * protocol into packed cells, with no row array and no string per text value. mysql2 still opens,
 * authenticates and frames the packets; a command of our own (a subclass of its Query) takes each
 * row packet and copies its cells into the batch. The cells hold exactly what `query` gives for the
 * same column (types.ts `readValue` over what mysql2 would have made of the bytes).
 */

/** What is done with a cell's bytes. */
const OP_INT = 0; // a number when exact, else the integer's text (integerValue)
const OP_FLOAT = 1; // a number
const OP_TEXT = 2; // the bytes as UTF-8 text
const OP_DATE = 3; // text; a zero date is null
const OP_DATETIME = 4; // `YYYY-MM-DDTHH:MM:SS[.f]Z`; a zero date is null
const OP_BOOL_TEXT = 5; // Number(text) !== 0
const OP_BOOL_BITS = 6; // any byte not 0
const OP_BASE64 = 7; // the bytes in base64

/** Column types whose driver values are not text (mysql2 parses them into objects): read as records. */
const UNPACKABLE = new Set([
  'geometry',
  'point',
  'linestring',
  'polygon',
  'multipoint',
  'multilinestring',
  'multipolygon',
  'geometrycollection',
  'vector',
]);

/** Whether every column of a read can be packed (else the records are read and packed). */
export function packable(columns: readonly MariaColumn[]): boolean {
  return columns.every((c) => !UNPACKABLE.has(c.dataType.toLowerCase()));
}

interface ColumnDefinition {
  columnType: number;
  characterSet: number;
}

const T = mysql.Types as unknown as Record<string, number>;
const BINARY_CHARSET = 63;

/** How mysql2 hands over a column's value: an integer, a big integer's text, a double, bytes or text. */
type DriverValue = 'int' | 'bigint' | 'float' | 'bytes' | 'text';

function driverValue(f: ColumnDefinition): DriverValue {
  switch (f.columnType) {
    case T['TINY']:
    case T['SHORT']:
    case T['LONG']:
    case T['INT24']:
    case T['YEAR']:
      return 'int';
    case T['LONGLONG']:
      return 'bigint';
    case T['FLOAT']:
    case T['DOUBLE']:
      return 'float';
    case T['DECIMAL']:
    case T['NEWDECIMAL']:
    case T['DATE']:
    case T['DATETIME']:
    case T['TIMESTAMP']:
    case T['TIME']:
    case T['JSON']:
      return 'text';
    default:
      return f.characterSet === BINARY_CHARSET ? 'bytes' : 'text';
  }
}

/** The op that gives `readValue(kind, <the driver's value>)`. */
export function opOf(kind: ReadKind, f: ColumnDefinition): number {
  const d = driverValue(f);
  switch (kind) {
    case 'plain':
      return d === 'int' ? OP_INT : d === 'float' ? OP_FLOAT : OP_TEXT;
    case 'int':
      return d === 'float' ? OP_FLOAT : OP_INT;
    case 'bool':
      return d === 'bytes' ? OP_BOOL_BITS : OP_BOOL_TEXT;
    case 'datetime':
    case 'timestamp':
      return OP_DATETIME;
    case 'date':
      return OP_DATE;
    case 'binary':
      return OP_BASE64;
  }
}

const ZERO = 0x30;

/** Cells of rows into packed batches of `size` rows. */
class Packer {
  #tags: Uint8Array;
  #nums: Float64Array;
  #ends: Uint32Array;
  #values: (Value | undefined)[] | undefined;
  #text: Buffer;
  #pos = 0;
  #rows = 0;
  #cell = 0;
  readonly #width: number;

  constructor(
    private readonly fields: readonly string[],
    private readonly ops: Uint8Array,
    private readonly size: number,
    private readonly sink: BatchSink<PackedBatch>,
  ) {
    this.#width = fields.length;
    const cells = size * this.#width;
    this.#tags = new Uint8Array(cells);
    this.#nums = new Float64Array(cells);
    this.#ends = new Uint32Array(cells);
    this.#text = Buffer.allocUnsafe(1 << 16);
  }

  #room(n: number): void {
    if (this.#pos + n <= this.#text.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.#text.length * 2, this.#pos + n));
    this.#text.copy(grown, 0, 0, this.#pos);
    this.#text = grown;
  }

  /** One row packet's cells: `p` is the first byte of its payload. */
  row(buf: Buffer, p: number): void {
    const tags = this.#tags;
    const nums = this.#nums;
    const ends = this.#ends;
    const ops = this.ops;
    for (let c = 0; c < this.#width; c++) {
      const v = this.#cell++;
      let len = buf[p++] as number;
      if (len >= 0xfb) {
        if (len === 0xfb) continue; // NULL: CELL_NULL (0)
        if (len === 0xfc) {
          len = (buf[p] as number) | ((buf[p + 1] as number) << 8);
          p += 2;
        } else if (len === 0xfd) {
          len = (buf[p] as number) | ((buf[p + 1] as number) << 8) | ((buf[p + 2] as number) << 16);
          p += 3;
        } else {
          len = buf.readUInt32LE(p) + buf.readUInt32LE(p + 4) * 0x1_0000_0000;
          p += 8;
        }
      }
      const s = p;
      p += len;
      switch (ops[c]) {
        case OP_INT: {
          if (len > 0 && len <= 15) {
            let i = s;
            const neg = buf[i] === 0x2d;
            if (neg) i++;
            let n = 0;
            let digits = true;
            for (; i < p; i++) {
              const d = (buf[i] as number) - ZERO;
              if (d < 0 || d > 9) {
                digits = false;
                break;
              }
              n = n * 10 + d;
            }
            if (digits && i > s + (neg ? 1 : 0)) {
              tags[v] = CELL_NUMBER;
              nums[v] = neg ? -n : n;
              break;
            }
          }
          const x = integerValue(buf.toString('latin1', s, p));
          if (typeof x === 'number') {
            tags[v] = CELL_NUMBER;
            nums[v] = x;
          } else this.#value(v, x);
          break;
        }
        case OP_FLOAT:
          tags[v] = CELL_NUMBER;
          nums[v] = Number(buf.toString('latin1', s, p));
          break;
        case OP_DATE:
        case OP_DATETIME: {
          if (len >= 10 && isZeroDate(buf, s)) break; // null
          const dt = ops[c] === OP_DATETIME;
          this.#room(len + 2);
          const text = this.#text;
          let w = this.#pos;
          tags[v] = CELL_TEXT;
          nums[v] = w;
          if (dt) {
            // `${s.slice(0, 10)}T${s.slice(11)}Z`
            const head = Math.min(len, 10);
            for (let i = 0; i < head; i++) text[w++] = buf[s + i] as number;
            text[w++] = 0x54;
            for (let i = s + 11; i < p; i++) text[w++] = buf[i] as number;
            text[w++] = 0x5a;
          } else for (let i = s; i < p; i++) text[w++] = buf[i] as number;
          this.#pos = w;
          ends[v] = w;
          break;
        }
        case OP_BOOL_TEXT:
          tags[v] = (len === 1 ? buf[s] !== ZERO : Number(buf.toString('latin1', s, p)) !== 0) ? CELL_TRUE : CELL_FALSE;
          break;
        case OP_BOOL_BITS: {
          let on = false;
          for (let i = s; i < p; i++) if (buf[i] !== 0) on = true;
          tags[v] = on ? CELL_TRUE : CELL_FALSE;
          break;
        }
        case OP_BASE64:
          this.#value(v, buf.toString('base64', s, p));
          break;
        default: {
          this.#room(len);
          const text = this.#text;
          const w = this.#pos;
          if (len < 64) for (let i = 0; i < len; i++) text[w + i] = buf[s + i] as number;
          else buf.copy(text, w, s, p);
          tags[v] = CELL_TEXT;
          nums[v] = w;
          this.#pos = w + len;
          ends[v] = w + len;
        }
      }
    }
    if (++this.#rows >= this.size) this.cut();
  }

  #value(v: number, x: Value): void {
    this.#tags[v] = CELL_VALUE;
    (this.#values ??= [])[v] = x;
  }

  /** Hands on the rows gathered so far as one batch; the next rows go to new arrays. */
  cut(): void {
    if (this.#rows === 0) return;
    const cells = this.#rows * this.#width;
    const all = this.size * this.#width;
    this.sink.batch({
      rows: this.#rows,
      fields: this.fields,
      tags: this.#tags.subarray(0, cells),
      nums: this.#nums.subarray(0, cells),
      ends: this.#ends.subarray(0, cells),
      text: this.#text.subarray(0, this.#pos),
      values: this.#values ?? [],
    });
    this.#tags = new Uint8Array(all);
    this.#nums = new Float64Array(all);
    this.#ends = new Uint32Array(all);
    this.#values = undefined;
    // About the last batch's text: a batch handed on keeps its bytes.
    this.#text = Buffer.allocUnsafe(Math.max(1 << 16, this.#pos + (this.#pos >> 3)));
    this.#pos = 0;
    this.#rows = 0;
    this.#cell = 0;
  }
}

/** `0000-00-00` at `s`. */
function isZeroDate(buf: Buffer, s: number): boolean {
  for (let i = 0; i < 10; i++) {
    const b = buf[s + i] as number;
    if (i === 4 || i === 7 ? b !== 0x2d : b !== ZERO) return false;
  }
  return true;
}

/** The parts of mysql2's Query command that the packed command uses (lib/commands/query.js). */
interface QueryCommand {
  sql: string;
  _fields: ColumnDefinition[][];
  _resultIndex: number;
  done(): null;
  on(event: 'error', listener: (err: Error) => void): void;
  on(event: 'end', listener: () => void): void;
}
interface RowPacket {
  buffer: Buffer;
  offset: number;
  isEOF(): boolean;
}
type QueryClass = new (options: { sql: string }) => QueryCommand;
type RowState = (packet: RowPacket, connection: unknown) => unknown;

/**
 * mysql2's Query command class. The package exports only its entry point; the command is a file
 * next to it (a version pinned in package-lock.json: the packed read test reads every type
 * through it).
 */
function queryClass(): QueryClass {
  const req = createRequire(import.meta.url);
  return req(join(dirname(req.resolve('mysql2')), 'lib', 'commands', 'query.js')) as QueryClass;
}

let PackedQueryClass: (new (sql: string, start: (fields: ColumnDefinition[]) => Packer) => QueryCommand) | undefined;

/** A Query whose rows go to a Packer instead of a row parser. */
function packedQueryClass(): NonNullable<typeof PackedQueryClass> {
  if (PackedQueryClass) return PackedQueryClass;
  const Query = queryClass();
  class PackedQuery extends Query {
    #packer: Packer | undefined;
    constructor(
      sql: string,
      private readonly begin: (fields: ColumnDefinition[]) => Packer,
    ) {
      super({ sql });
    }

    /** Query's state after the column definitions: every row packet, then the closing EOF. */
    row(packet: RowPacket): RowState | null {
      const packer = (this.#packer ??= this.begin(this._fields[this._resultIndex] ?? []));
      if (packet.isEOF()) {
        // One SELECT: no further result sets follow.
        packer.cut();
        return this.done();
      }
      packer.row(packet.buffer, packet.offset);
      return (this as unknown as { row: RowState }).row;
    }
  }
  PackedQueryClass = PackedQuery;
  return PackedQueryClass;
}

/** The query's rows as packed batches (queryPacked). */
export async function* queryTablePacked(
  pool: Pool,
  poolOptions: PoolOptions,
  table: MariaTable,
  filter: Filter | undefined,
  options: QueryOptions,
  ctx: CallContext,
): AsyncGenerator<PackedBatch, void, undefined> {
  throwIfAborted(ctx.signal);
  const { sql, params, columns } = selectSql(table, filter, options);
  const fields = columns.map((c) => c.fullName);
  const PackedQuery = packedQueryClass();
  let sent = 0;
  const batches = pumpBatches<PackedBatch>(pool, poolOptions, ctx, (conn: PoolConnection, sink) => {
    const q = new PackedQuery(conn.format(sql, params), (defs) => {
      const ops = new Uint8Array(columns.length);
      columns.forEach((c, i) => {
        const d = defs[i];
        ops[i] = d ? opOf(c.readKind, d) : OP_TEXT;
      });
      return new Packer(fields, ops, options.batchSize, sink);
    });
    let failed = false;
    q.on('error', (err) => {
      failed = true;
      sink.fail(err);
    });
    q.on('end', () => {
      if (!failed) sink.end();
    });
    (conn as unknown as { addCommand(cmd: QueryCommand): void }).addCommand(q);
  });
  for await (const b of batches) {
    sent += b.rows;
    yield b;
    ctx.progress({ records: sent });
  }
}
