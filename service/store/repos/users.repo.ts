import type { Db } from '../sql.js';
import type { MembershipRow, MembershipsTable, RoleType, UserRow, UsersTable } from '../schema.js';
import type { Insertable, Updateable } from 'kysely';

export async function getUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('emailKey', '=', email.trim().toLowerCase()).executeTakeFirst();
}

export async function getUser(db: Db, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertUser(db: Db, row: Insertable<UsersTable>): Promise<UserRow> {
  return db.insertInto('users').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateUser(db: Db, id: string, patch: Updateable<UsersTable>): Promise<void> {
  await db.updateTable('users').set(patch).where('id', '=', id).execute();
}

/** Default notification switches of a new membership: everything a user would want to hear about on. */
export const DEFAULT_NOTIFICATIONS = {
  connectorActivationEmail: 1,
  eventFailedJobEmail: 1,
  failedJobEmail: 1,
  failedRowsEmail: 0,
  heartbeatEmail: 1,
  systemUpdateEmail: 0,
} as const;

export async function addMembership(db: Db, orgId: number, userId: string, roleType: RoleType, createdAt: string): Promise<void> {
  const row: Insertable<MembershipsTable> = { orgId, userId, roleType, createdAt, ...DEFAULT_NOTIFICATIONS };
  await db.insertInto('memberships').values(row).execute();
}

export async function getMembership(db: Db, orgId: number, userId: string): Promise<MembershipRow | undefined> {
  return db.selectFrom('memberships').selectAll().where('orgId', '=', orgId).where('userId', '=', userId).executeTakeFirst();
}

export async function updateMembership(db: Db, orgId: number, userId: string, patch: Updateable<MembershipsTable>): Promise<void> {
  await db.updateTable('memberships').set(patch).where('orgId', '=', orgId).where('userId', '=', userId).execute();
}

export async function removeMembership(db: Db, orgId: number, userId: string): Promise<number> {
  const res = await db.deleteFrom('memberships').where('orgId', '=', orgId).where('userId', '=', userId).executeTakeFirst();
  return Number(res.numDeletedRows);
}

export type MemberRow = UserRow & { roleType: RoleType };

/** Members of an Organization with their role, ordered by email. */
export async function listMembers(db: Db, orgId: number, page?: { limit: number; offset: number }): Promise<MemberRow[]> {
  let q = db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.userId')
    .selectAll('users')
    .select('memberships.roleType')
    .where('memberships.orgId', '=', orgId)
    .orderBy('users.emailKey');
  if (page) q = q.limit(page.limit).offset(page.offset);
  return q.execute();
}

export async function countMembers(db: Db, orgId: number): Promise<number> {
  const r = await db.selectFrom('memberships').select((eb) => eb.fn.countAll<number>().as('n')).where('orgId', '=', orgId).executeTakeFirstOrThrow();
  return Number(r.n);
}
