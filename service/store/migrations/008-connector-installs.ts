import { sql, type Kysely, type Migration } from 'kysely';

/** What the migration needs to know of the catalogue: the Connectors every Organization starts with. */
export interface PreinstalledConnector {
  id: string;
  version: string;
}

/**
 * Connectors installed in Organizations (with their version lock), their installation on each
 * Agent, the vendors and customers of Managed Connectors, a per-Connector Connection limit on
 * Subscriptions, and a kind on the Agent command results (Connection tests and preconnects).
 * Every existing Organization gets the preinstalled (built-in public) Connectors, as new ones do.
 */
export function connectorInstalls(preinstalled: readonly PreinstalledConnector[]): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('org_connectors')
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('connector_id', 'text', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('is_locked', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('lock_created_at', 'text')
        .addColumn('lock_modified_at', 'text')
        .addColumn('lock_modified_by', 'text')
        .addColumn('installed_at', 'text', (c) => c.notNull())
        .addColumn('installed_by', 'text')
        .addPrimaryKeyConstraint('org_connectors_pk', ['org_id', 'connector_id'])
        .execute();

      await db.schema
        .createTable('agent_connector_installs')
        .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
        .addColumn('connector_id', 'text', (c) => c.notNull())
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('operation', 'text', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('requested_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('agent_connector_installs_pk', ['agent_id', 'connector_id'])
        .execute();
      await db.schema
        .createIndex('agent_connector_installs_org')
        .on('agent_connector_installs')
        .columns(['org_id', 'connector_id'])
        .execute();

      await db.schema
        .createTable('managed_connectors')
        .addColumn('connector_id', 'text', (c) => c.primaryKey())
        .addColumn('vendor_org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('assigned_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('managed_connector_customers')
        .addColumn('connector_id', 'text', (c) => c.notNull())
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('provisioned_by', 'text', (c) => c.notNull())
        .addColumn('provisioned_date', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('managed_connector_customers_pk', ['connector_id', 'org_id'])
        .execute();

      await db.schema.alterTable('subscriptions').addColumn('connections_per_connector', 'integer').execute();
      await db.schema
        .alterTable('connection_tests')
        .addColumn('kind', 'text', (c) => c.notNull().defaultTo('test'))
        .execute();
      await db.schema.alterTable('connection_tests').addColumn('reply_data', 'text').execute();

      const now = new Date().toISOString();
      for (const c of preinstalled) {
        await sql`INSERT INTO org_connectors (org_id, connector_id, version, is_locked, installed_at, installed_by)
                  SELECT id, ${c.id.toLowerCase()}, ${c.version}, 0, ${now}, NULL FROM orgs`.execute(db);
      }
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('connection_tests').dropColumn('reply_data').execute();
      await db.schema.alterTable('connection_tests').dropColumn('kind').execute();
      await db.schema.alterTable('subscriptions').dropColumn('connections_per_connector').execute();
      for (const t of [
        'managed_connector_customers',
        'managed_connectors',
        'agent_connector_installs',
        'org_connectors',
      ])
        await db.schema.dropTable(t).execute();
    },
  };
}
