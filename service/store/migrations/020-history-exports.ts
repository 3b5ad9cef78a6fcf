import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/**
 * Pending exports of an execution's record errors (SPEC.md "History": GET H/{id}/export, then
 * GET H/{id}/export/{exportId} once). Only the request is kept: the CSV is read from the store as
 * it is downloaded, so an export of a million errors costs one row here. The download deletes the
 * row (any Service instance on the same store answers it); a row past `expires_at` is never
 * served and is removed by the History retention job. Rows go with their execution (cascade), so
 * an export of an execution that retention removed is gone too.
 *
 * Also the indexes the History retention job (service/jobs/history-retention.ts) reads by:
 * executions by start across Solutions, cloud failed records by when they came (for those whose
 * execution is gone, or never came), skipped due times by due time.
 */
export function historyExports(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      let t = db.schema.createTable('history_exports');
      t =
        dialect === 'postgres'
          ? t.addColumn('id', 'serial', (c) => c.primaryKey())
          : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await t
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('execution_id', 'integer', (c) => c.notNull().references('executions.id').onDelete('cascade'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('created_by', 'text')
        .execute();
      await db.schema.createIndex('history_exports_expiry').on('history_exports').column('expires_at').execute();
      await db.schema.createIndex('history_exports_execution').on('history_exports').column('execution_id').execute();
      await db.schema.createIndex('executions_start').on('executions').column('start').execute();
      await db.schema.createIndex('failed_records_created').on('failed_records').column('created').execute();
      await db.schema.createIndex('schedule_skips_due').on('schedule_skips').column('due_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('schedule_skips_due').execute();
      await db.schema.dropIndex('failed_records_created').execute();
      await db.schema.dropIndex('executions_start').execute();
      await db.schema.dropTable('history_exports').execute();
    },
  };
}
