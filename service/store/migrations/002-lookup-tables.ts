import type { Kysely, Migration } from 'kysely';

/** Lookup Tables and their values, indexed for both lookup directions. */
export function lookupTables(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('lookup_tables')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('name_key', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('creation_date', 'text', (c) => c.notNull())
        .addColumn('last_modification_date', 'text', (c) => c.notNull())
        .addColumn('modification_by', 'text')
        .addUniqueConstraint('lookup_tables_org_name', ['org_id', 'name_key'])
        .execute();

      await db.schema
        .createTable('lookup_table_values')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('table_id', 'text', (c) => c.notNull().references('lookup_tables.id').onDelete('cascade'))
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('value1', 'text', (c) => c.notNull())
        .addColumn('value2', 'text', (c) => c.notNull())
        .addColumn('creation_date', 'text', (c) => c.notNull())
        .addColumn('last_modification_date', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('lookup_values_seq').on('lookup_table_values').columns(['table_id', 'seq']).execute();
      await db.schema.createIndex('lookup_values_v1').on('lookup_table_values').columns(['table_id', 'value1', 'value2']).execute();
      await db.schema.createIndex('lookup_values_v2').on('lookup_table_values').columns(['table_id', 'value2', 'value1']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('lookup_table_values').execute();
      await db.schema.dropTable('lookup_tables').execute();
    },
  };
}
