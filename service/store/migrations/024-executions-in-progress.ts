import { sql, type Kysely, type Migration } from 'kysely';

/**
 * The runs still going (no result) by Agent, over a partial index that holds only them: the check
 * for reprocess runs an Agent never started (service/history/lost-reprocess-runs.ts) asks each
 * connected Agent about its own every minute and at each connect, and must not read History's
 * ended executions, of which there may be millions, to find the few.
 */
export function executionsInProgress(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createIndex('executions_in_progress')
        .on('executions')
        .columns(['agent_id', 'start'])
        .where(sql.ref('result'), 'is', null)
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('executions_in_progress').execute();
    },
  };
}
