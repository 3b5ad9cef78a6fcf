import { failed, INVALID, type ConnectorRecord, type WriteResult } from '../../src/connectors/sdk.js';
import type { MariaColumn } from './catalogue.js';
import { writeText } from './types.js';

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

/**
 * A record's line of a LOAD DATA file (tab-separated, backslash escapes, `\N` for null; binary as
 * hex, which the statement unhexes), or the failed result of its first bad value.
 */
export function tsvLine(rec: ConnectorRecord, cols: readonly MariaColumn[]): string | WriteResult {
  let out = '';
  for (let i = 0; i < cols.length; i++) {
    const c = cols[i] as MariaColumn;
    const t = writeText(c.type, rec[c.fullName]);
    if (t === INVALID) return invalid(c, rec[c.fullName]);
    if (i) out += '\t';
    if (t === null) out += '\\N';
    else if (c.type === 'binary') out += Buffer.from(t, 'base64').toString('hex');
    else out += TSV_NEEDS.test(t) ? t.replace(TSV_ALL, (ch) => TSV_ESCAPES[ch] as string) : t;
  }
  return `${out}\n`;
}
