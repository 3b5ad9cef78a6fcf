import { createHash } from 'node:crypto';

const NAME_HASH_LEN = 20;
const ARRAY_ESCAPE = /["\\]/;
const ARRAY_ESCAPES = /["\\]/g;

/** One element of a text[] literal: NULL, or the text in double quotes with `"` and `\` escaped. */
export function arrayElement(v: string | null): string {
  if (v === null) return 'NULL';
  return ARRAY_ESCAPE.test(v) ? `"${v.replace(ARRAY_ESCAPES, '\\$&')}"` : `"${v}"`;
}

/** A string as an SQL literal (standard_conforming_strings: only quotes are doubled). */
export const quoteLiteral = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** The name a statement is prepared under: one per text, so the server plans it once per connection. */
export const statementName = (prefix: string, sql: string): string =>
  `${prefix}${createHash('sha1').update(sql).digest('hex').slice(0, NAME_HASH_LEN)}`;
