import type { Kysely, Migration } from 'kysely';

/**
 * `mail_outbox`: the durable queue of notification mails (service/notifications). A trigger writes
 * one row per recipient, inside the transaction of what it reports where it can; a sender loop on
 * any Service replica claims due rows (`claimed_until`, a lease), sends them over SMTP, and marks
 * them sent or schedules the next attempt (`next_attempt_at`, with back-off). `dedupe_key` is
 * unique, so one event mails one recipient once however often its trigger runs. Sent and
 * abandoned rows are kept for a while and then deleted by the sender loop.
 */
export function mailOutbox(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('mail_outbox')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('dedupe_key', 'text', (c) => c.notNull().unique())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('org_id', 'integer', (c) => c.notNull())
        .addColumn('recipient', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'text', (c) => c.notNull())
        .addColumn('claimed_by', 'text')
        .addColumn('claimed_until', 'text')
        .addColumn('sent_at', 'text')
        .addColumn('failed_at', 'text')
        .addColumn('last_error', 'text')
        .execute();
      await db.schema
        .createIndex('mail_outbox_due')
        .on('mail_outbox')
        .columns(['sent_at', 'failed_at', 'next_attempt_at'])
        .execute();
      await db.schema.createIndex('mail_outbox_created').on('mail_outbox').column('created_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('mail_outbox').execute();
    },
  };
}
