import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/**
 * Marking every record error of an execution at the cost of the errors marked one by one, not of
 * all of them (docs/decisions.md "History mark default"):
 *
 * - `executions.mark_default` (0 or 1): the mark of the execution's errors that have none of
 *   their own. `POST H/{id}/mark` sets it.
 * - `execution_errors.marked` becomes tri-state: NULL follows `mark_default`, 0 or 1 is the mark
 *   set on that error alone. An error's mark is `coalesce(marked, mark_default)`, and only while
 *   `can_reprocess` is 1.
 * - `execution_errors_marked`: the errors with a mark of their own, by execution (partial, so it
 *   holds only those), which `POST H/{id}/mark` clears.
 *
 * The NOT NULL column is replaced rather than altered: SQLite cannot drop a NOT NULL constraint in
 * place, and on PostgreSQL turning every 0 into NULL would write a new version of every error.
 * Adding the new column, copying the 1s (the only marks of their own: every default was 0), and
 * dropping the old one writes no other error on PostgreSQL; SQLite rewrites the table once, in
 * DROP COLUMN, inside one transaction.
 */
export function historyMarkDefault(dialect: StoreDialect): Migration {
  // The migrator runs a PostgreSQL migration in a transaction; SQLite's it does not (transactional
  // DDL is off for its adapter), yet SQLite's DDL is transactional, so the steps go in one here.
  const atomically = async (db: Kysely<unknown>, steps: (db: Kysely<unknown>) => Promise<void>): Promise<void> =>
    dialect === 'sqlite' ? db.transaction().execute(steps) : steps(db);
  return {
    async up(db: Kysely<unknown>) {
      await atomically(db, async (tx) => {
        await tx.schema
          .alterTable('executions')
          .addColumn('mark_default', 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
        await tx.schema.alterTable('execution_errors').addColumn('mark', 'integer').execute();
        await sql`update execution_errors set mark = 1 where marked = 1`.execute(tx);
        await tx.schema.alterTable('execution_errors').dropColumn('marked').execute();
        await tx.schema.alterTable('execution_errors').renameColumn('mark', 'marked').execute();
        await tx.schema
          .createIndex('execution_errors_marked')
          .on('execution_errors')
          .column('execution_id')
          .where(sql.ref('marked'), 'is not', null)
          .execute();
      });
    },
    async down(db: Kysely<unknown>) {
      await atomically(db, async (tx) => {
        await tx.schema.dropIndex('execution_errors_marked').execute();
        await tx.schema.alterTable('execution_errors').renameColumn('marked', 'mark').execute();
        await tx.schema
          .alterTable('execution_errors')
          .addColumn('marked', 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
        await sql`update execution_errors set marked = 1
          where can_reprocess = 1 and coalesce(mark, (select x.mark_default from executions x where x.id = execution_errors.execution_id)) = 1`.execute(
          tx,
        );
        await tx.schema.alterTable('execution_errors').dropColumn('mark').execute();
        await tx.schema.alterTable('executions').dropColumn('mark_default').execute();
      });
    },
  };
}
