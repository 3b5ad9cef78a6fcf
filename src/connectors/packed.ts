import type { ConnectorRecord, Value } from './value.js';

/**
 * Packed batches (docs/connectors.md "Packed batches"): rows of one field list in typed arrays
 * instead of records, for a copy that moves values from a source to a target unchanged (a
 * Replication's first copy). A source that reads in another thread hands its values over packed
 * anyway; a target that encodes a bulk format can write text straight from the UTF-8 bytes. No
 * record, and no JavaScript string for a text value, is made on the way.
 *
 * A batch holds the values of the value model exactly as `query` gives them: {@link packedValue}
 * of a cell is the value `query` would put in the record, and {@link unpackRecords} makes those
 * records. Cells go row by row: cell `v` is field `v % fields.length` of row `⌊v / fields.length⌋`.
 */
export interface PackedBatch {
  readonly rows: number;
  /** The fields of every row (fullNames), in cell order. */
  readonly fields: readonly string[];
  /** Per cell: one of the `CELL_` kinds. */
  readonly tags: Uint8Array;
  /** Per cell: the number of a CELL_NUMBER or CELL_DECIMAL cell; the first byte in `text` of a CELL_TEXT cell. */
  readonly nums: Float64Array;
  /** Per cell: the end (exclusive) in `text` of a CELL_TEXT cell. */
  readonly ends: Uint32Array;
  /** The UTF-8 bytes of the text cells. */
  readonly text: Buffer;
  /** Per cell, only for CELL_VALUE cells: the value itself. */
  readonly values: readonly (Value | undefined)[];
}

export const CELL_NULL = 0;
/** A number (integer and double fields). */
export const CELL_NUMBER = 1;
/** Text, as UTF-8 bytes in `text`. */
export const CELL_TEXT = 2;
export const CELL_TRUE = 3;
export const CELL_FALSE = 4;
/** Any other value, in `values`. */
export const CELL_VALUE = 5;
/** A decimal stored as a number: its value is the number's text, `String(n)`. */
export const CELL_DECIMAL = 6;

/** The value of a cell, as the source's `query` gives it. */
export function packedValue(b: PackedBatch, v: number): Value {
  switch (b.tags[v]) {
    case CELL_NUMBER:
      return b.nums[v] as number;
    case CELL_TEXT:
      return b.text.toString('utf8', b.nums[v], b.ends[v]);
    case CELL_TRUE:
      return true;
    case CELL_FALSE:
      return false;
    case CELL_VALUE:
      return b.values[v] ?? null;
    case CELL_DECIMAL:
      return String(b.nums[v]);
    default:
      return null;
  }
}

/** The value of field `col` (its index in `fields`) of row `row`. */
export function packedCell(b: PackedBatch, row: number, col: number): Value {
  return packedValue(b, row * b.fields.length + col);
}

/** One row as a record, every field present. */
export function packedRecord(b: PackedBatch, row: number): ConnectorRecord {
  const rec: ConnectorRecord = {};
  const n = b.fields.length;
  for (let i = 0; i < n; i++) rec[b.fields[i] as string] = packedValue(b, row * n + i);
  return rec;
}

/** The batch's records, as the source's `query` gives them. */
export function unpackRecords(b: PackedBatch, make?: (values: ArrayLike<Value>) => ConnectorRecord): ConnectorRecord[] {
  const n = b.fields.length;
  const out = new Array<ConnectorRecord>(b.rows);
  const vals = new Array<Value>(n);
  for (let r = 0, v = 0; r < b.rows; r++) {
    if (make) {
      for (let i = 0; i < n; i++, v++) vals[i] = packedValue(b, v);
      out[r] = make(vals);
    } else {
      out[r] = packedRecord(b, r);
      v += n;
    }
  }
  return out;
}

/**
 * Whether a value is a sound packed batch (the host checks what a plugin yields): arrays as long
 * as its cells, field names, and every text cell inside the text.
 */
export function isPackedBatch(b: unknown): b is PackedBatch {
  if (typeof b !== 'object' || b === null) return false;
  const p = b as Partial<PackedBatch>;
  if (
    typeof p.rows !== 'number' ||
    !Number.isInteger(p.rows) ||
    p.rows < 0 ||
    !Array.isArray(p.fields) ||
    !p.fields.every((f) => typeof f === 'string')
  )
    return false;
  const cells = p.rows * p.fields.length;
  const { tags, nums, ends, text } = p;
  if (!(
    tags instanceof Uint8Array &&
    tags.length >= cells &&
    nums instanceof Float64Array &&
    nums.length >= cells &&
    ends instanceof Uint32Array &&
    ends.length >= cells &&
    Buffer.isBuffer(text) &&
    Array.isArray(p.values)
  )) {
    return false;
  }
  for (let v = 0; v < cells; v++) {
    if (tags[v] !== CELL_TEXT) continue;
    const start = nums[v] as number;
    const end = ends[v] as number;
    if (!Number.isInteger(start) || start < 0 || start > end || end > text.length) return false;
  }
  return true;
}

/** Rows `start` to `end` (exclusive) of a batch, sharing its arrays and text (no copy). */
export function slicePacked(b: PackedBatch, start: number, end: number): PackedBatch {
  if (start === 0 && end === b.rows) return b;
  const n = b.fields.length;
  const from = start * n;
  const to = end * n;
  return {
    rows: end - start,
    fields: b.fields,
    tags: b.tags.subarray(from, to),
    nums: b.nums.subarray(from, to),
    ends: b.ends.subarray(from, to),
    text: b.text,
    values: b.values.length > 0 ? b.values.slice(from, to) : [],
  };
}

/**
 * Records as one packed batch of the given fields (a missing field is null): what a source that
 * reads records hands over when it is asked for packed batches. Text is encoded once, here.
 */
export function packRecords(records: readonly ConnectorRecord[], fields: readonly string[]): PackedBatch {
  const n = fields.length;
  const cells = records.length * n;
  const tags = new Uint8Array(cells);
  const nums = new Float64Array(cells);
  const ends = new Uint32Array(cells);
  const values: (Value | undefined)[] = [];
  let text = Buffer.allocUnsafe(Math.max(256, cells * 8));
  let pos = 0;
  for (let r = 0, v = 0; r < records.length; r++) {
    const rec = records[r] as ConnectorRecord;
    for (let i = 0; i < n; i++, v++) {
      const x = rec[fields[i] as string];
      if (x === null || x === undefined) continue; // CELL_NULL is 0
      if (typeof x === 'number') {
        tags[v] = CELL_NUMBER;
        nums[v] = x;
      } else if (typeof x === 'boolean') tags[v] = x ? CELL_TRUE : CELL_FALSE;
      else if (typeof x === 'string') {
        const need = pos + x.length * 3;
        if (need > text.length) {
          const grown = Buffer.allocUnsafe(Math.max(need, text.length * 2));
          text.copy(grown, 0, 0, pos);
          text = grown;
        }
        tags[v] = CELL_TEXT;
        nums[v] = pos;
        pos += text.write(x, pos, 'utf8');
        ends[v] = pos;
      } else {
        tags[v] = CELL_VALUE;
        values[v] = x;
      }
    }
  }
  return { rows: records.length, fields: [...fields], tags, nums, ends, text: text.subarray(0, pos), values };
}
