import {
  CELL_DECIMAL,
  CELL_FALSE,
  CELL_NULL,
  CELL_NUMBER,
  CELL_TEXT,
  CELL_TRUE,
  type PackedBatch,
} from '../../src/connectors/sdk.js';
import type { MariaColumn } from './catalogue.js';

/**
 * A packed batch (docs/connectors.md "Packed batches") straight into LOAD DATA bytes: text cells
 * are copied from their UTF-8 bytes with the file's escapes, numbers written as their digits,
 * booleans as 1/0, a UTC datetime's `T` and `Z` turned into the server's form in the bytes. No
 * record and no string per row. A cell whose encoding here is not certain (a value cell, text in a
 * column of another type that is not in its plain form) makes the whole batch go the records way
 * instead (`undefined`), where every value is checked as usual.
 */

const TAB = 0x09;
const NL = 0x0a;
const BACKSLASH = 0x5c;
const PART = 256 * 1024;

/** Bytes that LOAD DATA reads as escapes or separators, and what stands for each. */
const ESCAPE = new Map<number, number>([
  [0x00, 0x30], // \0
  [0x09, 0x74], // \t
  [0x0a, 0x6e], // \n
  [0x0d, 0x72], // \r
  [0x5c, 0x5c], // \\
  [0x1a, 0x5a], // \Z
]);

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;

/** `-?digits(.digits)?` with at most `maxDigits` digits before any point (0 = no limit), no point when `integer`. */
function plainNumber(t: Buffer, s: number, e: number, integer: boolean): boolean {
  let i = s;
  if (t[i] === 0x2d) i++;
  const first = i;
  while (i < e && isDigit(t[i])) i++;
  if (i === first) return false;
  if (integer) return i === e && i - first <= 18;
  if (i === e) return true;
  if (t[i] !== 0x2e) return false;
  const frac = ++i;
  while (i < e && isDigit(t[i])) i++;
  return i === e && i > frac;
}

/** `YYYY-MM-DD` */
function plainDate(t: Buffer, s: number, e: number): boolean {
  if (e - s !== 10 || t[s + 4] !== 0x2d || t[s + 7] !== 0x2d) return false;
  for (const k of [0, 1, 2, 3, 5, 6, 8, 9]) if (!isDigit(t[s + k])) return false;
  return true;
}

/** `YYYY-MM-DDTHH:MM:SS[.f{1,6}][Z]`: the length without its `Z`, or -1. */
function plainDatetime(t: Buffer, s: number, e: number): number {
  const end = t[e - 1] === 0x5a ? e - 1 : e;
  const n = end - s;
  if (n < 19 || n === 20 || n > 26 || !plainDate(t, s, s + 10) || t[s + 10] !== 0x54) return -1;
  if (t[s + 13] !== 0x3a || t[s + 16] !== 0x3a) return -1;
  for (const k of [11, 12, 14, 15, 17, 18]) if (!isDigit(t[s + k])) return -1;
  if (n > 19) {
    if (t[s + 19] !== 0x2e) return -1;
    for (let k = 20; k < n; k++) if (!isDigit(t[s + k])) return -1;
  }
  return n;
}

/** Copies bytes `s`…`e` of `from` into `to` at `at` (a loop: cells are short, a native copy costs more). */
function copyBytes(from: Buffer, s: number, e: number, to: Buffer, at: number): number {
  for (let k = s; k < e; k++) to[at++] = from[k] as number;
  return at;
}

/** Writes a number's text (ASCII) into `to` at `at`. */
function writeNumber(x: number, to: Buffer, at: number): number {
  const t = String(x);
  for (let k = 0; k < t.length; k++) to[at++] = t.charCodeAt(k);
  return at;
}

/** Column kinds as numbers, so the per-cell switch compares small integers. */
const K_STRING = 0;
const K_JSON = 1;
const K_INTEGER = 2;
const K_DECIMAL = 3;
const K_DOUBLE = 4;
const K_BOOLEAN = 5;
const K_DATE = 6;
const K_DATETIME = 7;
const K_OTHER = 8;
const KINDS: Partial<Record<MariaColumn['type'], number>> = {
  string: K_STRING,
  json: K_JSON,
  integer: K_INTEGER,
  decimal: K_DECIMAL,
  double: K_DOUBLE,
  boolean: K_BOOLEAN,
  date: K_DATE,
  datetime: K_DATETIME,
};

/**
 * Rows `from`… of the batch into `out` at `pos`, until `to` or until `out` has no room for the next
 * row at its longest. Answers [next row, next position], or [-1, …] for a cell that needs the
 * records way. A plain function (not the generator) so that the engine optimizes its loops.
 */
function encodeRows(b: PackedBatch, kinds: Uint8Array, from: number, out: Buffer, pos: number): [number, number] {
  const { tags, nums, ends, text } = b;
  const n = kinds.length;
  let r = from;
  for (let v = r * n; r < b.rows; r++, v += n) {
    let need = 1 + n;
    for (let j = 0; j < n; j++)
      need += tags[v + j] === CELL_TEXT ? ((ends[v + j] as number) - (nums[v + j] as number)) * 2 : 32;
    if (pos + need > out.length) return [r, pos];
    for (let j = 0; j < n; j++) {
      const kind = kinds[j] as number;
      const cell = v + j;
      if (j) out[pos++] = TAB;
      const tag = tags[cell];
      if (tag === CELL_NULL) {
        out[pos++] = BACKSLASH;
        out[pos++] = 0x4e; // N
        continue;
      }
      if (tag === CELL_TRUE || tag === CELL_FALSE) {
        if (kind !== K_BOOLEAN) return [-1, pos];
        out[pos++] = tag === CELL_TRUE ? 0x31 : 0x30;
        continue;
      }
      if (tag === CELL_NUMBER || tag === CELL_DECIMAL) {
        const x = nums[cell] as number;
        if (!Number.isFinite(x)) return [-1, pos];
        if (kind === K_INTEGER ? !Number.isSafeInteger(x) : kind !== K_DOUBLE && kind !== K_DECIMAL) return [-1, pos];
        pos = writeNumber(x, out, pos);
        continue;
      }
      if (tag !== CELL_TEXT) return [-1, pos];
      const s = nums[cell] as number;
      const e = ends[cell] as number;
      if (kind === K_STRING || kind === K_JSON) {
        if (kind === K_JSON && e === s) return [-1, pos];
        for (let k = s; k < e; k++) {
          const byte = text[k] as number;
          const esc = byte < 0x20 || byte === BACKSLASH ? ESCAPE.get(byte) : undefined;
          if (esc !== undefined) {
            out[pos++] = BACKSLASH;
            out[pos++] = esc;
          } else out[pos++] = byte;
        }
        continue;
      }
      if (kind === K_DATETIME) {
        const len = plainDatetime(text, s, e);
        if (len < 0) return [-1, pos];
        const at = pos;
        pos = copyBytes(text, s, s + len, out, pos);
        out[at + 10] = 0x20;
        continue;
      }
      const plain =
        kind === K_INTEGER || kind === K_DECIMAL
          ? plainNumber(text, s, e, kind === K_INTEGER)
          : kind === K_DATE && plainDate(text, s, e);
      if (!plain) return [-1, pos];
      pos = copyBytes(text, s, e, out, pos);
    }
    out[pos++] = NL;
  }
  return [r, pos];
}

/**
 * The batch's rows as LOAD DATA parts of about 256 KiB, made as they are read (the server loads
 * one part while the next is made). When a cell needs the records way, the parts stop there and
 * `state.refused` is set: the caller rolls the load back and writes the batch as records.
 */
export function* packedTsv(
  b: PackedBatch,
  cols: readonly MariaColumn[],
  state: { refused: boolean },
): Generator<Buffer> {
  const kinds = Uint8Array.from(cols.map((c) => KINDS[c.type] ?? K_OTHER));
  if (kinds.includes(K_OTHER)) {
    state.refused = true;
    return;
  }
  let row = 0;
  while (row < b.rows) {
    // A part holds at least one row, however long.
    const out = Buffer.allocUnsafe(Math.max(PART, rowBound(b, row)));
    const [next, pos] = encodeRows(b, kinds, row, out, 0);
    if (next < 0) {
      state.refused = true;
      return;
    }
    row = next;
    if (pos > 0) yield out.subarray(0, pos);
  }
}

/** The longest a row's line can be. */
function rowBound(b: PackedBatch, row: number): number {
  const n = b.fields.length;
  let need = 1 + n;
  for (let v = row * n; v < row * n + n; v++)
    need += b.tags[v] === CELL_TEXT ? ((b.ends[v] as number) - (b.nums[v] as number)) * 2 : 32;
  return need;
}
