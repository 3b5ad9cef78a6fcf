import type { InvitationWithOrgRow } from '../../store/repos/invitations.repo.js';
import type { MemberRow, UserMembershipRow } from '../../store/repos/users.repo.js';
import type { InvitationRow, UserRow } from '../../store/schema.js';
import { fromFlag } from '../../util/values.js';
import type { z } from 'zod';
import type { Invitation, InvitedUser, InvitedUserCreated, OrgUser, User } from '../schemas/user.schema.js';

/** Stored users, memberships and invitations as the API shows them. */

export function toOrgUser(m: MemberRow): OrgUser {
  return { email: m.email, firstName: m.firstName, lastName: m.lastName, roleType: m.roleType };
}

export function toInvitedUser(row: InvitationRow): InvitedUser {
  return {
    email: row.email,
    roleType: row.roleType,
    statusType: row.statusType,
    invitedDate: row.invitedDate,
    message: row.message,
  };
}

/** A new invitation; with the one-time registration token when the invited person has no account yet (shown only here). */
export function toInvitedUserCreated(
  row: InvitationRow,
  token: string | undefined,
): z.infer<typeof InvitedUserCreated> {
  return { ...toInvitedUser(row), ...(token ? { invitationId: row.id, invitationToken: token } : {}) };
}

/** Where an invitation's Location header points: the email keeps its `@` (a valid path character). */
export function invitedUserLocation(orgId: number, email: string): string {
  return `/v1/orgs/${orgId}/invitedusers/${encodeURIComponent(email).replace(/%40/g, '@')}`;
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
