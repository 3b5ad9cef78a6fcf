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

/** Writes the batch's rows as LOAD DATA parts, or answers undefined when a cell needs the records way. */
export function packedTsv(b: PackedBatch, cols: readonly MariaColumn[]): Buffer[] | undefined {
  const parts: Buffer[] = [];
  let out = Buffer.allocUnsafe(PART);
  let pos = 0;
  const room = (n: number): void => {
    if (pos + n <= out.length) return;
    parts.push(out.subarray(0, pos));
    out = Buffer.allocUnsafe(Math.max(PART, n));
    pos = 0;
  };
  const ascii = (s: string): void => {
    room(s.length);
    pos += out.write(s, pos, 'latin1');
  };
  const { tags, nums, ends, text } = b;
  const n = cols.length;
  for (let r = 0, v = 0; r < b.rows; r++) {
    for (let j = 0; j < n; j++, v++) {
      const c = cols[j] as MariaColumn;
      if (j) {
        room(1);
        out[pos++] = TAB;
      }
      const tag = tags[v];
      if (tag === CELL_NULL) {
        ascii('\\N');
        continue;
      }
      if (tag === CELL_TRUE || tag === CELL_FALSE) {
        if (c.type !== 'boolean') return undefined;
        room(1);
        out[pos++] = tag === CELL_TRUE ? 0x31 : 0x30;
        continue;
      }
      if (tag === CELL_NUMBER || tag === CELL_DECIMAL) {
        const x = nums[v] as number;
        if (!Number.isFinite(x)) return undefined;
        if (c.type === 'integer' ? !Number.isSafeInteger(x) : c.type !== 'double' && c.type !== 'decimal')
          return undefined;
        ascii(String(x));
        continue;
      }
      if (tag !== CELL_TEXT) return undefined;
      const s = nums[v] as number;
      const e = ends[v] as number;
      switch (c.type) {
        case 'string':
        case 'json': {
          room((e - s) * 2);
          for (let k = s; k < e; k++) {
            const byte = text[k] as number;
            const esc = byte < 0x20 || byte === BACKSLASH ? ESCAPE.get(byte) : undefined;
            if (esc !== undefined) {
              out[pos++] = BACKSLASH;
              out[pos++] = esc;
            } else out[pos++] = byte;
          }
          if (c.type === 'json' && e === s) return undefined;
          continue;
        }
        case 'integer':
        case 'decimal':
          if (!plainNumber(text, s, e, c.type === 'integer')) return undefined;
          break;
        case 'date':
          if (!plainDate(text, s, e)) return undefined;
          break;
        case 'datetime': {
          const len = plainDatetime(text, s, e);
          if (len < 0) return undefined;
          room(len);
          text.copy(out, pos, s, s + len);
          out[pos + 10] = 0x20;
          pos += len;
          continue;
        }
        default:
          return undefined;
      }
      room(e - s);
      pos += text.copy(out, pos, s, e);
    }
    room(1);
    out[pos++] = NL;
  }
  if (pos > 0) parts.push(out.subarray(0, pos));
  return parts;
}
