import type { Kysely, Migration } from 'kysely';

/**
 * Reprocessing of marked record errors: `reprocess_run_id` names the reprocess run that took an
 * error (it is set, with `can_reprocess` 0 and `marked` 0, by one UPDATE when the run is
 * accepted), so the run's Agent pages through exactly those errors, Map by Map, in order of
 * arrival — over the index below, whatever the size of the execution.
 */
export function historyMarks(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('execution_errors').addColumn('reprocess_run_id', 'text').execute();
      await db.schema
        .createIndex('execution_errors_reprocess_run')
        .on('execution_errors')
        .columns(['reprocess_run_id', 'map_id', 'seq'])
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('execution_errors_reprocess_run').execute();
      await db.schema.alterTable('execution_errors').dropColumn('reprocess_run_id').execute();
    },
  };
}
