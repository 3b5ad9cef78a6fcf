import type { Kysely, Migration } from 'kysely';

/**
 * `solutions.shared_from`: a by-reference copy (a shared-resource target) names the source Solution
 * whose Maps it runs (docs/solutions.md "Copies by reference"); a Solution some target names is a
 * source. Indexed: a source's targets are looked up on every guarded call and delete.
 */
export function sharedSolutions(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('solutions').addColumn('shared_from', 'text').execute();
      await db.schema.createIndex('solutions_shared_from').on('solutions').column('shared_from').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('solutions_shared_from').execute();
      await db.schema.alterTable('solutions').dropColumn('shared_from').execute();
    },
  };
}
