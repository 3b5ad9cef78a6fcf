import type { Kysely, Migration } from 'kysely';

/**
 * Map validations (SPEC.md "Maps": validate, validationresults, validateformula): one row per
 * POST …/validate, answered by its ID. `model` is the 3.0 model validated, `metadata` the part of
 * the Connections' metadata the Map's Blocks name (what validateformula checks formulas against),
 * `results` the validator's findings. Rows expire (see service/solutions/map-validation.ts) and go
 * with their Map or Solution.
 */
export function mapValidations(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('map_validations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull())
        .addColumn('solution_id', 'text', (c) => c.notNull().references('solutions.id').onDelete('cascade'))
        .addColumn('map_id', 'integer', (c) => c.notNull().references('maps.id').onDelete('cascade'))
        .addColumn('revision', 'integer')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('metadata', 'text')
        .addColumn('valid', 'integer', (c) => c.notNull())
        .addColumn('results', 'text', (c) => c.notNull())
        .addColumn('creation_date', 'text', (c) => c.notNull())
        .addColumn('finish_date', 'text')
        .addColumn('created_by', 'text')
        .execute();
      await db.schema.createIndex('map_validations_created').on('map_validations').column('creation_date').execute();
      await db.schema.createIndex('map_validations_map').on('map_validations').column('map_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('map_validations').execute();
    },
  };
}
