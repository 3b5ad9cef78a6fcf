import { sql } from 'kysely';
import { containsInsensitive, type Db } from '../sql.js';
import type { NewOrgRow, OrgRow, OrgUpdate, RoleType } from '../schema.js';

export async function getOrg(db: Db, id: number): Promise<OrgRow | undefined> {
  return db.selectFrom('orgs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertOrg(db: Db, row: NewOrgRow): Promise<OrgRow> {
  return db.insertInto('orgs').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateOrg(db: Db, id: number, patch: OrgUpdate): Promise<void> {
  await db.updateTable('orgs').set(patch).where('id', '=', id).execute();
}

export async function deleteOrg(db: Db, id: number): Promise<void> {
  await db.deleteFrom('orgs').where('id', '=', id).execute();
}

export async function countChildren(db: Db, id: number): Promise<number> {
  const row = await db
    .selectFrom('orgs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('parentId', '=', id)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * The role of a user in an Organization: Administrator when they administer it or an ancestor (an
 * administrator of a parent manages its children), else their own membership's role. Undefined: no access.
 */
export async function roleIn(db: Db, userId: string, orgId: number): Promise<RoleType | undefined> {
  const rows = await sql<{ orgId: number; roleType: RoleType; depth: number }>`
    WITH RECURSIVE chain(id, parent_id, depth) AS (
      SELECT id, parent_id, 0 FROM orgs WHERE id = ${orgId}
      UNION ALL
      SELECT o.id, o.parent_id, c.depth + 1 FROM orgs o JOIN chain c ON o.id = c.parent_id WHERE c.depth < 32
    )
    SELECT m.org_id, m.role_type, c.depth FROM memberships m JOIN chain c ON c.id = m.org_id
    WHERE m.user_id = ${userId}
    ORDER BY c.depth`.execute(db);
  // The highest right wins: an Administrator of an ancestor stays one here even with a lower own membership.
  if (rows.rows.some((r) => r.roleType === 'Administrator')) return 'Administrator';
  return rows.rows.find((r) => Number(r.depth) === 0)?.roleType;
}

export interface OrgListFilter {
  name?: string | undefined;
  nameContains?: string | undefined;
  parentId?: number | undefined;
}

/** IDs of every Organization the user may see: their memberships and the descendants of those they administer. */
function accessibleOrgIds(userId: string) {
  return sql<{ id: number }>`
    WITH RECURSIVE administered(id, depth) AS (
      SELECT org_id, 0 FROM memberships WHERE user_id = ${userId} AND role_type = 'Administrator'
      UNION
      SELECT o.id, a.depth + 1 FROM orgs o JOIN administered a ON o.parent_id = a.id WHERE a.depth < 32
    )
    SELECT id FROM administered UNION SELECT org_id AS id FROM memberships WHERE user_id = ${userId}`;
}

/** Organizations the user can see, filtered, ordered by id. */
export async function listOrgsForUser(db: Db, userId: string, filter: OrgListFilter): Promise<OrgRow[]> {
  const ids = (await accessibleOrgIds(userId).execute(db)).rows.map((r) => Number(r.id));
  if (ids.length === 0) return [];
  let q = db.selectFrom('orgs').selectAll().where('id', 'in', ids);
  if (filter.name !== undefined) q = q.where(sql`lower(name)`, '=', filter.name.toLowerCase());
  if (filter.nameContains !== undefined) q = q.where(containsInsensitive('name', filter.nameContains));
  if (filter.parentId !== undefined)
    q = filter.parentId === 0 ? q.where('parentId', 'is', null) : q.where('parentId', '=', filter.parentId);
  return q.orderBy('id').execute();
}
