import type { Kysely, Migration } from 'kysely';

/**
 * What the Maps API asks of a Solution's Agent while a Map is being built, kept where every
 * Service replica behind the load balancer finds it (the POLL that follows a POST may reach
 * another replica than the one waiting for the Agent's answer):
 *
 * - `map_previews`: preview queries and native query tests. A row is written `Requested` when
 *   the command is sent and completed with the records (JSON, at most 100) or the error when the
 *   Agent answers; rows expire (`expires_at`) and are deleted by the next request after that.
 *   `map_id` is the path's Map ID, which need not exist when the request carried its own model.
 * - `map_runs`: single-Map runs by commandId, with the run ID (History `processExecutionId`) their
 *   status is read from, or the run in progress that made the command be ignored.
 */
export function mapPreviews(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('map_previews')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull())
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('map_id', 'integer', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('block_id', 'text', (c) => c.notNull())
        .addColumn('block_name', 'text', (c) => c.notNull())
        .addColumn('entity', 'text')
        .addColumn('connection_id', 'text', (c) => c.notNull())
        .addColumn('record_limit', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('result', 'text')
        .addColumn('error_code', 'text')
        .addColumn('error_message', 'text')
        .addColumn('requested_at', 'text', (c) => c.notNull())
        .addColumn('completed_at', 'text')
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('map_previews_block')
        .on('map_previews')
        .columns(['solution_id', 'map_id', 'kind', 'block_id', 'requested_at'])
        .execute();
      await db.schema.createIndex('map_previews_expiry').on('map_previews').column('expires_at').execute();
      await db.schema
        .createTable('map_runs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull())
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('map_id', 'integer', (c) => c.notNull())
        .addColumn('run_id', 'text')
        .addColumn('ignored', 'integer', (c) => c.notNull())
        .addColumn('prepare_id', 'text')
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('requested_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('map_runs_expiry').on('map_runs').column('expires_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('map_runs').execute();
      await db.schema.dropTable('map_previews').execute();
    },
  };
}
