import { sql } from 'kysely';
import { containsInsensitive, type Db } from '../sql.js';
import type { SolutionRow, SolutionsTable, SolutionUpdate } from '../schema.js';

/** The columns a list of Solutions can be sorted by in SQL (Status is derived, so sorted by the domain). */
export type SolutionSortColumn = 'name' | 'solutionType' | 'lastRunTime';

export interface SolutionListFilter {
  /** Part of the name, any case. */
  nameContains?: string | undefined;
  solutionType?: string | undefined;
  sort?: { column: SolutionSortColumn; desc: boolean } | undefined;
  /** Without it, every matching row. */
  page?: { limit: number; offset: number } | undefined;
}

const SORT_COLUMNS: Record<SolutionSortColumn, string> = {
  name: 'name_key',
  solutionType: 'solution_type',
  lastRunTime: 'last_run_time',
};

export async function insertSolution(db: Db, row: SolutionsTable): Promise<void> {
  await db.insertInto('solutions').values(row).execute();
}

export async function getSolution(db: Db, orgId: number, id: string): Promise<SolutionRow | undefined> {
  return db
    .selectFrom('solutions')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('id', '=', id.toLowerCase())
    .executeTakeFirst();
}

/**
 * The Organization's Solutions matching the filter, sorted (missing times last, in either
 * direction; ties by name, then ID) and paged; `total` counts every match.
 */
export async function listSolutions(
  db: Db,
  orgId: number,
  filter: SolutionListFilter = {},
): Promise<{ rows: SolutionRow[]; total: number }> {
  let base = db.selectFrom('solutions').where('orgId', '=', orgId);
  if (filter.nameContains !== undefined && filter.nameContains !== '')
    base = base.where(containsInsensitive('name', filter.nameContains));
  if (filter.solutionType !== undefined) base = base.where('solutionType', '=', filter.solutionType);
  const sort = filter.sort ?? { column: 'name', desc: false };
  const column = sql.ref(SORT_COLUMNS[sort.column]);
  const dir = sort.desc ? 'desc' : 'asc';
  // SQLite sorts NULL first and PostgreSQL last: an explicit key makes both put them last.
  let q = base
    .selectAll()
    .orderBy(sql`(${column} is null)`)
    .orderBy(column, dir)
    .orderBy('nameKey', dir)
    .orderBy('id', dir);
  if (filter.page) q = q.limit(filter.page.limit).offset(filter.page.offset);
  const rows = await q.execute();
  const total = filter.page
    ? Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n)
    : rows.length;
  return { rows, total };
}

export async function updateSolution(db: Db, orgId: number, id: string, patch: SolutionUpdate): Promise<boolean> {
  const res = await db
    .updateTable('solutions')
    .set(patch)
    .where('orgId', '=', orgId)
    .where('id', '=', id.toLowerCase())
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function deleteSolution(db: Db, orgId: number, id: string): Promise<boolean> {
  const res = await db
    .deleteFrom('solutions')
    .where('orgId', '=', orgId)
    .where('id', '=', id.toLowerCase())
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** Deletes every Solution of the Organization (before its Agents, which they reference). */
export async function deleteSolutionsOfOrg(db: Db, orgId: number): Promise<void> {
  await db.deleteFrom('solutions').where('orgId', '=', orgId).execute();
}

/** Whether another Solution of the Organization has this name (case-insensitively). */
export async function solutionNameTaken(db: Db, orgId: number, name: string, exceptId?: string): Promise<boolean> {
  let q = db.selectFrom('solutions').select('id').where('orgId', '=', orgId).where('nameKey', '=', name.toLowerCase());
  if (exceptId) q = q.where('id', '!=', exceptId);
  return (await q.executeTakeFirst()) !== undefined;
}

/** Names of the Solutions the Agent executes, by name. */
export async function solutionNamesUsingAgent(db: Db, agentId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('solutions')
    .select('name')
    .where('agentId', '=', agentId.toLowerCase())
    .orderBy('nameKey')
    .execute();
  return rows.map((r) => r.name);
}

/** Names of the Solutions with the Connection as source or target, by name. */
export async function solutionNamesUsingConnection(db: Db, connectionId: string): Promise<string[]> {
  const id = connectionId.toLowerCase();
  // A Map keeps the Connection IDs it reads from and writes to as JSON arrays of GUIDs (in the case
  // the client sent them): a quoted GUID, ignoring case, matches only itself.
  const quoted = JSON.stringify(id);
  const rows = await db
    .selectFrom('solutions')
    .select('name')
    .where((eb) =>
      eb.or([
        eb('connectionIdForSource', '=', id),
        eb('connectionIdForTarget', '=', id),
        eb.exists(
          eb
            .selectFrom('maps')
            .select('maps.id')
            .whereRef('maps.solutionId', '=', 'solutions.id')
            .where((m) =>
              m.or([containsInsensitive('maps.sources', quoted), containsInsensitive('maps.targets', quoted)]),
            ),
        ),
      ]),
    )
    .orderBy('nameKey')
    .execute();
  return rows.map((r) => r.name);
}
