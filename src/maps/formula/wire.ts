/**
 * What crosses the sandbox boundary, host side: records are reduced to the fields the formulas
 * read and packed by columns (one JSON array per field); the program's answer, one array per
 * formula, is parsed back into values and record errors with positions.
 */
import { ERROR_CODES, type ErrorCode } from '../../errors/codes.js';
import type { ErrorData } from '../../errors/ferry-error.js';
import type { FieldRef } from './ast.js';
import type { ErrorTuple } from './library/types.js';
import { describePosition, positionOf } from './positions.js';

/**
 * Batches cross the boundary as arrays of text chunks of at most this many UTF-16 code units
 * (1,000 bytes), copied with isolated-vm's `copy` option. A string handed across as such becomes,
 * from 1 KiB on, an external string that only a full garbage collection frees: in the Agent's
 * mostly idle heap that piled up ~25 MB of dead batches per million records. Copied small chunks
 * are ordinary young strings, collected at once: RSS stays flat (measured ~120 MiB over ten
 * million records, test/bench/formulas.bench.ts).
 */
export const WIRE_CHUNK = 500;

/** Splits text into {@link WIRE_CHUNK}-sized pieces. */
export function chunk(text: string): string[] {
  if (text.length <= WIRE_CHUNK) return [text];
  const parts = new Array<string>(Math.ceil(text.length / WIRE_CHUNK));
  for (let i = 0, k = 0; i < text.length; i += WIRE_CHUNK, k++) parts[k] = text.slice(i, i + WIRE_CHUNK);
  return parts;
}

/** A record as formulas see it: field values by Block name, then field name: `{"Block": {"Field": value}}`. */
export type FormulaRecord = Readonly<Record<string, unknown>>;

/** A formula's value as it leaves the sandbox: dates are ISO-8601 UTC text with milliseconds. */
export type FormulaValue = string | number | boolean | null;

/** One value as JSON can carry it into the sandbox. */
export type WireValue = string | number | boolean | null;

/**
 * A field value as the sandbox receives it: JSON primitives stay; a Date becomes ISO-8601 text; a
 * bigint a number when exact, else its decimal text; bytes become base64; other objects and arrays
 * their JSON text; undefined, NaN, Infinity and functions null.
 */
export function toWire(v: unknown): WireValue {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? v : null;
    case 'bigint': {
      const n = Number(v);
      return Number.isSafeInteger(n) ? n : v.toString();
    }
    case 'object':
      if (v === null) return null;
      if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
      if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
      try {
        return JSON.stringify(v) ?? null;
      } catch {
        return null;
      }
    default:
      return null;
  }
}

const hasOwn = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);

/** One field of a record as the sandbox receives it (null when absent). Only own properties are read, so `__proto__` or `constructor` as names read nothing. */
export function readField(record: FormulaRecord | undefined, block: string, field: string): WireValue {
  const b = record !== null && typeof record === 'object' && hasOwn(record, block) ? record[block] : undefined;
  return b !== null && typeof b === 'object' && hasOwn(b, field) ? toWire((b as Record<string, unknown>)[field]) : null;
}

/** A batch as it crosses into the sandbox: `cols[k][i]` is field k of record i. */
export interface Columns {
  readonly n: number;
  readonly cols: WireValue[][];
}

/** The fields of the records by columns, in `fields` order. Only own properties are read (see {@link readField}). */
export function packColumns(records: readonly FormulaRecord[], fields: readonly FieldRef[]): Columns {
  const n = records.length;
  const cols = fields.map(({ block, field }) => {
    const col = new Array<WireValue>(n);
    for (let i = 0; i < n; i++) col[i] = readField(records[i], block, field);
    return col;
  });
  return { n, cols };
}

/** Records [start, end) of a batch. */
export function sliceColumns(c: Columns, start: number, end: number): Columns {
  if (start === 0 && end === c.n) return c;
  return { n: Math.max(0, Math.min(end, c.n) - start), cols: c.cols.map((col) => col.slice(start, end)) };
}

/** The JSON the program reads: `[n, column 0, column 1, …]`, in chunks. */
export function wireColumns(c: Columns): string[] {
  return chunk(JSON.stringify([c.n, ...c.cols]));
}

/** What the host knows about one formula, to turn the sandbox's error tuples into record errors. */
export interface FormulaInfo {
  readonly key: string;
  readonly formula: string;
  readonly blockId?: string;
  readonly spans: ReadonlyArray<{ readonly start: number; readonly end: number }>;
}

/** Details the sandbox may report, copied one by one: nothing else crosses. */
const DETAIL_KEYS = ['value', 'format', 'table', 'tableId', 'value1', 'value2'] as const;

const isErrorCode = (code: string): code is ErrorCode => hasOwn(ERROR_CODES, code);

/** A record error as the Map runtime receives it. */
export interface FormulaRecordError {
  /** Index of the record in the batch. */
  readonly record: number;
  /** Index of the formula in the set. */
  readonly formula: number;
  readonly key: string;
  readonly error: ErrorData;
}

/** Turns one error tuple of the sandbox into a record error with the formula position. */
export function recordError(info: FormulaInfo, tuple: ErrorTuple, offsetRecord = 0): FormulaRecordError {
  const [record, formula, rawCode, rawMessage, rawDetails, spanIndex, fn] = tuple;
  const code: ErrorCode = isErrorCode(rawCode) ? rawCode : 'FML_INTERNAL';
  const span = info.spans[spanIndex] ?? info.spans[0] ?? { start: 0, end: info.formula.length };
  const position = positionOf(info.formula, span);
  const named = fn !== null && /^[A-Z]/.test(fn) && !rawMessage.startsWith(`${fn}:`);
  const message = `${named ? `${fn}: ` : ''}${rawMessage} (${describePosition(position)})`;
  const details: Record<string, unknown> = { position, formula: info.key };
  if (info.blockId !== undefined) details['blockId'] = info.blockId;
  if (fn !== null && /^[A-Z]/.test(fn)) details['function'] = fn;
  if (rawDetails !== null && typeof rawDetails === 'object') {
    for (const key of DETAIL_KEYS) if (hasOwn(rawDetails, key)) details[key] = rawDetails[key];
  }
  return {
    record: record + offsetRecord,
    formula,
    key: info.key,
    error: { code, kind: ERROR_CODES[code].kind, message, details },
  };
}

/** A record error for a failure of the whole run, pinned to one record and formula. */
export function fatalError(
  info: FormulaInfo,
  record: number,
  formula: number,
  code: ErrorCode,
  message: string,
): FormulaRecordError {
  const position = positionOf(info.formula, info.spans[0] ?? { start: 0, end: info.formula.length });
  const details: Record<string, unknown> = { position, formula: info.key };
  if (info.blockId !== undefined) details['blockId'] = info.blockId;
  return {
    record,
    formula,
    key: info.key,
    error: { code, kind: ERROR_CODES[code].kind, message: `${message} (${describePosition(position)})`, details },
  };
}
