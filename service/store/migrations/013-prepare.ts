import type { Kysely, Migration } from 'kysely';

/**
 * Prepare: the jobs (SPEC.md "Prepare job") and what the last successful prepare of each Solution
 * built for its Agent. `prepared_solutions.body` is the prepared definition without Connection
 * properties: those stay sealed in `connections` and are added when the definition is sent.
 * `solutions.prepare_state` is Preparing while a job runs and ProvisionError when the last one
 * failed; a change of the definition clears it. `solution_moves` holds a Solution back from its
 * new Agent until the Agent it left has confirmed an assignment list without it.
 */
export function prepare(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('prepare_jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('org_id', 'integer', (c) => c.notNull())
        .addColumn('creation_date', 'text', (c) => c.notNull())
        .addColumn('finish_date', 'text')
        .addColumn('is_complete', 'integer', (c) => c.notNull())
        .addColumn('has_error', 'integer', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('map_errors', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('prepare_jobs_solution')
        .on('prepare_jobs')
        .columns(['solution_id', 'creation_date'])
        .execute();
      await db.schema
        .createTable('prepared_solutions')
        .addColumn('solution_id', 'text', (c) => c.primaryKey().references('solutions.id').onDelete('cascade'))
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('prepared_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('prepared_solutions_agent').on('prepared_solutions').column('agent_id').execute();
      await db.schema.alterTable('solutions').addColumn('prepare_state', 'text').execute();
      // A Solution moved to another Agent: the Agent it left may still fire it until it confirms a set without it.
      await db.schema
        .createTable('solution_moves')
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('from_agent_id', 'text', (c) => c.notNull())
        .addColumn('moved_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('solution_moves_pk', ['solution_id', 'from_agent_id'])
        .execute();
      await db.schema.createIndex('solution_moves_from').on('solution_moves').column('from_agent_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('solution_moves').execute();
      await db.schema.alterTable('solutions').dropColumn('prepare_state').execute();
      await db.schema.dropTable('prepared_solutions').execute();
      await db.schema.dropTable('prepare_jobs').execute();
    },
  };
}
