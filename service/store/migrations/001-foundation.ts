import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/** Organizations and their Security Rules. */
async function orgTables(db: Kysely<unknown>, dialect: StoreDialect): Promise<void> {
  let orgs = db.schema.createTable('orgs');
  orgs =
    dialect === 'postgres'
      ? orgs.addColumn('id', 'serial', (c) => c.primaryKey())
      : orgs.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
  await orgs
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('parent_id', 'integer', (c) => c.references('orgs.id'))
    .addColumn('tenant_id', 'text', (c) => c.notNull().unique())
    .addColumn('city', 'text')
    .addColumn('country', 'text')
    .addColumn('data_center_id', 'integer', (c) => c.notNull())
    .addColumn('is_svc_org', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('api_crypto_token', 'text', (c) => c.notNull())
    .addColumn('event_solution_access_token', 'text', (c) => c.notNull())
    .addColumn('capture_on_failed_records_for_reprocessing', 'integer', (c) => c.notNull())
    .addColumn('capture_during_cloud_app_runs', 'integer', (c) => c.notNull())
    .addColumn('capture_during_local_agent_app_runs', 'integer', (c) => c.notNull())
    .addColumn('is_source_data_local', 'integer', (c) => c.notNull())
    .addColumn('is_agent_log_download_allowed', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('modified_at', 'text', (c) => c.notNull())
    .addColumn('modification_by', 'text')
    .execute();
  await db.schema.createIndex('orgs_parent').on('orgs').column('parent_id').execute();

  await db.schema
    .createTable('security_rules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('allowed_ip_range_start_address', 'text', (c) => c.notNull())
    .addColumn('allowed_ip_range_end_address', 'text', (c) => c.notNull())
    .addColumn('api_access_enabled', 'integer', (c) => c.notNull())
    .addColumn('event_solution_access_enabled', 'integer', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('security_rules_org').on('security_rules').column('org_id').execute();
}

/** Users, their memberships in Organizations and the invitations to join one. */
async function userTables(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_key', 'text', (c) => c.notNull().unique())
    .addColumn('first_name', 'text')
    .addColumn('last_name', 'text')
    .addColumn('company', 'text')
    .addColumn('country', 'text')
    .addColumn('state', 'text')
    .addColumn('postal_code', 'text')
    .addColumn('phone', 'text')
    .addColumn('job_title', 'text')
    .addColumn('http_referrer', 'text')
    .addColumn('lead_source', 'text')
    .addColumn('is_approved', 'integer', (c) => c.notNull())
    .addColumn('password_hash', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('modified_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('memberships')
    .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role_type', 'text', (c) => c.notNull())
    .addColumn('connector_activation_email', 'integer', (c) => c.notNull())
    .addColumn('event_failed_job_email', 'integer', (c) => c.notNull())
    .addColumn('failed_job_email', 'integer', (c) => c.notNull())
    .addColumn('failed_rows_email', 'integer', (c) => c.notNull())
    .addColumn('heartbeat_email', 'integer', (c) => c.notNull())
    .addColumn('system_update_email', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('memberships_pk', ['org_id', 'user_id'])
    .execute();
  await db.schema.createIndex('memberships_user').on('memberships').column('user_id').execute();

  await db.schema
    .createTable('invitations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_key', 'text', (c) => c.notNull())
    .addColumn('role_type', 'text', (c) => c.notNull())
    .addColumn('status_type', 'text', (c) => c.notNull())
    .addColumn('sender', 'text', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('invited_date', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text')
    .addColumn('token_expires_at', 'text')
    .addUniqueConstraint('invitations_org_email', ['org_id', 'email_key'])
    .execute();
  await db.schema.createIndex('invitations_email').on('invitations').column('email_key').execute();
}

/** Subscriptions and their usage per month. */
async function subscriptionTables(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('start_date', 'text', (c) => c.notNull())
    .addColumn('expiration_date', 'text', (c) => c.notNull())
    .addColumn('is_trial', 'integer', (c) => c.notNull())
    .addColumn('records_allowed', 'text', (c) => c.notNull())
    .addColumn('records_processed', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('sku', 'text')
    .addColumn('tsc_account_id', 'text')
    .addColumn('tsc_region', 'text')
    .addColumn('tsc_subscription_id', 'text')
    .execute();
  await db.schema.createIndex('subscriptions_org').on('subscriptions').column('org_id').execute();

  await db.schema
    .createTable('subscription_usage')
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('subscriptions.id').onDelete('cascade'))
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('records_processed', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('subscription_usage_pk', ['subscription_id', 'month'])
    .execute();
}

/** The exports an Organization asked for: of what kind, of which resource, and when fetched. */
async function exportsTable(db: Kysely<unknown>, dialect: StoreDialect): Promise<void> {
  let exports = db.schema.createTable('exports');
  exports =
    dialect === 'postgres'
      ? exports.addColumn('id', 'serial', (c) => c.primaryKey())
      : exports.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
  await exports
    .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .execute();
}

/** Organizations, Security Rules, users, memberships, invitations and Subscriptions. */
export function foundation(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await orgTables(db, dialect);
      await userTables(db);
      await subscriptionTables(db);
      await exportsTable(db, dialect);
    },
    async down(db: Kysely<unknown>) {
      for (const t of [
        'exports',
        'subscription_usage',
        'subscriptions',
        'invitations',
        'memberships',
        'users',
        'security_rules',
        'orgs',
      ]) {
        await db.schema.dropTable(t).execute();
      }
    },
  };
}
