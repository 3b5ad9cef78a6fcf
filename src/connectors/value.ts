/**
 * The record value model every Connector reads and writes (docs/connectors.md "Value model").
 *
 * A record is a plain object keyed by field fullName; a value is `string | number | boolean |
 * null`. A number is only ever used where it is exact: whole numbers outside ±(2^53−1) and every
 * exact decimal travel as strings, so nothing is rounded on the way through Ferry. Dates and times
 * are ISO-8601 strings. This keeps records JSON-safe (the channel, the failed-record store, the
 * formula isolate) without a custom codec.
 */

import type { PropertyType } from '../protocol/metadata.js';

/** The type of a field (string, integer, decimal, …), which fixes the JavaScript form of its values. */
export { PROPERTY_TYPES, type PropertyType } from '../protocol/metadata.js';

/** One value of a record. */
export type Value = string | number | boolean | null;
/** A record: values keyed by field fullName. */
export type ConnectorRecord = Record<string, Value>;
/** Records travel in batches: arrays of a known maximum size (the plugin's `bulkLimit`). */
export type RecordBatch = ConnectorRecord[];

/** Returned by {@link coerceValue} when a value cannot be a value of the type. */
export const INVALID: unique symbol = Symbol('invalid value');
export type Invalid = typeof INVALID;

const INT_RE = /^[+-]?\d+$/;
const DECIMAL_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME_RE =
  /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?))?\s?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;
const TIME_RE = /^\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?$/;
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;
const GUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const TRUE_WORDS = new Set(['true', 't', '1', 'yes', 'y']);
const FALSE_WORDS = new Set(['false', 'f', '0', 'no', 'n']);

/** A whole number in the value model: a number when exact, else its canonical decimal string. */
export function integerValue(text: string): number | string {
  const n = Number(text);
  if (Number.isSafeInteger(n)) return n;
  const neg = text.startsWith('-');
  const digits = text.replace(/^[+-]/, '').replace(/^0+(?=\d)/, '');
  return neg && digits !== '0' ? `-${digits}` : digits;
}

/**
 * Converts a value to the canonical form of `type`, or returns {@link INVALID}. Writers use it to
 * check input before it reaches the datastore (the csv and sqlite plugins, which the datastore
 * would not check) and readers of untyped text (csv) to type what they read. `undefined` and null
 * are null; an empty string is null for every type but `string`.
 */
export function coerceValue(type: PropertyType, v: unknown): Value | Invalid {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'string':
      if (typeof v === 'string') return v;
      return typeof v === 'number' || typeof v === 'boolean' ? String(v) : INVALID;
    case 'integer':
      if (typeof v === 'number') {
        if (!Number.isInteger(v)) return INVALID;
        return Number.isSafeInteger(v) ? v : BigInt(v).toString();
      }
      if (typeof v === 'string') {
        const s = v.trim();
        if (s === '') return null;
        return INT_RE.test(s) ? integerValue(s) : INVALID;
      }
      return INVALID;
    case 'decimal':
      if (typeof v === 'number') return Number.isFinite(v) ? String(v) : INVALID;
      if (typeof v === 'string') {
        const s = v.trim();
        if (s === '') return null;
        return DECIMAL_RE.test(s) ? s : INVALID;
      }
      return INVALID;
    case 'double':
      if (typeof v === 'number') return Number.isNaN(v) ? INVALID : v;
      if (typeof v === 'string') {
        const s = v.trim();
        if (s === '') return null;
        return DECIMAL_RE.test(s) ? Number(s) : INVALID;
      }
      return INVALID;
    case 'boolean':
      if (typeof v === 'boolean') return v;
      if (typeof v === 'number') return v === 1 ? true : v === 0 ? false : INVALID;
      if (typeof v === 'string') {
        const s = v.trim().toLowerCase();
        if (s === '') return null;
        return TRUE_WORDS.has(s) ? true : FALSE_WORDS.has(s) ? false : INVALID;
      }
      return INVALID;
    case 'date': {
      if (typeof v !== 'string') return INVALID;
      const s = v.trim();
      if (s === '') return null;
      const m = DATE_RE.exec(s);
      if (m && validDate(Number(m[1]), Number(m[2]), Number(m[3]))) return s;
      if (m) return INVALID;
      // An ISO datetime at midnight is a date too (a datetime column written into a date field).
      const dt = DATETIME_RE.exec(s);
      const dm = dt?.[1] ? DATE_RE.exec(dt[1]) : null;
      return dt?.[1] &&
        dt[2] &&
        !dt[3] &&
        dm &&
        validDate(Number(dm[1]), Number(dm[2]), Number(dm[3])) &&
        /^00:00(:00(\.0+)?)?$/.test(dt[2])
        ? dt[1]
        : INVALID;
    }
    case 'datetime':
      return typeof v === 'string' ? normalizeDatetime(v) : INVALID;
    case 'time': {
      if (typeof v !== 'string') return INVALID;
      const s = v.trim();
      if (s === '') return null;
      return TIME_RE.test(s) ? s : INVALID;
    }
    case 'binary':
      if (typeof v !== 'string') return INVALID;
      return BASE64_RE.test(v) && v.length % 4 === 0 ? v : INVALID;
    case 'json':
      if (typeof v !== 'string') return JSON.stringify(v) ?? INVALID;
      if (v.trim() === '') return null;
      try {
        JSON.parse(v);
        return v;
      } catch {
        return INVALID;
      }
    case 'guid': {
      if (typeof v !== 'string') return INVALID;
      const s = v.trim();
      if (s === '') return null;
      return GUID_RE.test(s) ? s.toLowerCase() : INVALID;
    }
  }
}

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  return d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
}

/**
 * The canonical datetime: `T` between date and time, seconds always present, a zone offset turned
 * into UTC `Z` (sub-millisecond digits are kept when the offset is already UTC). A value without a
 * zone stays without one.
 */
export function normalizeDatetime(text: string): string | null | Invalid {
  const s = text.trim();
  if (s === '') return null;
  const m = DATETIME_RE.exec(s);
  if (!m?.[1]) return INVALID;
  const date = m[1];
  const dm = DATE_RE.exec(date);
  if (!dm || !validDate(Number(dm[1]), Number(dm[2]), Number(dm[3]))) return INVALID;
  let time = m[2] ?? '00:00:00';
  if (time.length === 5) time += ':00';
  const zone = m[3];
  if (zone === undefined) return `${date}T${time}`;
  if (zone === 'Z' || zone === 'z' || /^[+-]00(:?00)?$/.test(zone)) return `${date}T${time}Z`;
  const ms = Date.parse(`${date}T${time}${zone.length === 3 ? `${zone}:00` : zone}`);
  return Number.isNaN(ms) ? INVALID : new Date(ms).toISOString();
}

/** Milliseconds since the epoch of a datetime value; a value without a zone counts as UTC. */
export function datetimeMillis(v: string): number {
  const s = v.length > 10 && v[10] === ' ' ? `${v.slice(0, 10)}T${v.slice(11)}` : v;
  const hasZone = /(?:Z|z|[+-]\d{2}(?::?\d{2})?)$/.test(s) && s.length > 10;
  return Date.parse(hasZone ? s : s.length === 10 ? `${s}T00:00:00Z` : `${s}Z`);
}

/**
 * Orders two non-null values of one field type as the datastores do: numbers and decimals by
 * magnitude, datetimes by instant, booleans false before true, everything else by code unit.
 */
export function compareValues(type: PropertyType, a: Exclude<Value, null>, b: Exclude<Value, null>): number {
  switch (type) {
    case 'integer':
    case 'decimal':
    case 'double': {
      const x = Number(a);
      const y = Number(b);
      if (x !== y || typeof a !== 'string' || typeof b !== 'string') return x < y ? -1 : x > y ? 1 : 0;
      return compareDecimalText(a, b);
    }
    case 'boolean':
      return Number(a === true || a === 'true') - Number(b === true || b === 'true');
    case 'datetime': {
      const x = datetimeMillis(String(a));
      const y = datetimeMillis(String(b));
      if (!Number.isNaN(x) && !Number.isNaN(y)) return x < y ? -1 : x > y ? 1 : 0;
      return compareText(String(a), String(b));
    }
    default:
      return compareText(String(a), String(b));
  }
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Exact order of two decimal strings whose float images are equal (large or long decimals). */
function compareDecimalText(a: string, b: string): number {
  if (!DECIMAL_RE.test(a) || !DECIMAL_RE.test(b) || /[eE]/.test(a + b)) return 0;
  const sa = a.startsWith('-') ? -1 : 1;
  const sb = b.startsWith('-') ? -1 : 1;
  if (sa !== sb) return sa < sb ? -1 : 1;
  const [ia = '', fa = ''] = a.replace(/^[+-]/, '').split('.');
  const [ib = '', fb = ''] = b.replace(/^[+-]/, '').split('.');
  const na = ia.replace(/^0+/, '');
  const nb = ib.replace(/^0+/, '');
  let c = na.length !== nb.length ? (na.length < nb.length ? -1 : 1) : compareText(na, nb);
  if (c === 0) {
    const len = Math.max(fa.length, fb.length);
    c = compareText(fa.padEnd(len, '0'), fb.padEnd(len, '0'));
  }
  return c * sa;
}
