import {
  CELL_DECIMAL,
  CELL_NULL,
  CELL_NUMBER,
  CELL_TEXT,
  packedValue,
  type PackedBatch,
  type Value,
} from '../../src/connectors/sdk.js';

/**
 * Records → `COPY … FROM STDIN (FORMAT binary)` data. The server skips its text input functions
 * (int4in, numeric_in, timestamptz_in …), which are a third of its COPY work, and Node skips
 * number-to-text conversions. Values are written straight into large Buffers.
 *
 * A column type without a binary writer here (float4, time, intervals, arrays, enums …) makes the
 * whole statement use the text format; so does a value a writer does not take as it is (a number
 * out of an int4's range, a datetime with an offset, a decimal with an exponent …). The text
 * format then lets the server judge the value, with its own error for the record.
 */

/** Writes one value as a binary field (length + data); false when it cannot, leaving the writer as it was. */
export type FieldWriter = (w: BinaryWriter, v: Value) => boolean;

const CHUNK = 1 << 20;
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const TWO_32 = 4294967296;
/** Room every field of fixed width fits in (uuid: 4 + 16 bytes). */
const FIXED_MAX = 20;

/**
 * Appends to a list of Buffers of about {@link CHUNK} bytes each. Each row reserves room for its
 * fixed-width fields up front; variable-width writers ensure their own length plus that reserve.
 * Bytes are stored one by one: Buffer's write methods check their arguments on every call.
 */
export class BinaryWriter {
  readonly chunks: Buffer[] = [];
  buf: Buffer;
  pos = 0;
  /** Bytes the rest of a row may need beyond a variable-width value. */
  reserve = 0;

  /**
   * `sink`: each full buffer goes there as soon as it is (the COPY sends it while the rest is
   * encoded) instead of into `chunks`.
   */
  constructor(
    private readonly sink?: (chunk: Buffer) => void,
    private readonly size = CHUNK,
  ) {
    this.buf = Buffer.allocUnsafe(size);
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    if (this.pos > 0) this.done(this.buf.subarray(0, this.pos));
    this.buf = Buffer.allocUnsafe(Math.max(this.size, n));
    this.pos = 0;
  }

  /** The buffers written, the last one included (none with a sink: it has them). */
  finish(): Buffer[] {
    if (this.pos > 0) this.done(this.buf.subarray(0, this.pos));
    this.pos = 0;
    this.buf = Buffer.alloc(0);
    return this.chunks;
  }

  private done(chunk: Buffer): void {
    if (this.sink) this.sink(chunk);
    else this.chunks.push(chunk);
  }
}

/** Buffers of a streamed COPY: small enough that the server starts on the first while the rest is encoded. */
const STREAM_CHUNK = 1 << 18;

function put16(buf: Buffer, p: number, v: number): void {
  buf[p] = v >>> 8;
  buf[p + 1] = v;
}

function put32(buf: Buffer, p: number, v: number): void {
  buf[p] = v >>> 24;
  buf[p + 1] = v >>> 16;
  buf[p + 2] = v >>> 8;
  buf[p + 3] = v;
}

const f64 = new Float64Array(1);
const f64Bytes = new Uint8Array(f64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function writeNull(w: BinaryWriter): void {
  put32(w.buf, w.pos, -1);
  w.pos += 4;
}

/** Writes the length of a fixed-width field (room reserved by the row) and returns where its data goes. */
function fixed(w: BinaryWriter, len: number): number {
  const p = w.pos;
  put32(w.buf, p, len);
  w.pos = p + 4 + len;
  return p + 4;
}

/** UTF-8 text with its length; ASCII is copied byte by byte, the rest encoded by Buffer. */
function writeText(w: BinaryWriter, s: string): void {
  const n = s.length;
  w.ensure(4 + 3 * n + w.reserve);
  const buf = w.buf;
  const start = w.pos;
  let p = start + 4;
  let i = 0;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) break;
    buf[p++] = c;
  }
  if (i < n) p += buf.write(i === 0 ? s : s.slice(i), p, 'utf8');
  put32(buf, start, p - start - 4);
  w.pos = p;
}

function int64(w: BinaryWriter, v: number): void {
  const p = fixed(w, 8);
  const hi = Math.floor(v / TWO_32);
  put32(w.buf, p, hi);
  put32(w.buf, p + 4, v - hi * TWO_32);
}

const INT_TEXT = /^-?\d{1,19}$/;

function integer(bytes: 2 | 4 | 8): FieldWriter {
  const max = bytes === 2 ? 0x7fff : bytes === 4 ? 0x7fffffff : Number.MAX_SAFE_INTEGER;
  const min = bytes === 2 ? -0x8000 : bytes === 4 ? -0x80000000 : -Number.MAX_SAFE_INTEGER;
  return (w, v) => {
    let n: number;
    if (typeof v === 'number') n = v;
    else if (typeof v === 'string' && INT_TEXT.test(v)) {
      n = Number(v);
      if (bytes === 8 && !Number.isSafeInteger(n)) {
        const big = BigInt(v);
        if (big > 0x7fffffffffffffffn || big < -0x8000000000000000n) return false;
        const p = fixed(w, 8);
        w.buf.writeBigInt64BE(big, p);
        return true;
      }
    } else return false;
    if (!Number.isInteger(n) || n > max || n < min) return false;
    if (bytes === 8) int64(w, n);
    else if (bytes === 4) put32(w.buf, fixed(w, 4), n);
    else put16(w.buf, fixed(w, 2), n);
    return true;
  };
}

const float8: FieldWriter = (w, v) => {
  if (typeof v !== 'number') return false;
  const p = fixed(w, 8);
  const buf = w.buf;
  // -0 becomes 0, as in the text format (String(-0) is "0").
  f64[0] = v === 0 ? 0 : v;
  if (LITTLE_ENDIAN) for (let i = 0; i < 8; i++) buf[p + i] = f64Bytes[7 - i] as number;
  else for (let i = 0; i < 8; i++) buf[p + i] = f64Bytes[i] as number;
  return true;
};

const bool: FieldWriter = (w, v) => {
  if (typeof v !== 'boolean') return false;
  w.buf[fixed(w, 1)] = v ? 1 : 0;
  return true;
};

const text: FieldWriter = (w, v) => {
  writeText(w, typeof v === 'string' ? v : typeof v === 'number' ? String(v) : v ? 't' : 'f');
  return true;
};

/**
 * numeric's binary form: base-10000 digits (groups of four decimal digits aligned on the point),
 * the weight of the first group, the sign and the display scale (the digits after the point as
 * given, as numeric_in keeps them; the column's typmod then rounds as it does for text).
 */
const numeric: FieldWriter = (w, v) => {
  if (typeof v === 'number' && numericFromNumber(w, v)) return true;
  const s = typeof v === 'string' ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : '';
  return numericFromText(w, s, 0, s.length);
};

/** Character `i` of a text or of its UTF-8 bytes (ASCII: the same codes). */
function codeAt(src: string | Buffer, i: number): number {
  return typeof src === 'string' ? src.charCodeAt(i) : (src[i] as number);
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * {@link numeric} of the decimal text from `start` to `end` of a string or of UTF-8 bytes (a
 * packed text cell, written without making a string): `-?digits(.digits)?`. False, with nothing
 * written, for any other form (the caller then sends the value as text).
 */
function numericFromText(w: BinaryWriter, src: string | Buffer, start: number, end: number): boolean {
  const neg = end > start && codeAt(src, start) === 45;
  const from = neg ? start + 1 : start;
  let i = from;
  while (i < end && isDigit(codeAt(src, i))) i++;
  const intEnd = i;
  if (intEnd === from) return false;
  let dot = -1;
  if (i < end) {
    if (codeAt(src, i) !== 46) return false;
    dot = i++;
    while (i < end && isDigit(codeAt(src, i))) i++;
    if (i === dot + 1 || i !== end) return false;
  }
  const dscale = dot < 0 ? 0 : end - dot - 1;
  if (dscale > 0x3fff) return false;
  // Groups: the integer part padded on the left to a multiple of 4, the fraction on the right.
  const intLen = intEnd - from;
  const intGroups = Math.ceil(intLen / 4);
  const fracGroups = Math.ceil(dscale / 4);
  const ndigits = intGroups + fracGroups;
  if (ndigits > 0x7fff) return false;
  w.ensure(12 + 2 * ndigits + w.reserve);
  const p = fixed(w, 8 + 2 * ndigits);
  const buf = w.buf;
  let q = p + 8;
  let d = 0;
  let k = (4 - (intLen % 4)) % 4;
  for (let j = from; j < intEnd; j++) {
    d = d * 10 + (codeAt(src, j) - 48);
    if (++k === 4) {
      put16(buf, q, d);
      q += 2;
      d = 0;
      k = 0;
    }
  }
  for (let j = 0; j < fracGroups * 4; j++) {
    const at = dot + 1 + j;
    d = d * 10 + (at < end ? codeAt(src, at) - 48 : 0);
    if (++k === 4) {
      put16(buf, q, d);
      q += 2;
      d = 0;
      k = 0;
    }
  }
  put16(buf, p, ndigits);
  put16(buf, p + 2, intGroups - 1);
  put16(buf, p + 4, neg ? 0x4000 : 0);
  put16(buf, p + 6, dscale);
  return true;
}

const POW10 = [1, 10, 100, 1000, 10000];

/**
 * {@link numeric} of a number whose text (String(x)) has at most four digits after the point and
 * |x| < 2^31, without making the text: the fewest decimals k for which Math.round(x·10^k) / 10^k
 * is x again. Below 2^31 a double's spacing is far finer than 10^-4, so that decimal is the only
 * one with k decimals that reads back as x, and the shortest text of x (String's) has exactly
 * those digits; the bytes are those {@link numeric} writes from the text. False (nothing written)
 * for any other number.
 */
function numericFromNumber(w: BinaryWriter, x: number): boolean {
  if (!(x > -2147483648 && x < 2147483648)) return false;
  let k = 0;
  let d = 0;
  for (; k <= 4; k++) {
    d = Math.round(x * (POW10[k] as number));
    if (d / (POW10[k] as number) === x) break;
  }
  if (k > 4) return false;
  const neg = d < 0;
  if (neg) d = -d;
  const scale = POW10[k] as number;
  let int = Math.floor(d / scale);
  const frac = (d - int * scale) * (POW10[4 - k] as number);
  // The integer part's groups of four digits, the most significant first; "0" is one group, as in the text.
  let intGroups = 1;
  for (let t = int; t >= 10000; t = Math.floor(t / 10000)) intGroups++;
  const ndigits = intGroups + (k > 0 ? 1 : 0);
  const p = fixed(w, 8 + 2 * ndigits);
  const buf = w.buf;
  for (let g = intGroups - 1; g >= 0; g--) {
    put16(buf, p + 8 + 2 * g, int % 10000);
    int = Math.floor(int / 10000);
  }
  if (k > 0) put16(buf, p + 8 + 2 * intGroups, frac);
  put16(buf, p, ndigits);
  put16(buf, p + 2, intGroups - 1);
  put16(buf, p + 4, neg ? 0x4000 : 0);
  put16(buf, p + 6, k);
  return true;
}

/** Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** 2000-01-01, PostgreSQL's epoch, in days from 1970-01-01. */
const PG_EPOCH_DAYS = 10957;
/** Microseconds per unit of a fraction of n digits. */
const SCALE = [0, 100000, 10000, 1000, 100, 10, 1];
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function digits(s: string, from: number, n: number): number {
  let v = 0;
  for (let i = from; i < from + n; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/** Days since 2000-01-01 of a `YYYY-MM-DD` prefix of `s`, or NaN. */
function pgDays(s: string): number {
  if (s.length < 10 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return NaN;
  const y = digits(s, 0, 4);
  const m = digits(s, 5, 2);
  const d = digits(s, 8, 2);
  if (y < 1 || m < 1 || m > 12 || d < 1) return NaN;
  const leap = m === 2 && y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 1 : 0;
  if (d > (MONTH_DAYS[m - 1] as number) + leap) return NaN;
  return daysFromCivil(y, m, d) - PG_EPOCH_DAYS;
}

const date: FieldWriter = (w, v) => {
  if (typeof v !== 'string' || v.length !== 10) return false;
  const days = pgDays(v);
  if (Number.isNaN(days)) return false;
  put32(w.buf, fixed(w, 4), days);
  return true;
};

/**
 * Microseconds since 2000-01-01 of `YYYY-MM-DD[T| ]HH:mm:ss[.ffffff][Z]` (a date alone is
 * midnight). The value is read as wall-clock time: a timestamptz column gets UTC (the session's
 * time zone), a timestamp column ignores a `Z` as PostgreSQL does. Other forms (offsets, more
 * than six fraction digits) go to the text format.
 */
const timestamp: FieldWriter = (w, v) => {
  if (typeof v !== 'string') return false;
  const days = pgDays(v);
  if (Number.isNaN(days)) return false;
  let end = v.length;
  if (end > 10 && v.charCodeAt(end - 1) === 90) end--;
  let secs = 0;
  let micros = 0;
  if (end > 10) {
    const sep = v.charCodeAt(10);
    if ((sep !== 84 && sep !== 32) || end < 19 || v.charCodeAt(13) !== 58 || v.charCodeAt(16) !== 58) return false;
    const h = digits(v, 11, 2);
    const mi = digits(v, 14, 2);
    const se = digits(v, 17, 2);
    if (h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 59) return false;
    secs = h * 3600 + mi * 60 + se;
    if (end > 19) {
      const n = end - 20;
      if (v.charCodeAt(19) !== 46 || n < 1 || n > 6) return false;
      const f = digits(v, 20, n);
      if (f < 0) return false;
      micros = f * (SCALE[n] as number);
    }
  } else if (end !== v.length) return false;
  const total = (days * 86400 + secs) * 1e6 + micros;
  if (!Number.isSafeInteger(total)) return false;
  int64(w, total);
  return true;
};

const HEX = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

const uuid: FieldWriter = (w, v) => {
  if (typeof v !== 'string' || !HEX.test(v)) return false;
  const p = fixed(w, 16);
  w.buf.write(v.replace(/-/g, ''), p, 16, 'hex');
  return true;
};

const jsonb: FieldWriter = (w, v) => {
  if (typeof v !== 'string') return false;
  writeText(w, `\u0001${v}`);
  return true;
};

const bytea: FieldWriter = (w, v) => {
  if (typeof v !== 'string') return false;
  const b = Buffer.from(v, 'base64');
  w.ensure(4 + b.length + w.reserve);
  b.copy(w.buf, fixed(w, b.length));
  return true;
};

const WRITERS: Record<string, FieldWriter> = {
  int2: integer(2),
  int4: integer(4),
  int8: integer(8),
  float8,
  bool,
  text,
  varchar: text,
  bpchar: text,
  json: text,
  numeric,
  date,
  timestamp,
  timestamptz: timestamp,
  uuid,
  jsonb,
  bytea,
};

/** The binary writer of a column's type (its base type for a domain), if there is one. */
export function binaryWriter(typname: string): FieldWriter | undefined {
  return WRITERS[typname];
}

/** The header of binary COPY data: its signature, no flags, no header extension. */
function begin(w: BinaryWriter): void {
  SIGNATURE.copy(w.buf, 0);
  put32(w.buf, SIGNATURE.length, 0);
  put32(w.buf, SIGNATURE.length + 4, 0);
  w.pos = SIGNATURE.length + 8;
}

/** The trailer of binary COPY data: a field count of -1. */
function end(w: BinaryWriter): void {
  w.ensure(2);
  put16(w.buf, w.pos, -1);
  w.pos += 2;
}

/** Types written inline by {@link encodeBinary} when the value has their usual JavaScript type. */
const enum Kind {
  Other,
  Int4,
  Float8,
  Bool,
  Text,
  /** Only {@link encodePackedBinary} tells these apart (from UTF-8 bytes); otherwise their writers. */
  Date,
  Timestamp,
  Numeric,
}

const KINDS = new Map<FieldWriter, Kind>([
  [WRITERS['int4'] as FieldWriter, Kind.Int4],
  [float8, Kind.Float8],
  [bool, Kind.Bool],
  [text, Kind.Text],
  [date, Kind.Date],
  [timestamp, Kind.Timestamp],
  [numeric, Kind.Numeric],
]);

/** Digits from bytes, as {@link digits} reads them from a string. */
function digitBytes(b: Buffer, from: number, n: number): number {
  let v = 0;
  for (let i = from; i < from + n; i++) {
    const c = (b[i] as number) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/**
 * A date or timestamp cell written from its UTF-8 bytes, the forms {@link date} and
 * {@link timestamp} take (`YYYY-MM-DD`, then `[T| ]HH:mm:ss[.f{1,6}][Z]` for a timestamp), without
 * making a string; false (nothing written) for any other form, which then goes by the writer.
 */
function timeFromBytes(w: BinaryWriter, kind: Kind, b: Buffer, start: number, end: number): boolean {
  const len = end - start;
  if (len < 10 || b[start + 4] !== 45 || b[start + 7] !== 45) return false;
  const y = digitBytes(b, start, 4);
  const m = digitBytes(b, start + 5, 2);
  const d = digitBytes(b, start + 8, 2);
  if (y < 1 || m < 1 || m > 12 || d < 1) return false;
  const leap = m === 2 && y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 1 : 0;
  if (d > (MONTH_DAYS[m - 1] as number) + leap) return false;
  const days = daysFromCivil(y, m, d) - PG_EPOCH_DAYS;
  if (kind === Kind.Date) {
    if (len !== 10) return false;
    put32(w.buf, fixed(w, 4), days);
    return true;
  }
  let e = len;
  if (e > 10 && b[start + e - 1] === 90) e--;
  let secs = 0;
  let micros = 0;
  if (e > 10) {
    const sep = b[start + 10];
    if ((sep !== 84 && sep !== 32) || e < 19 || b[start + 13] !== 58 || b[start + 16] !== 58) return false;
    const h = digitBytes(b, start + 11, 2);
    const mi = digitBytes(b, start + 14, 2);
    const se = digitBytes(b, start + 17, 2);
    if (h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 59) return false;
    secs = h * 3600 + mi * 60 + se;
    if (e > 19) {
      const n = e - 20;
      if (b[start + 19] !== 46 || n < 1 || n > 6) return false;
      const f = digitBytes(b, start + 20, n);
      if (f < 0) return false;
      micros = f * (SCALE[n] as number);
    }
  } else if (e !== len) return false;
  const total = (days * 86400 + secs) * 1e6 + micros;
  if (!Number.isSafeInteger(total)) return false;
  int64(w, total);
  return true;
}

/** One non-null value; the common cases inline (one function for V8 to optimise), the rest by its writer. */
function writeValue(w: BinaryWriter, kind: Kind, writer: FieldWriter, v: Exclude<Value, null>): boolean {
  switch (kind) {
    case Kind.Int4:
      if (typeof v === 'number' && (v | 0) === v) {
        put32(w.buf, fixed(w, 4), v);
        return true;
      }
      break;
    case Kind.Text:
      if (typeof v === 'string') {
        writeText(w, v);
        return true;
      }
      break;
    case Kind.Bool:
      if (typeof v === 'boolean') {
        w.buf[fixed(w, 1)] = v ? 1 : 0;
        return true;
      }
      break;
    default:
      break;
  }
  return writer(w, v);
}

/**
 * Encodes records into binary COPY data, or returns undefined when a value needs the text format.
 * With `stream`, each buffer goes there as soon as the rows in it are final (the COPY is sent while
 * the rest is encoded) and the result is empty; undefined then means what was sent is no valid COPY.
 * `names` and `writers` are in the COPY column order. A record whose keys come in that order is
 * read with for-in (V8 reads each value by its field index); others by name.
 */
export function encodeBinary(
  records: readonly (Readonly<Record<string, Value>> | undefined)[],
  names: readonly string[],
  writers: readonly FieldWriter[],
  stream?: (chunk: Buffer) => void,
): Buffer[] | undefined {
  const w = new BinaryWriter(undefined, stream ? STREAM_CHUNK : undefined);
  let sent = 0;
  const n = names.length;
  const kinds = writers.map((f) => KINDS.get(f) ?? Kind.Other);
  const rowSize = 2 + n * FIXED_MAX;
  w.reserve = rowSize;
  begin(w);
  for (const rec of records) {
    if (!rec) continue;
    w.ensure(rowSize);
    // With `stream`, the buffers filled so far (whole rows: a row may be written again, below) go at once.
    if (stream) while (sent < w.chunks.length) stream(w.chunks[sent++] as Buffer);
    put16(w.buf, w.pos, n);
    w.pos += 2;
    const rowBuf = w.buf;
    const rowStart = w.pos;
    const rowChunks = w.chunks.length;
    let j = 0;
    let inOrder = true;
    for (const k in rec) {
      if (j >= n || k !== names[j]) {
        inOrder = false;
        break;
      }
      const v = rec[k];
      if (v === null || v === undefined) writeNull(w);
      else if (!writeValue(w, kinds[j] as Kind, writers[j] as FieldWriter, v)) return undefined;
      j++;
    }
    if (inOrder && j === n) continue;
    // Keys in another order, or fewer of them: write this record again, by name.
    w.chunks.length = rowChunks;
    w.buf = rowBuf;
    w.pos = rowStart;
    for (j = 0; j < n; j++) {
      const v = rec[names[j] as string];
      if (v === null || v === undefined) writeNull(w);
      else if (!writeValue(w, kinds[j] as Kind, writers[j] as FieldWriter, v)) return undefined;
    }
  }
  end(w);
  const chunks = w.finish();
  if (!stream) return chunks;
  while (sent < chunks.length) stream(chunks[sent++] as Buffer);
  return [];
}

/**
 * Encodes the rows of a packed batch (src/connectors/packed.ts) into binary COPY data, handing
 * each buffer to `send` as soon as it is full; false when a value needs the text format (what was
 * sent is then no valid COPY: the caller abandons it). `cols[j]` is the batch's field of COPY
 * column j. Text for a text column is copied from the batch's UTF-8 bytes, dates and timestamps
 * are read from them; every other cell is written as {@link encodeBinary} writes its value.
 * `skip`, when given: the rows `r` with `skip[r] !== 0` are left out.
 */
export function encodePackedBinary(
  b: PackedBatch,
  cols: readonly number[],
  writers: readonly FieldWriter[],
  send: (chunk: Buffer) => void,
  skip?: Uint8Array,
): boolean {
  const w = new BinaryWriter(send, STREAM_CHUNK);
  const n = cols.length;
  const width = b.fields.length;
  const kinds = writers.map((f) => KINDS.get(f) ?? Kind.Other);
  const rowSize = 2 + n * FIXED_MAX;
  const { tags, nums, ends, text } = b;
  w.reserve = rowSize;
  begin(w);
  for (let r = 0, base = 0; r < b.rows; r++, base += width) {
    if (skip !== undefined && skip[r] !== 0) continue;
    w.ensure(rowSize);
    put16(w.buf, w.pos, n);
    w.pos += 2;
    for (let j = 0; j < n; j++) {
      const v = base + (cols[j] as number);
      const t = tags[v];
      const kind = kinds[j] as Kind;
      if (t === CELL_NULL) writeNull(w);
      else if (t === CELL_TEXT && kind === Kind.Text) {
        const start = nums[v] as number;
        const len = (ends[v] as number) - start;
        w.ensure(4 + len + w.reserve);
        const p = fixed(w, len);
        // Short texts byte by byte: Buffer#copy checks its arguments on every call.
        if (len <= 64) {
          const buf = w.buf;
          for (let k = 0; k < len; k++) buf[p + k] = text[start + k] as number;
        } else text.copy(w.buf, p, start, start + len);
      } else if (
        t === CELL_TEXT &&
        (kind === Kind.Date || kind === Kind.Timestamp) &&
        timeFromBytes(w, kind, text, nums[v] as number, ends[v] as number)
      )
        continue;
      else if (t === CELL_NUMBER && kind === Kind.Int4 && ((nums[v] as number) | 0) === nums[v])
        put32(w.buf, fixed(w, 4), nums[v]);
      // A decimal cell is its number's text (packedValue): written from the number, without making the text.
      else if (
        (t === CELL_NUMBER || t === CELL_DECIMAL) &&
        kind === Kind.Numeric &&
        numericFromNumber(w, nums[v] as number)
      )
        continue;
      // A decimal's text, from its bytes.
      else if (
        t === CELL_TEXT &&
        kind === Kind.Numeric &&
        numericFromText(w, text, nums[v] as number, ends[v] as number)
      )
        continue;
      else {
        const x = packedValue(b, v);
        if (x === null) writeNull(w);
        else if (!writeValue(w, kind, writers[j] as FieldWriter, x)) return false;
      }
    }
  }
  end(w);
  w.finish();
  return true;
}
