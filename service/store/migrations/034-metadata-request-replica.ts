import type { Kysely, Migration } from 'kysely';

/**
 * `metadata_requests.replica_id`: the Service replica that sent a metadata load and waits for its
 * answer (service/connections/metadata.ts). A call on another replica finds the request Requested
 * and, while that replica lives, answers "loading" as the sender does instead of taking the request
 * for lost and loading the metadata a second time. Empty on SQLite and for older rows.
 */
export function metadataRequestReplica(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('metadata_requests').addColumn('replica_id', 'text').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('metadata_requests').dropColumn('replica_id').execute();
    },
  };
}
