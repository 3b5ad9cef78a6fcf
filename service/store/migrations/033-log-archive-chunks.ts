import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/**
 * What lets every Service replica on one PostgreSQL serve an Agent log archive another received
 * (service/store/log-archive-chunks.ts; docs/decisions.md, "Log archives in the database on
 * PostgreSQL"):
 *
 * - `log_archive_chunks`: the archive of a log request in pieces of 1 MiB, numbered from 0 in
 *   order (`seq`), from the Agent's upload until the one download or until housekeeping removes the
 *   request. A zip does not compress further, so PostgreSQL is told not to try (`STORAGE
 *   EXTERNAL`: out of line, uncompressed).
 *
 * The table exists on SQLite too (the schema is one), where archives are files in the data folder
 * and it stays empty.
 */
export function logArchiveChunks(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('log_archive_chunks')
        .addColumn('log_id', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('data', dialect === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
        .addPrimaryKeyConstraint('log_archive_chunks_pk', ['log_id', 'seq'])
        .execute();
      if (dialect === 'postgres')
        await sql`ALTER TABLE log_archive_chunks ALTER COLUMN data SET STORAGE EXTERNAL`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('log_archive_chunks').execute();
    },
  };
}
