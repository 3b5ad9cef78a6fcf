import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/**
 * Pending Map exports (SPEC.md "Maps": POST …/maps/export, then GET …/maps/export/{exportId}
 * once). The file is built when the export is asked for and kept here, so that any Service
 * instance on the same store answers the download; the download deletes the row, and a row past
 * `expires_at` is never served and is removed by the next export.
 */
export function mapExports(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      let t = db.schema.createTable('map_exports');
      t =
        dialect === 'postgres'
          ? t.addColumn('id', 'serial', (c) => c.primaryKey())
          : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await t
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('file_name', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('created_by', 'text')
        .execute();
      await db.schema.createIndex('map_exports_expiry').on('map_exports').column('expires_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('map_exports').execute();
    },
  };
}
