import type { Kysely, Migration } from 'kysely';

/**
 * What lets several Service replicas on one PostgreSQL reach each other's Agents
 * (service/gateway/replica-bus.ts; docs/deploy.md):
 *
 * - `agent_channels`: which replica holds each Agent's channel, until when (`lease_until_ms`, the
 *   database's clock in ms since the epoch, renewed by the replica while the channel is open). A
 *   replica that dies stops renewing, and its Agents count as disconnected once their leases pass.
 * - `agent_commands`: a command to an Agent held by another replica: the replica that holds the
 *   channel (`holder`) takes it, sends it, and writes the reply for the `sender`, woken both ways
 *   by NOTIFY. Rows live for the length of a command.
 *
 * Both tables exist on SQLite too (the schema is one), where one process holds every channel and
 * they stay empty.
 */
export function agentChannels(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('agent_channels')
        .addColumn('agent_id', 'text', (c) => c.primaryKey())
        .addColumn('replica_id', 'text', (c) => c.notNull())
        .addColumn('channel_id', 'text', (c) => c.notNull())
        .addColumn('lease_until_ms', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('agent_channels_replica').on('agent_channels').column('replica_id').execute();
      await db.schema
        .createTable('agent_commands')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('holder', 'text', (c) => c.notNull())
        .addColumn('sender', 'text', (c) => c.notNull())
        .addColumn('command', 'text', (c) => c.notNull())
        .addColumn('timeout_ms', 'integer', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('reply', 'text')
        .addColumn('created_ms', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('agent_commands_holder').on('agent_commands').columns(['holder', 'state']).execute();
      await db.schema.createIndex('agent_commands_created').on('agent_commands').column('created_ms').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('agent_commands').execute();
      await db.schema.dropTable('agent_channels').execute();
    },
  };
}
