import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';

/** A database handle or an open transaction: repositories accept either. */
export type Db = Kysely<Database> | Transaction<Database>;

/** `lower(column) LIKE '%text%'` with the text's wildcards escaped, the same on SQLite and PostgreSQL. */
export function containsInsensitive(column: string, text: string) {
  const pattern = `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return sql<boolean>`lower(${sql.ref(column)}) LIKE ${pattern} ESCAPE '\\'`;
}
