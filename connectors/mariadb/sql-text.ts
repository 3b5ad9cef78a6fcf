import { failed, INVALID, type ConnectorRecord, type WriteResult } from '../../src/connectors/sdk.js';
import type { MariaColumn } from './catalogue.js';
import { DATE_TEXT, DECIMAL_TEXT, UTC_TEXT, writeText } from './types.js';

/**
 * Records as SQL text: a row of literals for INSERT statements, a line of a LOAD DATA file. Values
 * are checked against their columns' types first (types.ts writeText); a value that is not one
 * fails its record with InvalidValue before anything reaches the server.
 */

// eslint-disable-next-line no-control-regex -- the server's string escapes include NUL and Ctrl-Z
const NEEDS_ESCAPE = /[\0\b\t\n\r\x1a"'\\]/;
const ESCAPES: Record<string, string> = {
  '\0': '\\0',
  '\b': '\\b',
  '\t': '\\t',
  '\n': '\\n',
  '\r': '\\r',
  '\x1a': '\\Z',
  '"': '\\"',
  "'": "\\'",
  '\\': '\\\\',
};
// eslint-disable-next-line no-control-regex -- as NEEDS_ESCAPE
const ESCAPE_ALL = /[\0\b\t\n\r\x1a"'\\]/g;

/** A quoted string literal (the session runs with backslash escapes: pool.ts). */
export function quoteText(s: string): string {
  return NEEDS_ESCAPE.test(s) ? `'${s.replace(ESCAPE_ALL, (c) => ESCAPES[c] as string)}'` : `'${s}'`;
}

/** The literal of a checked value of a column. */
function literal(c: MariaColumn, t: string): string {
  switch (c.type) {
    case 'integer':
    case 'double':
    case 'boolean':
      return t;
    case 'binary':
      return `X'${Buffer.from(t, 'base64').toString('hex')}'`;
    default:
      return quoteText(t);
  }
}

/** `(v1, v2, …)` of a record's values for `cols`, or the failed result of its first bad value. */
export function rowLiteral(rec: ConnectorRecord, cols: readonly MariaColumn[]): string | WriteResult {
  let out = '(';
  for (let i = 0; i < cols.length; i++) {
    const c = cols[i] as MariaColumn;
    const t = writeText(c.type, rec[c.fullName]);
    if (t === INVALID) return invalid(c, rec[c.fullName]);
    out += (i ? ',' : '') + (t === null ? 'NULL' : literal(c, t));
  }
  return `${out})`;
}

/** `col = literal` of a value (an assignment or a key condition), or the failed result. */
export function assignment(c: MariaColumn, v: unknown): string | WriteResult {
  const t = writeText(c.type, v);
  if (t === INVALID) return invalid(c, v);
  return t === null ? 'NULL' : literal(c, t);
}

export function invalid(c: MariaColumn, v: unknown): WriteResult {
  const shown = typeof v === 'string' && v.length > 40 ? `${v.slice(0, 40)}…` : JSON.stringify(v);
  return failed('InvalidValue', `The value ${shown} is not a ${c.type} for the field ${c.fullName}.`, {
    field: c.fullName,
  });
}

// eslint-disable-next-line no-control-regex -- LOAD DATA's escapes include NUL and Ctrl-Z
const TSV_NEEDS = /[\0\t\n\r\\\x1a]/;
// eslint-disable-next-line no-control-regex -- as TSV_NEEDS
const TSV_ALL = /[\0\t\n\r\\\x1a]/g;
const TSV_ESCAPES: Record<string, string> = {
  '\0': '\\0',
  '\t': '\\t',
  '\n': '\\n',
  '\r': '\\r',
  '\\': '\\\\',
  '\x1a': '\\Z',
};

/** One value's LOAD DATA field (escaped, `\N` for null), or INVALID. */
function tsvField(c: MariaColumn, v: unknown): string | typeof INVALID {
  const t = writeText(c.type, v);
  if (t === INVALID) return t;
  if (t === null) return '\\N';
  if (c.type === 'binary') return Buffer.from(t, 'base64').toString('hex');
  return TSV_NEEDS.test(t) ? t.replace(TSV_ALL, (ch) => TSV_ESCAPES[ch] as string) : t;
}

/**
 * The common form of a value of each type, which goes into a LOAD DATA field as it is: a test on
 * `v` in generated code (tsvEncoder). Anything else goes through tsvField.
 */
const FAST: Partial<Record<MariaColumn['type'], string>> = {
  string: "typeof v === 'string' && !NEEDS.test(v)",
  integer: "typeof v === 'number' && Number.isSafeInteger(v)",
  double: "typeof v === 'number' && Number.isFinite(v)",
  decimal: "typeof v === 'string' && DECIMAL.test(v)",
  date: "typeof v === 'string' && DATE.test(v)",
};

/** Encodes a record as one LOAD DATA line; answers the line, or the index of its first bad field. */
export type TsvEncoder = (rec: ConnectorRecord) => string | number;

/**
 * A LOAD DATA line encoder for records of these columns, compiled once per field list: the fields
 * read by literal names, each value's common form appended as it is and the rest through
 * tsvField. Several times faster per record than a loop over the columns (a bulk Create's
 * per-record cost on the Agent's thread). Names enter the code only as JSON string literals.
 */
export function tsvEncoder(cols: readonly MariaColumn[]): TsvEncoder {
  const parts = cols.map((c, j) => {
    const read = `v = r[${JSON.stringify(c.fullName)}];`;
    const sep = j ? "s += '\\t';" : '';
    const fast =
      c.type === 'boolean'
        ? "if (v === true) s += '1'; else if (v === false) s += '0'; else"
        : c.type === 'datetime'
          ? "if (typeof v === 'string' && UTC.test(v)) s += v.slice(0, 10) + ' ' + v.slice(11, -1); else"
          : FAST[c.type]
            ? `if (${FAST[c.type] as string}) s += v; else`
            : '';
    return `${read} ${sep} if (v === null || v === undefined) s += '\\N'; else ${fast} { t = field(cols[${j}], v); if (t === INVALID) return ${j}; s += t; }`;
  });
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- field names enter only as JSON literals
  const make = new Function(
    'cols',
    'field',
    'INVALID',
    'NEEDS',
    'DECIMAL',
    'DATE',
    'UTC',
    `return function (r) { let v, t, s = ''; ${parts.join('\n')} return s + '\\n'; };`,
  ) as (...args: unknown[]) => TsvEncoder;
  return make(cols, tsvField, INVALID, TSV_NEEDS, DECIMAL_TEXT, DATE_TEXT, UTC_TEXT);
}
