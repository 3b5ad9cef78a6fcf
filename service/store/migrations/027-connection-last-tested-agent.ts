import type { Kysely, Migration } from 'kysely';

/**
 * The Agent that last answered a test of a Connection with SUCCESS or loaded its metadata:
 * clients of the original service take the Agent for a test or for entity names from it
 * (`lastTestedAgentId` of the Connection model). Null until one did.
 */
export function connectionLastTestedAgent(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('connections').addColumn('last_tested_agent_id', 'text').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('connections').dropColumn('last_tested_agent_id').execute();
    },
  };
}
