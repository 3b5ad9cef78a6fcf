import { FerryError } from '../../src/errors/ferry-error.js';
import { newToken, sha256 } from '../auth/password.js';
import {
  countInvitations,
  deleteInvitation,
  getInvitationByEmail,
  insertInvitation,
  listInvitations,
  updateInvitation,
} from '../store/repos/invitations.repo.js';
import { emailKeyOf, getMemberByEmail, getUserByEmail } from '../store/repos/users.repo.js';
import type { InvitationRow, OrgRow, RoleType } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { newId } from '../util/values.js';
import { refusePlatformHosted } from '../orgs/organizations.js';

/**
 * Invitations of an Organization, as its Administrators manage them (SPEC.md's Invited User; the
 * email is the ID). An invitation is Pending until the invited person declines it (Declined) or
 * accepts it (the record goes and the person becomes a member: invitation-answers.ts).
 */

/** How long the registration token of a person without an account stays valid. */
export const INVITATION_TOKEN_DAYS = 7;

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

/** The Organization's invitation of the email, or the 404 that says whether it was accepted. */
export async function invitationOf(db: Db, orgId: number, email: string): Promise<InvitationRow> {
  const row = await getInvitationByEmail(db, orgId, email);
  if (!row) throw noInvitation(orgId, email, (await getMemberByEmail(db, orgId, email)) !== undefined);
  return row;
}

/** A page of the Organization's invitations (Pending and Declined), and how many there are. */
export async function invitationsOf(
  db: Db,
  orgId: number,
  page: { limit: number; offset: number },
): Promise<{ rows: InvitationRow[]; total: number }> {
  const [rows, total] = await Promise.all([listInvitations(db, orgId, page), countInvitations(db, orgId)]);
  return { rows, total };
}

export interface NewInvitation {
  email: string;
  roleType: RoleType;
  /** Must be Pending: only the invited person declines. */
  statusType: string;
  message?: string | null | undefined;
}

/**
 * Invites a person who is neither a member nor invited already. When no user has the email yet,
 * the answer carries a one-time registration token (kept only as its hash), valid
 * {@link INVITATION_TOKEN_DAYS} days.
 */
export async function invite(
  db: Db,
  org: OrgRow,
  input: NewInvitation,
  sender: string,
): Promise<{ row: InvitationRow; token?: string }> {
  // An invitation to a platform-hosted Organization could never be answered (SPEC.md rule 8).
  refusePlatformHosted(org, 'Inviting users');
  if (input.statusType !== 'Pending') {
    throw new FerryError('API_VALIDATION', 'A new invitation is Pending; only the invited person can decline it.', {
      errors: [{ path: 'body.statusType', message: 'must be Pending' }],
    });
  }
  if (await getMemberByEmail(db, org.id, input.email)) {
    throw new FerryError('API_CONFLICT', `${input.email} is already a member of Organization ${org.id}.`);
  }
  const already = await getInvitationByEmail(db, org.id, input.email);
  const duplicate = (status: string) =>
    new FerryError(
      'API_CONFLICT',
      `${input.email} is already invited to Organization ${org.id} (status ${status}); modify that invitation, or delete it and invite again.`,
    );
  if (already) throw duplicate(already.statusType);

  const now = new Date();
  const token = (await getUserByEmail(db, input.email)) ? undefined : newToken();
  const row = await insertInvitation(db, {
    id: newId(),
    orgId: org.id,
    email: input.email,
    emailKey: emailKeyOf(input.email),
    roleType: input.roleType,
    statusType: 'Pending',
    sender,
    message: input.message ?? null,
    invitedDate: now.toISOString(),
    tokenHash: token ? sha256(token) : null,
    tokenExpiresAt: token ? new Date(now.getTime() + INVITATION_TOKEN_DAYS * 86_400_000).toISOString() : null,
  });
  if (!row) throw duplicate('Pending');
  return token ? { row, token } : { row };
}

/** A change to an invitation: role and message. Email and status may be sent back as read, not changed. */
export interface InvitationChange {
  email?: string | undefined;
  roleType?: RoleType | undefined;
  statusType?: string | undefined;
  message?: string | null | undefined;
}

/** Changes an invitation's role and message; answers the invitation after. */
export async function modifyInvitation(
  db: Db,
  orgId: number,
  email: string,
  change: InvitationChange,
): Promise<InvitationRow> {
  const row = await invitationOf(db, orgId, email);
  if (change.email !== undefined && emailKeyOf(change.email) !== row.emailKey) {
    throw new FerryError(
      'API_VALIDATION',
      'The email of an invitation cannot be changed; invite the other address instead.',
      {
        errors: [{ path: 'body.email', message: `must be ${row.email}` }],
      },
    );
  }
  if (change.statusType !== undefined && change.statusType !== row.statusType) {
    throw new FerryError(
      'API_VALIDATION',
      'Only the invited person changes the status of an invitation, by accepting or declining it.',
      {
        errors: [{ path: 'body.statusType', message: `must be ${row.statusType}` }],
      },
    );
  }
  const patch = {
    ...(change.roleType !== undefined ? { roleType: change.roleType } : {}),
    ...(change.message !== undefined ? { message: change.message } : {}),
  };
  if (Object.keys(patch).length > 0) await updateInvitation(db, row.id, patch);
  return { ...row, ...patch };
}

/** Deletes a Pending or Declined invitation; an accepted one no longer exists (the 404 says so). */
export async function withdrawInvitation(db: Db, orgId: number, email: string): Promise<void> {
  const row = await invitationOf(db, orgId, email);
  // Zero rows: answered by the invitee (or deleted) in the meantime.
  if ((await deleteInvitation(db, row.id)) === 0) {
    throw noInvitation(orgId, email, (await getMemberByEmail(db, orgId, email)) !== undefined);
  }
}
