import type { Kysely, Migration } from 'kysely';

/**
 * A Solution's schedule: the model as the client last set it (JSON, null = on demand) and the
 * compiled rule due times are computed from (JSON, the time zone resolved to its IANA name).
 */
export function solutionSchedules(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('solutions').addColumn('schedule', 'text').execute();
      await db.schema.alterTable('solutions').addColumn('schedule_rule', 'text').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('solutions').dropColumn('schedule_rule').execute();
      await db.schema.alterTable('solutions').dropColumn('schedule').execute();
    },
  };
}
