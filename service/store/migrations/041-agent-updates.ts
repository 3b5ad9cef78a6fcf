import type { Kysely, Migration } from 'kysely';

/**
 * What the Service keeps of Agent updates (docs/agents.md "Updates"): an operator's hold at the
 * Agent's version, the version an update under way installs, and the last failure with its
 * version (not offered to that Agent again until an operator asks).
 */
export function agentUpdates(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('agents')
        .addColumn('version_hold', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('agents').addColumn('update_version', 'text').execute();
      await db.schema.alterTable('agents').addColumn('update_failed_version', 'text').execute();
      await db.schema.alterTable('agents').addColumn('update_error', 'text').execute();
    },
    async down(db: Kysely<unknown>) {
      for (const column of ['update_error', 'update_failed_version', 'update_version', 'version_hold'])
        await db.schema.alterTable('agents').dropColumn(column).execute();
    },
  };
}
