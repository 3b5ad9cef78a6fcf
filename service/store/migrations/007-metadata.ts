import type { Kysely, Migration } from 'kysely';

/**
 * Connection metadata: one cached document per Connection (the Agent's ConnectionMetadata as JSON,
 * which Agent loaded it and when; `metadata` is null after a reset, so the row still remembers the
 * Agent for the next load), and the metadata requests sent to Agents.
 */
export function metadata(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('connection_metadata')
        .addColumn('connection_id', 'text', (c) => c.primaryKey().references('connections.id').onDelete('cascade'))
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('metadata', 'text')
        .addColumn('loaded_at', 'text')
        .execute();

      await db.schema
        .createTable('metadata_requests')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('connection_id', 'text', (c) => c.notNull().references('connections.id').onDelete('cascade'))
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('object_name', 'text')
        .addColumn('start_date', 'text', (c) => c.notNull())
        .addColumn('end_date', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('error_message', 'text')
        .addColumn('error_seen', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createIndex('metadata_requests_connection')
        .on('metadata_requests')
        .columns(['connection_id', 'start_date'])
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('metadata_requests').execute();
      await db.schema.dropTable('connection_metadata').execute();
    },
  };
}
