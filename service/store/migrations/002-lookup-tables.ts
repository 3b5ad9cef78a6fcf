import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/**
 * Lookup Tables and their values, indexed for both lookup directions.
 *
 * value1 and value2 compare by code point on both stores, so that "the first alphabetically" of
 * duplicate pairs is the same answer on SQLite and PostgreSQL: SQLite's default BINARY collation
 * already does (memcmp of UTF-8), and on PostgreSQL the columns carry `COLLATE "C"`, so their
 * indexes, `=` and `ORDER BY` all use it whatever the database's default collation is.
 *
 * name_key (the lower-cased name) likewise, so lists are in the same order on both stores.
 *
 * The lookup indexes cover (value, other value, seq): the answer to a lookup is the first entry of
 * an index range. Values are at most 400 characters (checked by the API), which keeps an index
 * entry below PostgreSQL's B-tree limit of 2,704 bytes even for 3-byte UTF-8 characters.
 */
export function lookupTables(dialect: StoreDialect): Migration {
  const codePoint = dialect === 'postgres' ? sql`text COLLATE "C"` : sql`text`;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('lookup_tables')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('name_key', codePoint, (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('creation_date', 'text', (c) => c.notNull())
        .addColumn('last_modification_date', 'text', (c) => c.notNull())
        .addColumn('modification_by', 'text')
        .addUniqueConstraint('lookup_tables_org_name', ['org_id', 'name_key'])
        .execute();

      await db.schema
        .createTable('lookup_table_values')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('table_id', 'text', (c) => c.notNull().references('lookup_tables.id').onDelete('cascade'))
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('value1', codePoint, (c) => c.notNull())
        .addColumn('value2', codePoint, (c) => c.notNull())
        .addColumn('creation_date', 'text', (c) => c.notNull())
        .addColumn('last_modification_date', 'text', (c) => c.notNull())
        .execute();
      // Insertion order: lists, export pages (keyset on seq) and the next seq of an append.
      await db.schema
        .createIndex('lookup_values_seq')
        .on('lookup_table_values')
        .columns(['table_id', 'seq'])
        .unique()
        .execute();
      await db.schema
        .createIndex('lookup_values_v1')
        .on('lookup_table_values')
        .columns(['table_id', 'value1', 'value2', 'seq'])
        .execute();
      await db.schema
        .createIndex('lookup_values_v2')
        .on('lookup_table_values')
        .columns(['table_id', 'value2', 'value1', 'seq'])
        .execute();
      await db.schema.createIndex('exports_resource').on('exports').columns(['kind', 'resource_id']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('exports_resource').execute();
      await db.schema.dropTable('lookup_table_values').execute();
      await db.schema.dropTable('lookup_tables').execute();
    },
  };
}
