import {
  CELL_FALSE,
  CELL_NULL,
  CELL_NUMBER,
  CELL_TEXT,
  CELL_TRUE,
  CELL_VALUE,
  coerceValue,
  INVALID,
  recordMaker,
  type ConnectorLog,
  type ConnectorRecord,
  type PackedBatch,
  type PropertyType,
  type Value,
} from '../../src/connectors/sdk.js';
import { cellReaders } from './cells.js';
import type { CsvField, CsvRow, CsvSink } from './parser.js';
import { CELL_RAW, TAG, type ScanBatch, type ScanColumn, type ScanPacked } from './scanner.js';
import type { CsvColumn, CsvEntity } from './entity.js';

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
  const make = recordMaker(names);
  const vals = new Array<Value>(n);
  return (row) => {
    for (let i = 0; i < n; i++) {
      const raw: CsvField | undefined = row[i];
      vals[i] =
        raw === null || raw === undefined ? null : isString[i] ? raw : raw === '' ? null : (convs[i] as Convert)(raw);
    }
    return make(vals);
  };
}

const enum Kind {
  Text,
  Integer,
  Double,
  Boolean,
  Decimal,
  Other,
}

const KIND_OF: Partial<Record<PropertyType, Kind>> = {
  string: Kind.Text,
  integer: Kind.Integer,
  double: Kind.Double,
  boolean: Kind.Boolean,
  decimal: Kind.Decimal,
};
const TRUE = 'true';
const FALSE = 'false';
const { plainNumber, isPlainDecimal, equalsAt } = cellReaders();

/**
 * The query's parser sink: records straight from the text. A line without quotes is cut field by
 * field; numbers, booleans and plain decimals are read from its characters (no substring, no
 * regular expression), text is one substring each; any other form goes through the field's
 * converter like the cells of quoted lines (which come as rows, through {@link recordBuilder}).
 * The first record is skipped when the file has a header.
 */
export function recordSink(
  entity: CsvEntity,
  log: ConnectorLog,
  delimiter: string,
  hasHeader: boolean,
): CsvSink<ConnectorRecord> {
  const cols = entity.columns;
  const n = cols.length;
  const names = cols.map((c) => c.fullName);
  const convs = cols.map((c) => converter(c, log, entity.fullName));
  const kinds = cols.map((c) => KIND_OF[c.type] ?? Kind.Other);
  const build = recordBuilder(entity, log);
  // Records are made as recordBuilder's are: one object literal with every field (recordMaker).
  const make = recordMaker(names);
  const vals = new Array<Value>(n).fill(null);
  let header = hasHeader;
  return {
    line(buf, start, end, out) {
      if (header) {
        header = false;
        return;
      }
      let pos = start;
      for (let i = 0; i < n; i++) {
        // A line with fewer fields: the missing ones are null.
        if (pos > end) {
          vals.fill(null, i);
          break;
        }
        // The native search beats a character loop several times over.
        let fe = buf.indexOf(delimiter, pos);
        if (fe < 0 || fe > end) fe = end;
        let v: Value;
        if (fe === pos) v = null;
        else {
          switch (kinds[i]) {
            case Kind.Text:
              v = buf.slice(pos, fe);
              break;
            case Kind.Integer:
            case Kind.Double: {
              const x = plainNumber(buf, pos, fe, kinds[i] === Kind.Double);
              v = Number.isNaN(x) ? (convs[i] as Convert)(buf.slice(pos, fe)) : x;
              break;
            }
            case Kind.Boolean:
              v = equalsAt(buf, pos, fe, TRUE)
                ? true
                : equalsAt(buf, pos, fe, FALSE)
                  ? false
                  : (convs[i] as Convert)(buf.slice(pos, fe));
              break;
            case Kind.Decimal:
              v = isPlainDecimal(buf, pos, fe) ? buf.slice(pos, fe) : (convs[i] as Convert)(buf.slice(pos, fe));
              break;
            default:
              v = (convs[i] as Convert)(buf.slice(pos, fe));
          }
        }
        vals[i] = v;
        pos = fe + 1;
      }
      out.push(make(vals));
    },
    row(fields, out) {
      if (header) {
        header = false;
        return;
      }
      out.push(build(fields));
    },
  };
}

/**
 * How the scan thread types each column's cells (scanner.ts): the fast forms of the query's sink,
 * plus canonical dates and datetimes, which their converters pass on unchanged.
 */
export function scanColumns(entity: CsvEntity): ScanColumn[] {
  return entity.columns.map((c): ScanColumn => {
    switch (c.type) {
      case 'string':
        return { kind: 'text' };
      case 'integer':
      case 'double':
      case 'boolean':
      case 'decimal':
        return { kind: c.type };
      case 'date':
        return { kind: 'pattern', pattern: DATE_FAST.source };
      case 'datetime':
        return { kind: 'pattern', pattern: DATETIME_FAST.source };
      default:
        return { kind: 'raw' };
    }
  });
}

/**
 * Records from the scan thread's packed batches: settled cells as they come, `raw` cells through
 * the field's converter (as the query's sink converts them), each record one object literal with
 * every field (recordMaker).
 */
export function packedRecords(entity: CsvEntity, log: ConnectorLog): (batch: ScanBatch) => ConnectorRecord[] {
  const cols = entity.columns;
  const n = cols.length;
  const convs = cols.map((c) => converter(c, log, entity.fullName));
  const make = recordMaker(cols.map((c) => c.fullName));
  const vals = new Array<Value>(n).fill(null);
  return ({ rows, tags, nums, text, starts, ends }) => {
    const out = new Array<ConnectorRecord>(rows);
    let v = 0;
    let k = 0;
    let e = 0;
    for (let r = 0; r < rows; r++) {
      for (let i = 0; i < n; i++, v++) {
        switch (tags[v]) {
          case TAG.number:
            vals[i] = nums[k++] as number;
            break;
          case TAG.text:
            vals[i] = text.slice(starts[e], ends[e]);
            e++;
            break;
          case TAG.raw:
            vals[i] = (convs[i] as Convert)(text.slice(starts[e], ends[e]));
            e++;
            break;
          case TAG.true:
            vals[i] = true;
            break;
          case TAG.false:
            vals[i] = false;
            break;
          default:
            vals[i] = null;
        }
      }
      out[r] = make(vals);
    }
    return out;
  };
}

/**
 * Packed batches from the scan thread's packed mode (scanner.ts): the thread's arrays as they
 * came, with each {@link CELL_RAW} cell settled by its field's converter (as {@link packedRecords}
 * settles `raw` cells): null, a number, true or false, its own text when the converter passes it
 * on unchanged (the bytes are already there), else the value itself (CELL_VALUE). `columns` are
 * the column indices of the batch's `fields`.
 */
export function settlePacked(
  entity: CsvEntity,
  log: ConnectorLog,
  columns: readonly number[],
  fields: readonly string[],
): (batch: ScanPacked) => PackedBatch {
  const all = entity.columns.map((c) => converter(c, log, entity.fullName));
  const convs = columns.map((i) => all[i] as Convert);
  const names = [...fields];
  const m = names.length;
  return ({ rows, tags: t, nums: nu, ends: en, text: bytes, raws }) => {
    const cells = rows * m;
    const tags = t.subarray(0, cells);
    const nums = nu.subarray(0, cells);
    const ends = en.subarray(0, cells);
    // The thread's bytes, as a Buffer over the same memory.
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const values: (Value | undefined)[] = raws > 0 ? new Array<Value | undefined>(cells) : [];
    for (let v = raws > 0 ? tags.indexOf(CELL_RAW) : -1; v >= 0; v = tags.indexOf(CELL_RAW, v + 1)) {
      const raw = text.toString('utf8', nums[v], ends[v]);
      const x = (convs[v % m] as Convert)(raw);
      if (x === null) tags[v] = CELL_NULL;
      else if (typeof x === 'number') {
        tags[v] = CELL_NUMBER;
        nums[v] = x;
      } else if (typeof x === 'boolean') tags[v] = x ? CELL_TRUE : CELL_FALSE;
      else if (x === raw) tags[v] = CELL_TEXT;
      else {
        tags[v] = CELL_VALUE;
        values[v] = x;
      }
    }
    return { rows, fields: names, tags, nums, ends, text, values };
  };
}

/** Canonical text of a typed value for key matching: equal values of a type give equal keys. */
export function keyPart(type: PropertyType, v: unknown): string {
  const c = coerceValue(type, v);
  if (c === null) return '\u0000';
  if (c === INVALID) return `!${String(v)}`;
  return `${typeof c}:${String(c)}`;
}
