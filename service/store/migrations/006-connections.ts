import type { Kysely, Migration } from 'kysely';

/**
 * Connections (their properties sealed under the master key as one JSON blob) and the results of
 * Connection tests sent to Agents.
 */
export function connections(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('connections')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('name_key', 'text', (c) => c.notNull())
        .addColumn('alias', 'text', (c) => c.notNull())
        .addColumn('connector_id', 'text', (c) => c.notNull())
        .addColumn('color', 'text', (c) => c.notNull())
        .addColumn('properties', 'text', (c) => c.notNull())
        .addColumn('create_date_time', 'text', (c) => c.notNull())
        .addColumn('last_modification_date_time', 'text', (c) => c.notNull())
        .addColumn('modification_by', 'text')
        .execute();
      await db.schema.createIndex('connections_org_name').on('connections').columns(['org_id', 'name_key']).execute();

      await db.schema
        .createTable('connection_tests')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('connection_id', 'text')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('reply', 'text')
        .addColumn('requested_at', 'text', (c) => c.notNull())
        .addColumn('completed_at', 'text')
        .execute();
      await db.schema.createIndex('connection_tests_requested').on('connection_tests').column('requested_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('connection_tests').execute();
      await db.schema.dropTable('connections').execute();
    },
  };
}
