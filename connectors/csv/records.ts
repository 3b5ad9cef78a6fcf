import { coerceValue, INVALID, type ConnectorLog, type ConnectorRecord, type PropertyType, type Value } from '../../src/connectors/sdk.js';
import type { CsvField, CsvRow } from './parser.js';
import type { CsvColumn, CsvEntity } from './schema.js';

type Convert = (raw: string) => Value;

const INT_FAST = /^-?\d{1,15}$/;
const NUM_FAST = /^-?\d+(?:\.\d+)?$/;
const DATE_FAST = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])$/;
/** Already canonical: `T`, seconds, UTC `Z` or no zone. */
const DATETIME_FAST = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T[0-2]\d:[0-5]\d:[0-5]\d(?:\.\d{1,9})?Z?$/;

/**
 * Text of a cell → value of the field's type. The common cases (canonical integers and decimals,
 * text) take a fast path; the rest goes through the SDK's coercion. A cell that does not fit its
 * type is passed on as its text (and logged once per field): a read never fails over one cell, the
 * writer that receives it reports it per record.
 */
function converter(col: CsvColumn, log: ConnectorLog, entity: string): Convert {
  const warned = new Set<string>();
  const slow = (raw: string): Value => {
    const v = coerceValue(col.type, raw);
    if (v !== INVALID) return v;
    if (!warned.has(col.fullName)) {
      warned.add(col.fullName);
      log.warn({ entity, field: col.fullName, type: col.type }, 'csv cell does not fit its field type; passed as text');
    }
    return raw;
  };
  switch (col.type) {
    case 'string':
      return (raw) => raw;
    case 'integer':
      return (raw) => (INT_FAST.test(raw) ? +raw : slow(raw));
    case 'double':
      return (raw) => (NUM_FAST.test(raw) ? +raw : slow(raw));
    case 'decimal':
      return (raw) => (NUM_FAST.test(raw) ? raw : slow(raw));
    case 'boolean':
      return (raw) => (raw === 'true' ? true : raw === 'false' ? false : slow(raw));
    case 'date':
      return (raw) => (DATE_FAST.test(raw) ? raw : slow(raw));
    case 'datetime':
      return (raw) => (DATETIME_FAST.test(raw) ? raw : slow(raw));
    default:
      return slow;
  }
}

/** Builds records (keyed by fullName, typed) from parsed rows of an entity. */
export function recordBuilder(entity: CsvEntity, log: ConnectorLog): (row: CsvRow) => ConnectorRecord {
  const cols = entity.columns;
  const n = cols.length;
  const names = cols.map((c) => c.fullName);
  const convs = cols.map((c) => converter(c, log, entity.fullName));
  const isString = cols.map((c) => c.type === 'string');
  return (row) => {
    const rec: ConnectorRecord = {};
    for (let i = 0; i < n; i++) {
      const raw: CsvField | undefined = row[i];
      rec[names[i] as string] = raw === null || raw === undefined ? null : isString[i] ? raw : raw === '' ? null : (convs[i] as Convert)(raw);
    }
    return rec;
  };
}

/** Canonical text of a typed value for key matching: equal values of a type give equal keys. */
export function keyPart(type: PropertyType, v: unknown): string {
  const c = coerceValue(type, v);
  if (c === null) return '\u0000';
  if (c === INVALID) return `!${String(v)}`;
  return `${typeof c}:${String(c)}`;
}
