import { sql, type Kysely, type Migration } from 'kysely';

/**
 * The index of the errors a reprocess run took holds only those errors: every other error (nearly
 * all of them) has no `reprocess_run_id`, and a full index made each stored error one more B-tree
 * insert. The look-ups (`reprocess_run_id = ?`) use the partial index as they used the full one.
 */
export function reprocessRunPartial(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('execution_errors_reprocess_run').execute();
      await db.schema
        .createIndex('execution_errors_reprocess_run')
        .on('execution_errors')
        .columns(['reprocess_run_id', 'map_id', 'seq'])
        .where(sql.ref('reprocess_run_id'), 'is not', null)
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('execution_errors_reprocess_run').execute();
      await db.schema
        .createIndex('execution_errors_reprocess_run')
        .on('execution_errors')
        .columns(['reprocess_run_id', 'map_id', 'seq'])
        .execute();
    },
  };
}
