import type { Kysely, Migration } from 'kysely';

/**
 * Which source record a record error is about (docs/history.md "Record errors"):
 *
 * - `execution_errors.source_key`: the record's key, its entity's primary-key fields and values,
 *   as a JSON object (text on both stores: it is only ever read back whole);
 * - `execution_errors.source_row`: its position in the run's read, from 1.
 *
 * Both null for errors stored before, and for errors from Agents that do not send them. Adding a
 * nullable column without a default rewrites no row on either store.
 */
export function errorSourceKeys(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('execution_errors').addColumn('source_key', 'text').execute();
      await db.schema.alterTable('execution_errors').addColumn('source_row', 'integer').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('execution_errors').dropColumn('source_row').execute();
      await db.schema.alterTable('execution_errors').dropColumn('source_key').execute();
    },
  };
}
