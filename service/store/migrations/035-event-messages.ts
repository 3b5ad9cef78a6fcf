import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/**
 * Event Solutions (service/events/; docs/events.md):
 *
 * - `message_endpoints`: one per message (or request) Map of an Event Solution, made when the
 *   Solution is prepared. `id` is the integer SPEC.md shows; `url_map_id` is the Map ID its URL
 *   names (`/v1/orgs/{orgId}/messages/{urlMapId}`), which stays when the Map is deleted (`map_id`
 *   then null) and a new Map of the same name takes the endpoint over. `queued` counts the messages
 *   waiting (the back-pressure limit reads it without counting rows); `message_count` every message
 *   received.
 * - `event_messages`: the queue, in order of arrival (`id`). A message is leased to the Agent run
 *   that took it (`lease_run`, `lease_until_ms` by the database's clock) and deleted when that run
 *   says it is written (or its error recorded); an expired lease, or the run's end, gives it back.
 * - `event_idempotency`: the `Idempotency-Key`s of accepted POSTs, per endpoint, kept 24 h or more.
 */
export function eventMessages(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      let e = db.schema.createTable('message_endpoints');
      e =
        dialect === 'postgres'
          ? e.addColumn('id', 'serial', (c) => c.primaryKey())
          : e.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await e
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('url_map_id', 'integer', (c) => c.notNull())
        .addColumn('map_id', 'integer')
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('map_name', 'text', (c) => c.notNull())
        .addColumn('map_key', 'text', (c) => c.notNull())
        .addColumn('entity_name', 'text', (c) => c.notNull())
        .addColumn('map_description', 'text')
        .addColumn('message_count', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('queued', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('modified_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('message_endpoints_url')
        .on('message_endpoints')
        .columns(['org_id', 'url_map_id'])
        .unique()
        .execute();
      await db.schema
        .createIndex('message_endpoints_map_key')
        .on('message_endpoints')
        .columns(['solution_id', 'kind', 'map_key'])
        .unique()
        .execute();

      let m = db.schema.createTable('event_messages');
      m =
        dialect === 'postgres'
          ? m.addColumn('id', 'bigserial', (c) => c.primaryKey())
          : m.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await m
        .addColumn('endpoint_id', 'integer', (c) => c.notNull().references('message_endpoints.id').onDelete('cascade'))
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('received_ms', 'bigint', (c) => c.notNull())
        .addColumn('lease_run', 'text')
        .addColumn('lease_until_ms', 'bigint')
        .execute();
      await db.schema.createIndex('event_messages_queue').on('event_messages').columns(['endpoint_id', 'id']).execute();
      await db.schema.createIndex('event_messages_lease').on('event_messages').column('lease_run').execute();

      await db.schema
        .createTable('event_idempotency')
        .addColumn('endpoint_id', 'integer', (c) => c.notNull().references('message_endpoints.id').onDelete('cascade'))
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('messages', 'integer', (c) => c.notNull())
        .addColumn('created_ms', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('event_idempotency_pk', ['endpoint_id', 'key'])
        .execute();
      await db.schema.createIndex('event_idempotency_age').on('event_idempotency').column('created_ms').execute();
      if (dialect === 'postgres') {
        // Deleted from the front as fast as it is appended: vacuumed often, not at 20 % dead rows.
        await sql`ALTER TABLE event_messages SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000)`.execute(
          db,
        );
      }
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('event_idempotency').execute();
      await db.schema.dropTable('event_messages').execute();
      await db.schema.dropTable('message_endpoints').execute();
    },
  };
}
