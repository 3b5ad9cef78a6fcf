import type { Kysely, Migration } from 'kysely';

/**
 * `event_replies`: the replies of requests sent with `Prefer: respond-async` (docs/events.md,
 * "Request/reply Maps"), polled at `…/requests/{mapId}/replies/{id}` on any replica: `pending`
 * until the replica that holds the request writes the answer (`status`, `body` as sent, `problem`
 * 1 when it is a problem document). Kept 24 hours.
 */
export function eventReplies(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('event_replies')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('endpoint_id', 'integer', (c) => c.notNull().references('message_endpoints.id').onDelete('cascade'))
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('status', 'integer')
        .addColumn('body', 'text')
        .addColumn('problem', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_ms', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('event_replies_age').on('event_replies').column('created_ms').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('event_replies').execute();
    },
  };
}
