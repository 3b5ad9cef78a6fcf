import type { Insertable, Updateable } from 'kysely';
import type { Db } from '../sql.js';
import type { InvitationRow, InvitationsTable } from '../schema.js';
import { emailKeyOf, isUniqueViolation } from './users.repo.js';

/** An invitation with the name and kind of its Organization, as the invited person sees it. */
export type InvitationWithOrgRow = InvitationRow & { orgName: string; isSvcOrg: number };

/** Invitations of an Organization, oldest first. */
export async function listInvitations(
  db: Db,
  orgId: number,
  page: { limit: number; offset: number },
): Promise<InvitationRow[]> {
  return db
    .selectFrom('invitations')
    .selectAll()
    .where('orgId', '=', orgId)
    .orderBy('invitedDate')
    .orderBy('emailKey')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export async function countInvitations(db: Db, orgId: number): Promise<number> {
  const r = await db
    .selectFrom('invitations')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('orgId', '=', orgId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The Organization's invitation of this email (case-insensitive). */
export async function getInvitationByEmail(db: Db, orgId: number, email: string): Promise<InvitationRow | undefined> {
  return db
    .selectFrom('invitations')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('emailKey', '=', emailKeyOf(email))
    .executeTakeFirst();
}

function withOrg(db: Db) {
  return db
    .selectFrom('invitations')
    .innerJoin('orgs', 'orgs.id', 'invitations.orgId')
    .selectAll('invitations')
    .select(['orgs.name as orgName', 'orgs.isSvcOrg']);
}

export async function getInvitation(db: Db, id: string): Promise<InvitationWithOrgRow | undefined> {
  return withOrg(db).where('invitations.id', '=', id.toLowerCase()).executeTakeFirst();
}

/** Invitations addressed to an email, in any Organization, oldest first. */
export async function listInvitationsFor(
  db: Db,
  email: string,
  page: { limit: number; offset: number },
): Promise<InvitationWithOrgRow[]> {
  return withOrg(db)
    .where('invitations.emailKey', '=', emailKeyOf(email))
    .orderBy('invitations.invitedDate')
    .orderBy('invitations.id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export async function countInvitationsFor(db: Db, email: string): Promise<number> {
  const r = await db
    .selectFrom('invitations')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('emailKey', '=', emailKeyOf(email))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Inserts an invitation; undefined when the Organization has already invited that email. */
export async function insertInvitation(db: Db, row: Insertable<InvitationsTable>): Promise<InvitationRow | undefined> {
  try {
    return await db.insertInto('invitations').values(row).returningAll().executeTakeFirstOrThrow();
  } catch (err) {
    if (isUniqueViolation(err)) return undefined;
    throw err;
  }
}

export async function updateInvitation(db: Db, id: string, patch: Updateable<InvitationsTable>): Promise<void> {
  await db.updateTable('invitations').set(patch).where('id', '=', id).execute();
}

/**
 * Removes an invitation and answers how many rows went (0 or 1). With conditions, only while the
 * invitation still has that token or status: of two requests racing with one token, exactly one
 * sees 1.
 */
export async function deleteInvitation(
  db: Db,
  id: string,
  only: { tokenHash?: string; statusType?: InvitationRow['statusType'] } = {},
): Promise<number> {
  let q = db.deleteFrom('invitations').where('id', '=', id);
  if (only.tokenHash !== undefined) q = q.where('tokenHash', '=', only.tokenHash);
  if (only.statusType !== undefined) q = q.where('statusType', '=', only.statusType);
  const res = await q.executeTakeFirst();
  return Number(res.numDeletedRows);
}
