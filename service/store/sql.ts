import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';

/** A database handle or an open transaction: repositories accept either. */
export type Db = Kysely<Database> | Transaction<Database>;

/** PostgreSQL's clock in ms since the epoch: leases between replicas use it, never a replica's own clock. */
export const DB_NOW_MS = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/** `lower(column) LIKE '%text%'` with the text's wildcards escaped, the same on SQLite and PostgreSQL. */
export function containsInsensitive(column: string, text: string) {
  const pattern = `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return sql<boolean>`lower(${sql.ref(column)}) LIKE ${pattern} ESCAPE '\\'`;
}

/**
 * Whether a driver error is a unique-constraint violation, by its code: SQLSTATE 23505 on
 * PostgreSQL, SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY on SQLite. A lost race (two requests taking
 * the same name at once) is then a conflict, not a failure.
 */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
