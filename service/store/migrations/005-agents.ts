import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Agents, their single-use installation keys, the deduplication table of what they report over
 * the channel, and requested log archives.
 */
export function agents(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('agents')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('name_key', 'text', (c) => c.notNull())
        .addColumn('machine_name', 'text', (c) => c.notNull())
        .addColumn('service_name', 'text', (c) => c.notNull())
        .addColumn('is_cloud_agent', 'integer', (c) => c.notNull())
        .addColumn('is_updating', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('last_contact_time', 'text')
        .addColumn('last_shutdown_time', 'text')
        .addColumn('last_start_time', 'text')
        .addColumn('version', 'text')
        .addColumn('installed_connectors', 'text', (c) => c.notNull())
        .addColumn('secret_hash', 'text')
        .addColumn('fingerprint', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('modified_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('agents_org_name', ['org_id', 'name_key'])
        .execute();
      // At most one Cloud Agent per Organization, whatever the application does.
      await db.schema
        .createIndex('agents_one_cloud')
        .unique()
        .on('agents')
        .column('org_id')
        .where(sql.ref('is_cloud_agent'), '=', 1)
        .execute();
      await db.schema.createIndex('agents_contact').on('agents').column('last_contact_time').execute();

      await db.schema
        .createTable('agent_installation_keys')
        .addColumn('key_hash', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('agent_id', 'text', (c) => c.references('agents.id').onDelete('cascade'))
        .addColumn('created_by', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('used_at', 'text')
        .execute();
      await db.schema.createIndex('agent_keys_expiry').on('agent_installation_keys').column('expires_at').execute();

      await db.schema
        .createTable('agent_reports')
        .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
        .addColumn('message_id', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('received_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('agent_reports_pk', ['agent_id', 'message_id'])
        .execute();
      await db.schema.createIndex('agent_reports_received').on('agent_reports').column('received_at').execute();

      await db.schema
        .createTable('agent_logs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
        .addColumn('solution_id', 'text')
        .addColumn('requester_ip', 'text', (c) => c.notNull())
        .addColumn('requested_by', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('size_bytes', 'bigint')
        .addColumn('error', 'text')
        .addColumn('requested_at', 'text', (c) => c.notNull())
        .addColumn('uploaded_at', 'text')
        .addColumn('downloaded_at', 'text')
        .execute();
      await db.schema.createIndex('agent_logs_agent').on('agent_logs').column('agent_id').execute();
      await db.schema.createIndex('agent_logs_requested').on('agent_logs').column('requested_at').execute();
    },
    async down(db: Kysely<unknown>) {
      for (const t of ['agent_logs', 'agent_reports', 'agent_installation_keys', 'agents'])
        await db.schema.dropTable(t).execute();
    },
  };
}
