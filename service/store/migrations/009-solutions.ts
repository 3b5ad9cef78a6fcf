import type { Kysely, Migration } from 'kysely';

/**
 * Solutions. The Agent and the Connections a Solution uses are foreign keys without a cascade: the
 * domain refuses to delete them while a Solution uses them (409 naming the Solutions), and the
 * database refuses too should any other path try. Deleting the Organization deletes its Solutions.
 */
export function solutions(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('solutions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('name_key', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('solution_type', 'text', (c) => c.notNull())
        .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id'))
        .addColumn('connection_id_for_source', 'text', (c) => c.references('connections.id'))
        .addColumn('connection_id_for_target', 'text', (c) => c.references('connections.id'))
        .addColumn('replication_settings', 'text')
        .addColumn('check_for_bulk', 'integer', (c) => c.notNull())
        .addColumn('is_disabled', 'integer', (c) => c.notNull())
        .addColumn('reason_disabled', 'integer', (c) => c.notNull())
        .addColumn('prepared', 'integer', (c) => c.notNull())
        .addColumn('last_run_time', 'text')
        .addColumn('in_progress_start_time', 'text')
        .addColumn('min_agent_version', 'text')
        .addColumn('creation_date', 'text', (c) => c.notNull())
        .addColumn('last_modification_date', 'text', (c) => c.notNull())
        .addColumn('modification_by', 'text')
        .addUniqueConstraint('solutions_org_name', ['org_id', 'name_key'])
        .execute();
      await db.schema.createIndex('solutions_agent').on('solutions').column('agent_id').execute();
      await db.schema.createIndex('solutions_source').on('solutions').column('connection_id_for_source').execute();
      await db.schema.createIndex('solutions_target').on('solutions').column('connection_id_for_target').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('solutions').execute();
    },
  };
}
