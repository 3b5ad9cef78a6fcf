import type { Kysely, Migration } from 'kysely';

/**
 * What lets several Service replicas run each Service-side job once (service/jobs/claims.ts;
 * docs/deploy.md):
 *
 * - `service_leases`: a named lease held by one replica until `until_ms` (the database's clock in
 *   ms since the epoch): `job:<name>` for a job one replica runs at a time (the heartbeat sweeper,
 *   housekeeping, History retention, Cloud Agent supervision), `replica:<id>` for a replica that is
 *   alive. A replica that dies stops renewing; another takes the job when the lease has passed.
 * - `prepare_jobs.replica_id`: the replica a prepare runs on, so that only the prepares of a replica
 *   that is gone end as abandoned, not those another replica is still running.
 */
export function serviceLeases(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('service_leases')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('holder', 'text', (c) => c.notNull())
        .addColumn('until_ms', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.alterTable('prepare_jobs').addColumn('replica_id', 'text').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('prepare_jobs').dropColumn('replica_id').execute();
      await db.schema.dropTable('service_leases').execute();
    },
  };
}
