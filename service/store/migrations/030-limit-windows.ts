import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/**
 * What lets several Service replicas on one PostgreSQL count one budget (service/store/limit-windows.ts;
 * docs/decisions.md, "Rate limits and the login throttle count in the database on PostgreSQL"):
 *
 * - `limit_windows`: one fixed window per key — an Organization's API calls in the current minute,
 *   UTC day or polling minute (`rate:…`), failed logins of a login–address pair or of an address
 *   (`login-pair:…`, `login-addr:…`, hashed) — with its count and the end of the window in ms since
 *   the epoch. A key has one row, started again in place when its window has ended; rows whose
 *   window has ended are deleted now and then (`limit_windows_end`).
 *
 * UNLOGGED on PostgreSQL: a counted call writes no WAL, so its commit waits for no disk flush
 * (1.1–1.8 ms → 0.28–0.45 ms a call on the reference machine: docs/benchmarks.md). The price is
 * nothing anyone needs: after a crash of the database server the table starts empty (every window
 * starts again), and a standby does not have it (after a failover, the same).
 *
 * The table exists on SQLite too (the schema is one), where one process counts in memory and it
 * stays empty.
 */
export function limitWindows(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('limit_windows')
        .$call((t) => (dialect === 'postgres' ? t.modifyFront(sql`unlogged`) : t))
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('count', 'integer', (c) => c.notNull())
        .addColumn('window_end_ms', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('limit_windows_end').on('limit_windows').column('window_end_ms').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('limit_windows').execute();
    },
  };
}
