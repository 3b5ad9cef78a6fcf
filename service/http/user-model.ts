import { FerryError } from '../../src/errors/ferry-error.js';
import type { StoreDialect } from '../store/dialect.js';
import { deleteInvitation, type InvitationWithOrgRow } from '../store/repos/invitations.repo.js';
import { addMembership, countAdministrators, getMembership, lockMembers, type MemberRow, type UserMembershipRow } from '../store/repos/users.repo.js';
import type { Db } from '../store/sql.js';
import type { InvitationRow, RoleType, UserRow } from '../store/schema.js';
import { fromFlag, nowIso } from '../util/values.js';
import type { Invitation, InvitedUser, OrgUser, User } from './schemas/user.schema.js';

export function toOrgUser(m: MemberRow): OrgUser {
  return { email: m.email, firstName: m.firstName, lastName: m.lastName, roleType: m.roleType };
}

export function toInvitedUser(row: InvitationRow): InvitedUser {
  return { email: row.email, roleType: row.roleType, statusType: row.statusType, invitedDate: row.invitedDate, message: row.message };
}

export function toInvitation(row: InvitationWithOrgRow, status: Invitation['status'] = row.statusType): Invitation {
  return {
    id: row.id,
    orgId: row.orgId,
    orgName: row.orgName,
    sender: row.sender,
    message: row.message,
    invitationDate: row.invitedDate,
    status,
    roleType: row.roleType,
  };
}

/** The User model of a user, with the Organization, role and switches of one membership (or nulls). */
export function toUser(user: UserRow, m?: UserMembershipRow): User {
  const flag = (v: number | undefined): boolean | null => (v === undefined ? null : fromFlag(v));
  return {
    id: user.id,
    email: user.email,
    firstName: user.firstName,
    lastName: user.lastName,
    company: user.company,
    country: user.country,
    state: user.state,
    postalCode: user.postalCode,
    phone: user.phone,
    jobTitle: user.jobTitle,
    httpReferrer: user.httpReferrer,
    leadSource: user.leadSource,
    isApproved: fromFlag(user.isApproved),
    password: null,
    omittedFields: null,
    underPostDefaults: null,
    orgId: m?.orgId ?? null,
    orgName: m?.orgName ?? null,
    tenantId: m?.tenantId ?? null,
    roleType: m?.roleType ?? null,
    connectorActivationEmail: flag(m?.connectorActivationEmail),
    eventFailedJobEmail: flag(m?.eventFailedJobEmail),
    failedJobEmail: flag(m?.failedJobEmail),
    failedRowsEmail: flag(m?.failedRowsEmail),
    heartbeatEmail: flag(m?.heartbeatEmail),
    systemUpdateEmail: flag(m?.systemUpdateEmail),
  };
}

/**
 * Refuses a change that would leave the Organization without an Administrator member: demoting
 * (`newRole` other than Administrator) or removing (`newRole` undefined) its last one. Call inside
 * the transaction that makes the change, after {@link lockMembers}.
 */
export async function keepAnAdministrator(tx: Db, orgId: number, member: MemberRow, newRole: RoleType | undefined): Promise<void> {
  if (member.roleType !== 'Administrator' || newRole === 'Administrator') return;
  if ((await countAdministrators(tx, orgId)) <= 1) {
    const what = newRole === undefined ? 'removed' : `given the ${newRole} role`;
    throw new FerryError('API_CONFLICT', `${member.email} is the last Administrator of Organization ${orgId} and cannot be ${what}; make another member an Administrator first.`);
  }
}

/** The 404 for an email with no invitation: says so when the person already accepted. */
export function noInvitation(orgId: number, email: string, isMember: boolean): FerryError {
  if (isMember) {
    return new FerryError(
      'API_NOT_FOUND',
      `${email} accepted the invitation and is a member of Organization ${orgId}; accepted users are removed with DELETE /v1/orgs/${orgId}/users?email=…`,
    );
  }
  return new FerryError('API_NOT_FOUND', `Organization ${orgId} has no invitation for ${email}.`);
}

/**
 * Accepts a Pending invitation for a user, in a transaction: the user becomes a member with the
 * invited role and the invitation record is removed (SPEC.md's Invitation states). With
 * `tokenHash`, the removal happens only while that token is the invitation's, so a token works once.
 * Answers false when the invitation was answered (or its token used) meanwhile.
 */
export async function acceptInvitation(tx: Db, dialect: StoreDialect, invitation: InvitationRow, userId: string, tokenHash?: string): Promise<boolean> {
  await lockMembers(tx, dialect, invitation.orgId);
  if ((await deleteInvitation(tx, invitation.id, { statusType: 'Pending', ...(tokenHash ? { tokenHash } : {}) })) !== 1) return false;
  if (await getMembership(tx, invitation.orgId, userId)) {
    throw new FerryError('API_CONFLICT', `You are already a member of Organization ${invitation.orgId}.`);
  }
  await addMembership(tx, invitation.orgId, userId, invitation.roleType, nowIso());
  return true;
}

/** Where an invitation's Location header points: the email keeps its `@` (a valid path character). */
export function invitedUserLocation(orgId: number, email: string): string {
  return `/v1/orgs/${orgId}/invitedusers/${encodeURIComponent(email).replace(/%40/g, '@')}`;
}
