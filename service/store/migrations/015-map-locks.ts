import type { Kysely, Migration } from 'kysely';

/**
 * Map locks: `locked_by` is the login email of the user who holds a Map's lock (null when
 * unlocked) and `lock_date` when it was taken. A lock keeps other users from saving, reverting
 * or deleting the Map; it never expires (docs/decisions.md "Map locks").
 */
export function mapLocks(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('maps').addColumn('locked_by', 'text').execute();
      await db.schema.alterTable('maps').addColumn('lock_date', 'text').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('maps').dropColumn('lock_date').execute();
      await db.schema.alterTable('maps').dropColumn('locked_by').execute();
    },
  };
}
