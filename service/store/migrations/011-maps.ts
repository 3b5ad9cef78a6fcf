import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/**
 * The Maps of Solutions and their revisions. A Map's ID is an integer unique across the Service
 * (clients declare it `int`), never reused; `link_index` is its place in its Solution's run order.
 * Deleting a Solution deletes its Maps, and deleting a Map its revisions.
 */
export function maps(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      let t = db.schema.createTable('maps');
      t =
        dialect === 'postgres'
          ? t.addColumn('id', 'serial', (c) => c.primaryKey())
          : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await t
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('link_index', 'integer', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('map_type', 'text', (c) => c.notNull())
        .addColumn('revision', 'integer', (c) => c.notNull())
        .addColumn('valid', 'integer', (c) => c.notNull())
        .addColumn('sources', 'text', (c) => c.notNull())
        .addColumn('targets', 'text', (c) => c.notNull())
        .addColumn('creation_date', 'text', (c) => c.notNull())
        .addColumn('last_modification_date', 'text', (c) => c.notNull())
        .addColumn('modified_by', 'text')
        .execute();
      await db.schema.createIndex('maps_solution').on('maps').columns(['solution_id', 'link_index']).execute();
      await db.schema
        .createTable('map_revisions')
        .addColumn('map_id', 'integer', (c) => c.notNull().references('maps.id').onDelete('cascade'))
        .addColumn('revision', 'integer', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('comment', 'text', (c) => c.notNull())
        .addColumn('revision_date', 'text', (c) => c.notNull())
        .addColumn('modified_by', 'text')
        .addPrimaryKeyConstraint('map_revisions_pk', ['map_id', 'revision'])
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('map_revisions').execute();
      await db.schema.dropTable('maps').execute();
    },
  };
}
