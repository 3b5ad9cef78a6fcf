import type { Kysely, Migration } from 'kysely';

/** `console_sessions`: the signed-in sessions of the web console, by the hash of their token (docs/console.md). */
export function consoleSessions(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('console_sessions')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('password_stamp', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_seen_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('console_sessions_user').on('console_sessions').column('user_id').execute();
      await db.schema.createIndex('console_sessions_seen').on('console_sessions').column('last_seen_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('console_sessions').execute();
    },
  };
}
