import type { Kysely, Migration } from 'kysely';

/**
 * Failed source records kept in the cloud (an Organization's `isSourceDataLocal` false): one row
 * per record, under the ID its record error names (`failedRecordId`), its source fields sealed
 * under the master key (customer data at rest). They go with their Solution.
 */
export function failedRecords(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('failed_records')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('run_id', 'text', (c) => c.notNull())
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('org_id', 'integer', (c) => c.notNull())
        .addColumn('map_id', 'integer')
        .addColumn('map_name', 'text', (c) => c.notNull())
        .addColumn('entity', 'text', (c) => c.notNull())
        .addColumn('block_id', 'text', (c) => c.notNull())
        .addColumn('block_name', 'text', (c) => c.notNull())
        .addColumn('code', 'text', (c) => c.notNull())
        .addColumn('error_message', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('created', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('failed_records_run').on('failed_records').column('run_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('failed_records').execute();
    },
  };
}
