import type { StoreDialect } from '../dialect.js';
import { newId, toFlag } from '../../util/values.js';
import type { Db } from '../sql.js';
import type { MembershipRow, MembershipsTable, RoleType, UserRow, UsersTable } from '../schema.js';
import type { Insertable, Updateable } from 'kysely';

export async function getUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('emailKey', '=', email.trim().toLowerCase()).executeTakeFirst();
}

export async function getUser(db: Db, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A new user's row: the account fields a person fills in later start empty. */
export function newUserRow(
  input: {
    email: string;
    firstName: string | null;
    lastName: string | null;
    passwordHash: string | null;
    isApproved: boolean;
  },
  now: string,
): Insertable<UsersTable> {
  return {
    id: newId(),
    email: input.email,
    emailKey: input.email.trim().toLowerCase(),
    firstName: input.firstName,
    lastName: input.lastName,
    company: null,
    country: null,
    state: null,
    postalCode: null,
    phone: null,
    jobTitle: null,
    httpReferrer: null,
    leadSource: null,
    isApproved: toFlag(input.isApproved),
    passwordHash: input.passwordHash,
    createdAt: now,
    modifiedAt: now,
  };
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

export async function addMembership(
  db: Db,
  orgId: number,
  userId: string,
  roleType: RoleType,
  createdAt: string,
): Promise<void> {
  const row: Insertable<MembershipsTable> = { orgId, userId, roleType, createdAt, ...DEFAULT_NOTIFICATIONS };
  await db.insertInto('memberships').values(row).execute();
}

export async function getMembership(db: Db, orgId: number, userId: string): Promise<MembershipRow | undefined> {
  return db
    .selectFrom('memberships')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('userId', '=', userId)
    .executeTakeFirst();
}

export async function updateMembership(
  db: Db,
  orgId: number,
  userId: string,
  patch: Updateable<MembershipsTable>,
): Promise<void> {
  await db.updateTable('memberships').set(patch).where('orgId', '=', orgId).where('userId', '=', userId).execute();
}

export async function removeMembership(db: Db, orgId: number, userId: string): Promise<number> {
  const res = await db
    .deleteFrom('memberships')
    .where('orgId', '=', orgId)
    .where('userId', '=', userId)
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

export type MemberRow = UserRow & { roleType: RoleType };

/** Members of an Organization with their role, ordered by email. */
export async function listMembers(
  db: Db,
  orgId: number,
  page?: { limit: number; offset: number },
): Promise<MemberRow[]> {
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
  const r = await db
    .selectFrom('memberships')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('orgId', '=', orgId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export { isUniqueViolation } from '../sql.js';

/** The lower-cased form of an email, the key users and invitations are matched by. */
export const emailKeyOf = (email: string): string => email.trim().toLowerCase();

/** A member of the Organization by email (case-insensitive), with the member's role. */
export async function getMemberByEmail(db: Db, orgId: number, email: string): Promise<MemberRow | undefined> {
  return db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.userId')
    .selectAll('users')
    .select('memberships.roleType')
    .where('memberships.orgId', '=', orgId)
    .where('users.emailKey', '=', emailKeyOf(email))
    .executeTakeFirst();
}

export async function countAdministrators(db: Db, orgId: number): Promise<number> {
  const r = await db
    .selectFrom('memberships')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('orgId', '=', orgId)
    .where('roleType', '=', 'Administrator')
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * Serializes changes to an Organization's members inside a transaction, so that two concurrent
 * demotions cannot both see "another Administrator remains". PostgreSQL locks the Organization
 * row; SQLite runs one write transaction at a time already.
 */
export async function lockMembers(tx: Db, dialect: StoreDialect, orgId: number): Promise<void> {
  if (dialect === 'postgres') await tx.selectFrom('orgs').select('id').where('id', '=', orgId).forUpdate().execute();
}

/** A membership seen from its user: the Organization's name and tenant, the role and the switches. */
export type UserMembershipRow = MembershipRow & { orgName: string; tenantId: string; isSvcOrg: number };

function membershipsOf(db: Db, userId: string) {
  return db
    .selectFrom('memberships')
    .innerJoin('orgs', 'orgs.id', 'memberships.orgId')
    .selectAll('memberships')
    .select(['orgs.name as orgName', 'orgs.tenantId', 'orgs.isSvcOrg'])
    .where('memberships.userId', '=', userId);
}

/** The user's memberships, oldest first (the first is the user's "own" Organization). */
export async function listUserMemberships(
  db: Db,
  userId: string,
  page?: { limit: number; offset: number },
): Promise<UserMembershipRow[]> {
  let q = membershipsOf(db, userId).orderBy('memberships.createdAt').orderBy('memberships.orgId');
  if (page) q = q.limit(page.limit).offset(page.offset);
  return q.execute();
}

export async function countUserMemberships(db: Db, userId: string): Promise<number> {
  const r = await db
    .selectFrom('memberships')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('userId', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The user's membership in the Organization with this tenant ID. */
export async function getUserMembershipByTenant(
  db: Db,
  userId: string,
  tenantId: string,
): Promise<UserMembershipRow | undefined> {
  return membershipsOf(db, userId).where('orgs.tenantId', '=', tenantId.toLowerCase()).executeTakeFirst();
}

/** Whether the user is a member of any platform-hosted Organization. */
export async function inPlatformHostedOrg(db: Db, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('memberships')
    .innerJoin('orgs', 'orgs.id', 'memberships.orgId')
    .select('orgs.id')
    .where('memberships.userId', '=', userId)
    .where('orgs.isSvcOrg', '=', 1)
    .executeTakeFirst();
  return row !== undefined;
}
