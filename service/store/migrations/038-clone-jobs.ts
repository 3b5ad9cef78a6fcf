import type { Kysely, Migration } from 'kysely';

/** `clone_jobs`: the copies of Solutions into Organizations (SPEC.md "Clone job"; service/solutions/clones.ts). */
export function cloneJobs(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('clone_jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'integer', (c) => c.notNull())
        .addColumn('solution_id', 'text', (c) => c.notNull())
        .addColumn('dest_org_id', 'integer', (c) => c.notNull())
        .addColumn('dest_agent_id', 'text', (c) => c.notNull())
        .addColumn('by_reference', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('cloned_solution_id', 'text', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('creation_date', 'text', (c) => c.notNull())
        .addColumn('finish_date', 'text')
        .addColumn('is_complete', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('has_error', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('message', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('runner', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('clone_jobs_solution')
        .on('clone_jobs')
        .columns(['solution_id', 'creation_date'])
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('clone_jobs').execute();
    },
  };
}
