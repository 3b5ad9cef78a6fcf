import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/**
 * History: the executions (runs) of Solutions as their Agents report them, the record errors of
 * each, and the due times a schedule skipped; plus the result of a Solution's last run, which its
 * status shows.
 *
 * - `executions.id` is an integer (clients declare it `int`) from an auto-increment key (`serial`
 *   on PostgreSQL), never reused; `run_id` is the run's GUID (`processExecutionId`), unique, so
 *   every report about a run upserts one row. `agent_id` has no foreign key: History outlives
 *   nothing it must not (Agents used by Solutions cannot be deleted anyway).
 * - `execution_errors.id` is the error's own GUID from the report, so a re-sent report stores it
 *   once; `seq` numbers an execution's errors in order of arrival (1, 2, …) for keyset paging, and
 *   a partial index counts the ones still reprocessable without reading the rows.
 * - Everything goes with its Solution (cascade).
 */
export function executions(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      let t = db.schema.createTable('executions');
      t =
        dialect === 'postgres'
          ? t.addColumn('id', 'serial', (c) => c.primaryKey())
          : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await t
        .addColumn('run_id', 'text', (c) => c.notNull().unique())
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('trigger', 'text', (c) => c.notNull())
        .addColumn('due_at', 'text')
        .addColumn('start', 'text', (c) => c.notNull())
        .addColumn('stop', 'text')
        .addColumn('result', 'text')
        .addColumn('records_processed', 'bigint', (c) => c.notNull())
        .addColumn('records_failed', 'bigint', (c) => c.notNull())
        .addColumn('details', 'text')
        .addColumn('stopped', 'integer', (c) => c.notNull())
        .addColumn('is_reprocess_job', 'integer', (c) => c.notNull())
        .addColumn('source_data_local', 'integer', (c) => c.notNull())
        .addColumn('statistics', 'text', (c) => c.notNull())
        .addColumn('last_progress_at', 'text')
        .execute();
      await db.schema
        .createIndex('executions_solution_start')
        .on('executions')
        .columns(['solution_id', 'start'])
        .execute();

      await db.schema
        .createTable('execution_errors')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('execution_id', 'integer', (c) => c.notNull().references('executions.id').onDelete('cascade'))
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('map_id', 'integer')
        .addColumn('map_name', 'text', (c) => c.notNull())
        .addColumn('source_entity', 'text', (c) => c.notNull())
        .addColumn('block_id', 'text')
        .addColumn('block_name', 'text')
        .addColumn('code', 'text', (c) => c.notNull())
        .addColumn('error_message', 'text', (c) => c.notNull())
        .addColumn('error_detail', 'text', (c) => c.notNull())
        .addColumn('can_reprocess', 'integer', (c) => c.notNull())
        .addColumn('marked', 'integer', (c) => c.notNull())
        .addColumn('failed_record_id', 'text')
        .addColumn('created', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('execution_errors_seq')
        .on('execution_errors')
        .columns(['execution_id', 'seq'])
        .unique()
        .execute();
      await db.schema
        .createIndex('execution_errors_reprocessable')
        .on('execution_errors')
        .column('execution_id')
        .where(sql.ref('can_reprocess'), '=', 1)
        .execute();

      await db.schema
        .createTable('schedule_skips')
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('due_at', 'text', (c) => c.notNull())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('schedule_skips_pk', ['solution_id', 'due_at'])
        .execute();

      await db.schema.alterTable('solutions').addColumn('last_run_result', 'text').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('solutions').dropColumn('last_run_result').execute();
      await db.schema.dropTable('schedule_skips').execute();
      await db.schema.dropTable('execution_errors').execute();
      await db.schema.dropTable('executions').execute();
    },
  };
}
