import { coerceValue, INVALID, integerValue, type PropertyType, type Value } from '../../src/connectors/sdk.js';

/**
 * MariaDB / MySQL types ↔ the value model (docs/connectors.md "mariadb").
 *
 * Reading: the driver runs with dateStrings, bigNumberStrings and decimals as strings, so every
 * value arrives as the server's text, a number (int, float) or a Buffer (binary). Integers become
 * numbers only when exact; DECIMAL stays a string; `tinyint(1)` and `bit(1)` are booleans (what
 * BOOLEAN is in these servers); DATETIME and TIMESTAMP become ISO-8601 UTC instants with `Z`: each
 * session runs with time_zone '+00:00', and the Connector writes every datetime as UTC wall time,
 * so a DATETIME it wrote reads back as the instant it was given; binary becomes base64; a zero
 * date is null.
 *
 * Writing: each value is checked against its column's property type first (coerceValue), then
 * turned into SQL literal text or a LOAD DATA field: datetimes with a zone go to UTC, booleans to
 * 1/0, binary to hex.
 */

export interface TypeOf {
  type: PropertyType;
  size: number;
  scale?: number;
}

const INTEGERS = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'bigint', 'year']);
const STRINGS = new Set([
  'char',
  'varchar',
  'tinytext',
  'text',
  'mediumtext',
  'longtext',
  'enum',
  'set',
  'inet4',
  'inet6',
]);
const BINARIES = new Set(['binary', 'varbinary', 'tinyblob', 'blob', 'mediumblob', 'longblob', 'geometry', 'point']);

/**
 * The property type of a column from information_schema: `dataType` (DATA_TYPE, lower case) and
 * `columnType` (COLUMN_TYPE, with its length and attributes). `json` is true for a LONGTEXT column
 * that MariaDB's JSON alias made (a `json_valid` check).
 */
export function propertyTypeOf(
  dataType: string,
  columnType: string,
  charLength: number | null,
  precision: number | null,
  scale: number | null,
  json: boolean,
): TypeOf {
  const t = dataType.toLowerCase();
  const ct = columnType.toLowerCase();
  if ((t === 'tinyint' && /^tinyint\(1\)/.test(ct)) || (t === 'bit' && /^bit\(1\)/.test(ct)) || t === 'boolean')
    return { type: 'boolean', size: 1 };
  if (INTEGERS.has(t)) return { type: 'integer', size: precision ?? 0 };
  if (t === 'bit') return { type: 'binary', size: 0 };
  if (t === 'decimal' || t === 'numeric')
    return { type: 'decimal', size: precision ?? 0, ...(scale !== null ? { scale } : {}) };
  if (t === 'float' || t === 'double' || t === 'real') return { type: 'double', size: 0 };
  if (t === 'date') return { type: 'date', size: 0 };
  if (t === 'datetime' || t === 'timestamp') return { type: 'datetime', size: 0 };
  if (t === 'time') return { type: 'time', size: 0 };
  if (t === 'json' || json) return { type: 'json', size: 0 };
  if (t === 'uuid') return { type: 'guid', size: 36 };
  if (BINARIES.has(t)) return { type: 'binary', size: charLength ?? 0 };
  if (STRINGS.has(t)) return { type: 'string', size: charLength ?? 0 };
  return { type: 'string', size: charLength ?? 0 };
}

/** How a column's values are read: a converter from the driver's value, by the column's kind. */
export type ReadKind = 'plain' | 'int' | 'bool' | 'datetime' | 'timestamp' | 'date' | 'binary';

export function readKindOf(dataType: string, type: PropertyType): ReadKind {
  const t = dataType.toLowerCase();
  if (type === 'boolean') return 'bool';
  if (type === 'integer') return 'int';
  if (t === 'timestamp') return 'timestamp';
  if (t === 'datetime') return 'datetime';
  if (t === 'date') return 'date';
  if (type === 'binary') return 'binary';
  return 'plain';
}

const ZERO_DATE = /^0000-00-00/;

/** The text of a driver value (a string, a number or bytes). */
const textOf = (v: unknown): string =>
  typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString('utf8') : typeof v === 'number' ? String(v) : '';

/** The value-model form of a value the driver gave for a column of this kind. */
export function readValue(kind: ReadKind, v: unknown): Value {
  if (v === null || v === undefined) return null;
  switch (kind) {
    case 'plain':
      return Buffer.isBuffer(v) ? v.toString('utf8') : (v as Value);
    case 'int':
      return typeof v === 'number' ? v : integerValue(textOf(v));
    case 'bool':
      return Buffer.isBuffer(v) ? v.some((b) => b !== 0) : Number(v) !== 0;
    case 'datetime':
    case 'timestamp': {
      const s = textOf(v);
      return ZERO_DATE.test(s) ? null : `${s.slice(0, 10)}T${s.slice(11)}Z`;
    }
    case 'date': {
      const s = textOf(v);
      return ZERO_DATE.test(s) ? null : s;
    }
    case 'binary':
      return Buffer.isBuffer(v) ? v.toString('base64') : Buffer.from(textOf(v), 'utf8').toString('base64');
  }
}

/** A driver value whose column type is unknown (native queries): text, numbers, base64 for bytes. */
export function readUntyped(v: unknown): Value {
  if (v === null || v === undefined) return null;
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (typeof v === 'bigint') return integerValue(v.toString());
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return v;
  return JSON.stringify(v) ?? null;
}

export const INT_TEXT = /^-?\d{1,18}$/;
export const DECIMAL_TEXT = /^-?\d+(?:\.\d+)?$/;
export const DATE_TEXT = /^\d{4}-\d{2}-\d{2}$/;
/** A UTC datetime as the value model writes it: straight into server text. */
export const UTC_TEXT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z$/;

/**
 * A value made ready for the server: the canonical text of its type (null stays null), or INVALID.
 * Datetimes with a zone are turned into UTC wall time (`YYYY-MM-DD HH:MM:SS.ffffff`), which both
 * DATETIME and (in a UTC session) TIMESTAMP take as that instant. The common forms of each type
 * (a safe integer, a finite number, plain decimal text, an ISO date, a UTC datetime) take a short
 * path; everything else goes through the value model's coerceValue. A well-formed date that does
 * not exist (February 30) is left to the server, which refuses it in strict mode.
 */
export function writeText(type: PropertyType, v: unknown): string | null | typeof INVALID {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'string':
      if (typeof v === 'string') return v;
      break;
    case 'integer':
      if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
      if (typeof v === 'string' && INT_TEXT.test(v)) return v;
      break;
    case 'double':
      if (typeof v === 'number') return Number.isFinite(v) ? String(v) : INVALID;
      break;
    case 'decimal':
      if (typeof v === 'string' && DECIMAL_TEXT.test(v)) return v;
      if (typeof v === 'number' && Number.isFinite(v)) return String(v);
      break;
    case 'boolean':
      if (typeof v === 'boolean') return v ? '1' : '0';
      break;
    case 'date':
      if (typeof v === 'string' && DATE_TEXT.test(v)) return v;
      break;
    case 'datetime':
      if (typeof v === 'string' && UTC_TEXT.test(v)) return `${v.slice(0, 10)} ${v.slice(11, -1)}`;
      break;
    default:
      break;
  }
  const c = coerceValue(type, v);
  if (c === null || c === INVALID) return c;
  switch (type) {
    case 'boolean':
      return c === true ? '1' : '0';
    case 'double':
      return Number.isFinite(c) ? String(c) : INVALID;
    case 'datetime':
      return serverDatetime(c as string);
    default:
      return typeof c === 'string' ? c : String(c);
  }
}

/** `2024-01-02T03:04:05.123Z` → `2024-01-02 03:04:05.123` (a zoned value was already made UTC). */
export function serverDatetime(iso: string): string {
  const s = iso.endsWith('Z') || iso.endsWith('z') ? iso.slice(0, -1) : iso;
  const frac = /\.(\d+)$/.exec(s);
  // The server keeps microseconds: nanoseconds beyond them are cut, not rounded up past a second.
  const body = frac?.[1] && frac[1].length > 6 ? s.slice(0, s.length - frac[1].length + 6) : s;
  return `${body.slice(0, 10)} ${body.slice(11)}`;
}

/** The column type ensureEntity gives a field of a source entity. */
export function columnTypeOf(type: PropertyType, size: number, scale: number | undefined, key: boolean): string {
  switch (type) {
    case 'string':
      // A key must be indexable (≤ 3072 bytes: 768 utf8mb4 characters); other text is TEXT or
      // LONGTEXT, since VARCHARs count against a row's 65,535 bytes.
      if (key) return `varchar(${size > 0 && size <= 768 ? size : 255})`;
      if (size > 0 && size <= 255) return `varchar(${size})`;
      return size > 0 && size <= 16_383 ? 'text' : 'longtext';
    case 'integer':
      return 'bigint';
    case 'decimal': {
      if (size <= 0 || size > 65) return 'decimal(65,30)';
      const s = Math.min(scale ?? 0, 30, size);
      return `decimal(${size},${s})`;
    }
    case 'double':
      return 'double';
    case 'boolean':
      return 'tinyint(1)';
    case 'date':
      return 'date';
    case 'datetime':
      return 'datetime(6)';
    case 'time':
      return 'time(6)';
    case 'binary':
      return key ? 'varbinary(255)' : 'longblob';
    case 'json':
      return 'longtext';
    case 'guid':
      return 'char(36)';
  }
}
