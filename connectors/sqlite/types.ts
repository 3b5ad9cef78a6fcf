import { coerceValue, INVALID, type PropertyType, type Value } from '../../src/connectors/sdk.js';

/**
 * SQLite declares types loosely. A column's property type comes from its declared type: names
 * Ferry writes itself (BOOLEAN, DATE, DATETIME, DECIMAL(p,s), JSON, UUID) first, then SQLite's own
 * affinity rules (INT → integer; CHAR, CLOB, TEXT → string; REAL, FLOA, DOUB → double; NUMERIC →
 * decimal; none or BLOB → string / binary).
 */
export function propertyTypeOf(declared: string): { type: PropertyType; size: number; scale?: number } {
  const t = declared.toUpperCase();
  const args = /\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)/.exec(t);
  const n = args?.[1] ? Number(args[1]) : 0;
  const scale = args?.[2] ? Number(args[2]) : undefined;
  if (t.includes('BOOL')) return { type: 'boolean', size: 0 };
  if (t.includes('DATETIME') || t.includes('TIMESTAMP')) return { type: 'datetime', size: 0 };
  if (t.includes('DATE')) return { type: 'date', size: 0 };
  if (t.includes('TIME')) return { type: 'time', size: 0 };
  if (t.includes('DECIMAL') || t.includes('NUMERIC') || t.includes('MONEY'))
    return scale === undefined ? { type: 'decimal', size: n } : { type: 'decimal', size: n, scale };
  if (t.includes('JSON')) return { type: 'json', size: 0 };
  if (t.includes('UUID') || t.includes('GUID')) return { type: 'guid', size: 0 };
  if (t.includes('INT')) return { type: 'integer', size: t.includes('SMALL') ? 2 : t.includes('TINY') ? 1 : 8 };
  if (t.includes('CHAR') || t.includes('CLOB') || t.includes('TEXT')) return { type: 'string', size: n };
  if (t.includes('REAL') || t.includes('FLOA') || t.includes('DOUB')) return { type: 'double', size: 0 };
  if (t.includes('BLOB') || t.includes('BINARY')) return { type: 'binary', size: n };
  return { type: 'string', size: 0 };
}

/**
 * Whether a declared type has INTEGER, REAL or NUMERIC affinity (SQLite's rules, in its order):
 * such a column stores well-formed numeric text as a number.
 */
export function numericAffinity(declared: string): boolean {
  const t = declared.toUpperCase();
  if (t.includes('INT')) return true;
  if (t.includes('CHAR') || t.includes('CLOB') || t.includes('TEXT')) return false;
  if (t.includes('BLOB') || t === '') return false;
  return true;
}

/** The declared type ensureEntity gives a field of a property type. */
export function declaredTypeOf(type: PropertyType, size: number, scale?: number): string {
  switch (type) {
    case 'string':
      return size > 0 ? `VARCHAR(${size})` : 'TEXT';
    case 'integer':
      return 'INTEGER';
    case 'decimal':
      return size > 0 ? `DECIMAL(${size},${scale ?? 0})` : 'DECIMAL';
    case 'double':
      return 'REAL';
    case 'boolean':
      return 'BOOLEAN';
    case 'date':
      return 'DATE';
    case 'datetime':
      return 'DATETIME';
    case 'time':
      return 'TIME';
    case 'binary':
      return 'BLOB';
    case 'json':
      return 'JSON';
    case 'guid':
      return 'UUID';
  }
}

type Raw = number | bigint | string | Buffer | null;
export type ReadConvert = (v: Raw) => Value;

function fromBigint(v: bigint): number | string {
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : v.toString();
}

/**
 * Stored value → value model, per property type. Statements read with safe integers, so whole
 * numbers beyond 2^53 arrive as bigint and leave as exact strings. Text and numbers, what most
 * cells hold, are tested first.
 */
export function readConverter(type: PropertyType): ReadConvert {
  const generic = (v: Raw): Value => {
    if (typeof v === 'string' || typeof v === 'number' || v === null) return v;
    if (typeof v === 'bigint') return fromBigint(v);
    return v.toString('base64');
  };
  switch (type) {
    case 'integer':
    case 'double':
      return (v) => (typeof v === 'bigint' ? (type === 'double' ? Number(v) : fromBigint(v)) : generic(v));
    case 'decimal':
      return (v) => (v === null ? null : typeof v === 'number' || typeof v === 'bigint' ? String(v) : generic(v));
    case 'boolean':
      return (v) => {
        if (v === null) return null;
        if (typeof v === 'number' || typeof v === 'bigint') return Number(v) !== 0;
        const c = coerceValue('boolean', generic(v));
        return c === INVALID ? generic(v) : c;
      };
    case 'datetime':
      return (v) => {
        if (v === null) return null;
        if (typeof v === 'number' || typeof v === 'bigint') return new Date(Number(v) * 1000).toISOString();
        if (typeof v === 'string' && v.length > 10 && v[10] === ' ') return `${v.slice(0, 10)}T${v.slice(11)}`;
        return generic(v);
      };
    default:
      return generic;
  }
}

const NUM_FAST = /^-?\d+(?:\.\d+)?$/;
const DATE_FAST = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])$/;
const DATETIME_FAST = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T[0-2]\d:[0-5]\d:[0-5]\d(?:\.\d{1,9})?Z?$/;

/** Value model → what better-sqlite3 binds, or INVALID. Checks the value as SQLite would not. */
export function writeValue(type: PropertyType, v: unknown): number | bigint | string | Buffer | null | typeof INVALID {
  // Fast paths for values already in canonical form (the common case in bulk loads).
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'string':
      if (typeof v === 'string') return v;
      break;
    case 'integer':
      if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
      break;
    case 'double':
      if (typeof v === 'number' && !Number.isNaN(v)) return v;
      break;
    case 'decimal':
      if (typeof v === 'string' && NUM_FAST.test(v)) return v;
      break;
    case 'boolean':
      if (typeof v === 'boolean') return v ? 1 : 0;
      break;
    case 'date':
      if (typeof v === 'string' && DATE_FAST.test(v)) return v;
      break;
    case 'datetime':
      if (typeof v === 'string' && DATETIME_FAST.test(v)) return v;
      break;
    default:
      break;
  }
  const c = coerceValue(type, v);
  if (c === null || c === INVALID) return c;
  switch (type) {
    case 'boolean':
      return c ? 1 : 0;
    case 'integer':
      return typeof c === 'string' ? BigInt(c) : typeof c === 'number' ? c : INVALID;
    case 'binary':
      return Buffer.from(c as string, 'base64');
    default:
      return typeof c === 'boolean' ? (c ? 1 : 0) : c;
  }
}
