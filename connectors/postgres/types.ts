import type { PropertyType, Value } from '../../src/connectors/sdk.js';

/**
 * PostgreSQL types ↔ the value model. Rows are parsed from PostgreSQL's text output by OID:
 * integers become numbers only when exact (int8 beyond 2^53 stays a string), numeric stays a
 * string, timestamps become ISO-8601 (the session runs with TimeZone=UTC, so timestamptz ends in
 * Z), bytea becomes base64, and everything else (json, arrays, enums, ranges …) keeps its text.
 */
const OID = {
  bool: 16,
  bytea: 17,
  int8: 20,
  int2: 21,
  int4: 23,
  oid: 26,
  float4: 700,
  float8: 701,
  timestamp: 1114,
  timestamptz: 1184,
} as const;

const identity = (s: string): string => s;
const int8 = (s: string): number | string => {
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : s;
};
const timestamp = (s: string): string => (s.length > 10 && s[10] === ' ' ? `${s.slice(0, 10)}T${s.slice(11)}` : s);
const timestamptz = (s: string): string => {
  const t = timestamp(s);
  return t.endsWith('+00') ? `${t.slice(0, -3)}Z` : t;
};
const bytea = (s: string): string => (s.startsWith('\\x') ? Buffer.from(s.slice(2), 'hex').toString('base64') : s);

/** The `types` option of pg's Pool: text parsers per OID. */
export const pgTypes = {
  getTypeParser(oid: number, format?: string): (s: string) => Value {
    if (format === 'binary') return identity;
    switch (oid) {
      case OID.bool:
        return (s) => s === 't';
      case OID.int2:
      case OID.int4:
      case OID.oid:
      case OID.float4:
      case OID.float8:
        return Number;
      case OID.int8:
        return int8;
      case OID.timestamp:
        return timestamp;
      case OID.timestamptz:
        return timestamptz;
      case OID.bytea:
        return bytea;
      default:
        return identity;
    }
  },
};

/** Property type, size and scale of a column from its type name (the base type of a domain) and typmod. */
export function propertyTypeOf(
  typname: string,
  typcategory: string,
  typmod: number,
): { type: PropertyType; size: number; scale?: number } {
  switch (typname) {
    case 'int2':
      return { type: 'integer', size: 2 };
    case 'int4':
      return { type: 'integer', size: 4 };
    case 'int8':
    case 'oid':
      return { type: 'integer', size: 8 };
    case 'numeric':
      return typmod >= 4
        ? { type: 'decimal', size: ((typmod - 4) >> 16) & 0xffff, scale: (typmod - 4) & 0xffff }
        : { type: 'decimal', size: 0 };
    case 'float4':
    case 'float8':
      return { type: 'double', size: 0 };
    case 'bool':
      return { type: 'boolean', size: 0 };
    case 'date':
      return { type: 'date', size: 0 };
    case 'timestamp':
    case 'timestamptz':
      return { type: 'datetime', size: 0 };
    case 'time':
    case 'timetz':
      return { type: 'time', size: 0 };
    case 'bytea':
      return { type: 'binary', size: 0 };
    case 'json':
    case 'jsonb':
      return { type: 'json', size: 0 };
    case 'uuid':
      return { type: 'guid', size: 0 };
    case 'varchar':
    case 'bpchar':
      return { type: 'string', size: typmod >= 4 ? typmod - 4 : 0 };
    default:
      void typcategory;
      return { type: 'string', size: 0 };
  }
}

/** The column type ensureEntity creates for a field. */
export function columnTypeOf(type: PropertyType, size: number, scale?: number): string {
  switch (type) {
    case 'string':
      return size > 0 && size <= 10485760 ? `varchar(${size})` : 'text';
    case 'integer':
      return size === 2 ? 'smallint' : size === 4 ? 'integer' : 'bigint';
    case 'decimal':
      return size > 0 && size <= 1000 ? `numeric(${size},${Math.min(scale ?? 0, size)})` : 'numeric';
    case 'double':
      return 'double precision';
    case 'boolean':
      return 'boolean';
    case 'date':
      return 'date';
    case 'datetime':
      return 'timestamptz';
    case 'time':
      return 'time';
    case 'binary':
      return 'bytea';
    case 'json':
      return 'jsonb';
    case 'guid':
      return 'uuid';
  }
}

/** A value as PostgreSQL input text (null stays null); bytea takes base64 in and sends hex. */
export type ToText = (v: Value | undefined) => string | null;

export function textConverter(type: PropertyType): ToText {
  if (type === 'binary') {
    return (v) =>
      v === null || v === undefined
        ? null
        : typeof v === 'string'
          ? `\\x${Buffer.from(v, 'base64').toString('hex')}`
          : String(v);
  }
  return (v) =>
    v === null || v === undefined
      ? null
      : typeof v === 'string'
        ? v
        : typeof v === 'boolean'
          ? v
            ? 't'
            : 'f'
          : String(v);
}
