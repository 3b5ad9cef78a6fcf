/**
 * The one order of net-change stamps, shared by the Map runtime's watermark (watermark.ts) and a
 * Replication's first copy (solutions/first-copy.ts). {@link compareStamp} decides it:
 *
 *   1. The same text: the same stamp.
 *   2. Both ISO-8601 of one shape — `YYYY-MM-DD` alone, or `YYYY-MM-DD?hh:mm:ss[.fff]` with the
 *      same date/time separator (`T`, `t` or a space) and the same zone designator text (`Z`,
 *      `±hh:mm`, `±hhmm`, `±hh`, or none) — order as their text to the second; only a tie there
 *      goes on to step 3. One zone and one layout make the text order the instant order, with no
 *      parsing: this is what keeps a copy of millions of rows cheap.
 *   3. Both decimal numerals (a stamp kept as a number): by their value.
 *   4. Both read by `Date.parse`: by instant (two zones, two separators, fractions of a second).
 *   5. Otherwise by text.
 *
 * Stamps without a zone are local times of one clock: where a daylight-saving gap makes
 * `Date.parse` move a time that does not exist past a later one, step 2 keeps the clock's order.
 *
 * Packed batches (connectors/packed.ts) compare the UTF-8 bytes of their stamps without making
 * strings: {@link stampShapeBytes} gives a stamp's shape (step 2), {@link compareShapedBytes}
 * orders another by it (or finds it of another shape), {@link samePrefixBytes} finds ties.
 */
import type { Value } from '../../connectors/value.js';

/** The stamp's text up to the second: step 2 compares this much. */
const PREFIX = 19;
const DASH = 45;
const COLON = 58;
const DOT = 46;
const PLUS = 43;
/** The positions of `YYYY-MM-DD?hh:mm:ss` that hold no digit, as bits. */
const SEPARATORS = (1 << 4) | (1 << 7) | (1 << 10) | (1 << 13) | (1 << 16);

/**
 * Orders a net-change value against the mark: > 0 newer, 0 the same instant (or the same text),
 * < 0 older (the module's comment gives the order).
 */
export function compareStamp(v: Value, mark: string): number {
  const s = typeof v === 'string' ? v : String(v);
  const shape = markShape(mark);
  if (shape >= 0) {
    const d = compareShaped(s, mark, shape);
    if (d < 0) return d;
    if (d > 0 && d !== OTHER_SHAPE) {
      // A newer stamp is usually the next mark: its shape is known now.
      lastMark = s;
      return d;
    }
  }
  if (s === mark) return 0;
  if (isNumeral(s) && isNumeral(mark)) return Math.sign(Number(s) - Number(mark));
  const ts = Date.parse(s);
  const tm = Date.parse(mark);
  if (!Number.isNaN(ts) && !Number.isNaN(tm)) return Math.sign(ts - tm);
  return s > mark ? 1 : s < mark ? -1 : 0;
}

/** The later of the mark and a net-change value: the mark when they are the same instant, or no value. */
export function later(a: string | null, b: Value | undefined): string | null {
  if (b === null || b === undefined) return a;
  if (a === null) return String(b);
  return compareStamp(b, a) > 0 ? String(b) : a;
}

/** Whether a net-change value is the mark itself (the same instant, or the same text). */
export function sameMark(mark: string, b: Value | undefined): boolean {
  return b !== null && b !== undefined && compareStamp(b, mark) === 0;
}

/** Whether a stamp is newer than the mark. */
export function newer(v: Value, mark: string): boolean {
  return compareStamp(v, mark) > 0;
}

/** Whether a stamp is the mark itself (the same instant, or the same text). */
export function atStamp(v: Value, mark: string): boolean {
  return compareStamp(v, mark) === 0;
}

/**
 * The shape of an ISO-8601 stamp for step 2 as a number: -1 when the text is not one; 0 for a
 * date alone; else the separator's code × 8 + the length of the zone designator (0–6). Two stamps
 * of one shape compare by text only when their designators are the same text too.
 */
export function stampShape(s: string): number {
  const n = s.length;
  if (n === 10) return isDateAt(s, 0) ? 0 : -1;
  if (n < PREFIX || !isDateAt(s, 0)) return -1;
  const sep = s.charCodeAt(10);
  if (!isSeparator(sep) || s.charCodeAt(13) !== COLON || s.charCodeAt(16) !== COLON) return -1;
  if (!isTimeAt(s, 0)) return -1;
  const zone = zoneLength(n, s.charCodeAt(n - 1), s.charCodeAt(n - 3), s.charCodeAt(n - 5), s.charCodeAt(n - 6));
  // Between the seconds and the zone: nothing, or a fraction of a second.
  const end = n - zone;
  if (end > PREFIX) {
    if (s.charCodeAt(PREFIX) !== DOT || end === PREFIX + 1) return -1;
    for (let i = PREFIX + 1; i < end; i++) if (!isDigit(s.charCodeAt(i))) return -1;
  }
  return sep * 8 + zone;
}

/** {@link stampShape} of a stamp's UTF-8 bytes `b[start, end)`. */
export function stampShapeBytes(b: Uint8Array, start: number, end: number): number {
  const n = end - start;
  if (n === 10) return isDateBytes(b, start) ? 0 : -1;
  if (n < PREFIX || !isDateBytes(b, start)) return -1;
  const sep = b[start + 10] as number;
  if (!isSeparator(sep) || b[start + 13] !== COLON || b[start + 16] !== COLON) return -1;
  if (!isTimeBytes(b, start)) return -1;
  const zone = zoneLength(n, b[end - 1] as number, b[end - 3] as number, b[end - 5] as number, b[end - 6] as number);
  const stop = end - zone;
  if (stop > start + PREFIX) {
    if (b[start + PREFIX] !== DOT || stop === start + PREFIX + 1) return -1;
    for (let i = start + PREFIX + 1; i < stop; i++) if (!isDigit(b[i] as number)) return -1;
  }
  return sep * 8 + zone;
}

/** What {@link compareShapedBytes} returns for a stamp of another shape (no difference of two bytes is). */
export const OTHER_SHAPE = 256;

/**
 * Compares the stamp `b[a0, a1)` with the stamp `o[b0, b1)`, whose shape is `shape`
 * ({@link stampShapeBytes}), by their bytes up to the second (the sign is the order); or
 * {@link OTHER_SHAPE} when the first has not that shape, zone designator included. The bytes equal
 * to the other's are of their kind already; from the first that differs on, each must be a digit
 * or the other's separator. So a row costs a comparison a byte and no string.
 */
export function compareShapedBytes(
  b: Uint8Array,
  a0: number,
  a1: number,
  shape: number,
  o: Uint8Array,
  b0: number,
  b1: number,
): number {
  const zone = shape & 7;
  if (shape === 0 ? a1 - a0 !== 10 : a1 - a0 < PREFIX + zone) return OTHER_SHAPE;
  const m = shape === 0 ? 10 : PREFIX;
  let i = 0;
  while (i < m && b[a0 + i] === o[b0 + i]) i++;
  let d = 0;
  if (i < m) {
    const x = b[a0 + i] as number;
    if ((SEPARATORS >> i) & 1 || !isDigit(x)) return OTHER_SHAPE;
    d = x - (o[b0 + i] as number);
    for (i++; i < m; i++) {
      const c = b[a0 + i] as number;
      if ((SEPARATORS >> i) & 1 ? c !== o[b0 + i] : !isDigit(c)) return OTHER_SHAPE;
    }
  }
  for (let k = 1; k <= zone; k++) if (b[a1 - k] !== o[b1 - k]) return OTHER_SHAPE;
  // Between the seconds and the zone: nothing, or a fraction of a second.
  const stop = a1 - zone;
  if (stop > a0 + PREFIX) {
    if (b[a0 + PREFIX] !== DOT || stop === a0 + PREFIX + 1) return OTHER_SHAPE;
    for (let k = a0 + PREFIX + 1; k < stop; k++) if (!isDigit(b[k] as number)) return OTHER_SHAPE;
  }
  return d;
}

/**
 * A mark's bytes, when it is an ISO-8601 stamp in ASCII (so that its shape in bytes is
 * {@link stampShape}'s) that packed batches can compare by bytes; else undefined.
 */
export function stampBytes(mark: string): Buffer | undefined {
  if (stampShape(mark) < 0) return undefined;
  const bytes = Buffer.from(mark, 'utf8');
  return bytes.length === mark.length ? bytes : undefined;
}

/**
 * Whether two stamps of one shape (of `b`, the second of `o` when given) are equal up to the
 * second, comparing from the last byte of that back: stamps that differ mostly differ in their
 * seconds, so a row not at the newest stamp costs a comparison or two rather than the dozen of
 * their common date and hour.
 */
export function samePrefixBytes(
  b: Uint8Array,
  a0: number,
  a1: number,
  b0: number,
  b1: number,
  o: Uint8Array = b,
): boolean {
  for (let i = Math.min(PREFIX, a1 - a0, b1 - b0) - 1; i >= 0; i--) if (b[a0 + i] !== o[b0 + i]) return false;
  return true;
}

/**
 * The length of the zone designator ending a date and time of `n` characters (at least 19), from
 * its characters 1, 3, 5 and 6 from the end: `Z` 1, `±hh:mm` 6, `±hhmm` 5, `±hh` 3, none 0. A sign
 * is a designator's only where the seconds have ended (a fraction holds digits alone).
 */
function zoneLength(n: number, last: number, third: number, fifth: number, sixth: number): number {
  if (last === 90 || last === 122) return 1;
  if (n - 6 >= PREFIX && isSign(sixth) && third === COLON) return 6;
  if (n - 5 >= PREFIX && isSign(fifth)) return 5;
  if (n - 3 >= PREFIX && isSign(third)) return 3;
  return 0;
}

/**
 * The last mark {@link markShape} was asked about, and its shape: a run compares many values with
 * one mark, or moves the mark to each newer value it meets (which then has the mark's shape).
 */
let lastMark = '';
let lastShape = -1;

function markShape(mark: string): number {
  if (mark !== lastMark) {
    lastShape = stampShape(mark);
    lastMark = mark;
  }
  return lastShape;
}

/** {@link compareShapedBytes} of two strings: `s` against `o`, whose shape is `shape`. */
function compareShaped(s: string, o: string, shape: number): number {
  const zone = shape & 7;
  const n = s.length;
  if (shape === 0 ? n !== 10 : n < PREFIX + zone) return OTHER_SHAPE;
  const m = shape === 0 ? 10 : PREFIX;
  let i = 0;
  while (i < m && s.charCodeAt(i) === o.charCodeAt(i)) i++;
  let d = 0;
  if (i < m) {
    const x = s.charCodeAt(i);
    if ((SEPARATORS >> i) & 1 || !isDigit(x)) return OTHER_SHAPE;
    d = x - o.charCodeAt(i);
    for (i++; i < m; i++) {
      const c = s.charCodeAt(i);
      if ((SEPARATORS >> i) & 1 ? c !== o.charCodeAt(i) : !isDigit(c)) return OTHER_SHAPE;
    }
  }
  for (let k = 1; k <= zone; k++) if (s.charCodeAt(n - k) !== o.charCodeAt(o.length - k)) return OTHER_SHAPE;
  const stop = n - zone;
  if (stop > PREFIX) {
    if (s.charCodeAt(PREFIX) !== DOT || stop === PREFIX + 1) return OTHER_SHAPE;
    for (let k = PREFIX + 1; k < stop; k++) if (!isDigit(s.charCodeAt(k))) return OTHER_SHAPE;
  }
  return d;
}

/** `YYYY-MM-DD` at `at`. */
function isDateAt(s: string, at: number): boolean {
  return (
    s.charCodeAt(at + 4) === DASH &&
    s.charCodeAt(at + 7) === DASH &&
    isDigit(s.charCodeAt(at)) &&
    isDigit(s.charCodeAt(at + 1)) &&
    isDigit(s.charCodeAt(at + 2)) &&
    isDigit(s.charCodeAt(at + 3)) &&
    isDigit(s.charCodeAt(at + 5)) &&
    isDigit(s.charCodeAt(at + 6)) &&
    isDigit(s.charCodeAt(at + 8)) &&
    isDigit(s.charCodeAt(at + 9))
  );
}

/** The digits of `hh:mm:ss` after the date at `at` (the colons are checked apart). */
function isTimeAt(s: string, at: number): boolean {
  return (
    isDigit(s.charCodeAt(at + 11)) &&
    isDigit(s.charCodeAt(at + 12)) &&
    isDigit(s.charCodeAt(at + 14)) &&
    isDigit(s.charCodeAt(at + 15)) &&
    isDigit(s.charCodeAt(at + 17)) &&
    isDigit(s.charCodeAt(at + 18))
  );
}

function isTimeBytes(b: Uint8Array, at: number): boolean {
  return (
    isDigit(b[at + 11] as number) &&
    isDigit(b[at + 12] as number) &&
    isDigit(b[at + 14] as number) &&
    isDigit(b[at + 15] as number) &&
    isDigit(b[at + 17] as number) &&
    isDigit(b[at + 18] as number)
  );
}

function isDateBytes(b: Uint8Array, at: number): boolean {
  return (
    b[at + 4] === DASH &&
    b[at + 7] === DASH &&
    isDigit(b[at] as number) &&
    isDigit(b[at + 1] as number) &&
    isDigit(b[at + 2] as number) &&
    isDigit(b[at + 3] as number) &&
    isDigit(b[at + 5] as number) &&
    isDigit(b[at + 6] as number) &&
    isDigit(b[at + 8] as number) &&
    isDigit(b[at + 9] as number)
  );
}

/** An ASCII digit (`c ^ 48` is 0–9 for those alone). */
function isDigit(c: number): boolean {
  return (c ^ 48) <= 9;
}

/** `T`, `t` or a space between the date and the time. */
function isSeparator(c: number): boolean {
  return c === 84 || c === 116 || c === 32;
}

function isSign(c: number): boolean {
  return c === PLUS || c === DASH;
}

/** An optional sign, digits, and an optional fraction: a stamp kept as a number. */
function isNumeral(s: string): boolean {
  let i = s.charCodeAt(0) === DASH || s.charCodeAt(0) === PLUS ? 1 : 0;
  const from = i;
  while (i < s.length && isDigit(s.charCodeAt(i))) i++;
  if (i === from) return false;
  if (i === s.length) return true;
  if (s.charCodeAt(i) !== DOT || i + 1 === s.length) return false;
  for (i++; i < s.length; i++) if (!isDigit(s.charCodeAt(i))) return false;
  return true;
}
