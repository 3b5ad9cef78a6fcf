import { timingSafeEqual } from 'node:crypto';
import { FerryError } from '../../src/errors/ferry-error.js';
import { hashPassword, sha256 } from '../auth/password.js';
import type { StoreDialect } from '../store/dialect.js';
import {
  countInvitationsFor,
  deleteInvitation,
  getInvitation,
  listInvitationsFor,
  updateInvitation,
  type InvitationWithOrgRow,
} from '../store/repos/invitations.repo.js';
import {
  addMembership,
  getMembership,
  getUserByEmail,
  insertUser,
  isUniqueViolation,
  lockMembers,
  newUserRow,
} from '../store/repos/users.repo.js';
import type { InvitationRow, UserRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import type { Store } from '../store/store.js';
import { fromFlag, nowIso } from '../util/values.js';

/**
 * The invitations addressed to a user, and the answer to one (SPEC.md's Invitation states):
 * accept makes the user a member and removes the record; decline leaves it Declined. A person
 * without an account answers by registering with the one-time token the invitation carried.
 */

const invalidToken = (): FerryError =>
  new FerryError(
    'API_INVITATION_TOKEN_INVALID',
    'The invitation token is not valid, or was already used; ask an Administrator of the Organization to invite you again.',
  );

/** Whether a submitted token is the invitation's (compared as SHA-256, in constant time). */
function tokenMatches(invitation: InvitationWithOrgRow | undefined, token: string): invitation is InvitationWithOrgRow {
  if (!invitation?.tokenHash) return false;
  const given = Buffer.from(sha256(token), 'hex');
  const stored = Buffer.from(invitation.tokenHash, 'hex');
  return given.length === stored.length && timingSafeEqual(given, stored);
}

function refusePlatformHostedInvitation(invitation: InvitationWithOrgRow): void {
  if (fromFlag(invitation.isSvcOrg)) {
    throw new FerryError(
      'API_PLATFORM_HOSTED',
      `Answering an invitation to Organization ${invitation.orgId} is not supported: it is platform-hosted; use the platform's user management.`,
    );
  }
}

/**
 * Accepts a Pending invitation for a user, in a transaction: the user becomes a member with the
 * invited role and the invitation record is removed (SPEC.md's Invitation states). With
 * `tokenHash`, the removal happens only while that token is the invitation's, so a token works once.
 * Answers false when the invitation was answered (or its token used) meanwhile.
 */
export async function acceptInvitation(
  tx: Db,
  dialect: StoreDialect,
  invitation: InvitationRow,
  userId: string,
  tokenHash?: string,
): Promise<boolean> {
  await lockMembers(tx, dialect, invitation.orgId);
  if ((await deleteInvitation(tx, invitation.id, { statusType: 'Pending', ...(tokenHash ? { tokenHash } : {}) })) !== 1)
    return false;
  if (await getMembership(tx, invitation.orgId, userId)) {
    throw new FerryError('API_CONFLICT', `You are already a member of Organization ${invitation.orgId}.`);
  }
  await addMembership(tx, invitation.orgId, userId, invitation.roleType, nowIso());
  return true;
}

/** A page of the invitations addressed to an email, and how many there are. */
export async function invitationsFor(
  db: Db,
  email: string,
  page: { limit: number; offset: number },
): Promise<{ rows: InvitationWithOrgRow[]; total: number }> {
  const [rows, total] = await Promise.all([listInvitationsFor(db, email, page), countInvitationsFor(db, email)]);
  return { rows, total };
}

/**
 * The user's answer to one of their invitations. Accepting needs it Pending; declining a Declined
 * one changes nothing. Answers the invitation and the status it now has.
 */
export async function answerInvitation(
  store: Pick<Store, 'db' | 'dialect'>,
  user: UserRow,
  invitationId: string,
  accept: boolean,
): Promise<{ invitation: InvitationWithOrgRow; status: 'Accepted' | 'Declined' }> {
  const { db } = store;
  const invitation = await getInvitation(db, invitationId);
  // Someone else's invitation is as absent as one that does not exist.
  if (!invitation || invitation.emailKey !== user.emailKey)
    throw new FerryError('API_NOT_FOUND', `You have no invitation ${invitationId}.`);
  refusePlatformHostedInvitation(invitation);
  if (!accept) {
    if (invitation.statusType === 'Pending')
      await updateInvitation(db, invitation.id, { statusType: 'Declined', tokenHash: null, tokenExpiresAt: null });
    return { invitation, status: 'Declined' };
  }
  if (invitation.statusType !== 'Pending') {
    throw new FerryError(
      'API_CONFLICT',
      `You declined this invitation; ask an Administrator of Organization ${invitation.orgId} to invite you again.`,
    );
  }
  const accepted = await db
    .transaction()
    .execute(async (tx) => acceptInvitation(tx, store.dialect, invitation, user.id));
  if (!accepted) throw new FerryError('API_CONFLICT', 'The invitation was answered or withdrawn meanwhile.');
  return { invitation, status: 'Accepted' };
}

export interface Registration {
  token: string;
  password: string;
  firstName: string | null;
  lastName: string | null;
}

/**
 * Creates the account of a person invited without one, from the invitation's one-time token, and
 * accepts the invitation in the same transaction. A wrong or used token is
 * API_INVITATION_TOKEN_INVALID, an expired one API_INVITATION_TOKEN_EXPIRED.
 */
export async function registerFromInvitation(
  store: Pick<Store, 'db' | 'dialect'>,
  invitationId: string,
  registration: Registration,
): Promise<UserRow> {
  const { db } = store;
  const invitation = await getInvitation(db, invitationId);
  if (!tokenMatches(invitation, registration.token)) throw invalidToken();
  if (!invitation.tokenExpiresAt || invitation.tokenExpiresAt <= nowIso()) {
    throw new FerryError(
      'API_INVITATION_TOKEN_EXPIRED',
      `The invitation token expired at ${invitation.tokenExpiresAt ?? 'an unknown time'}; ask an Administrator of the Organization to invite you again.`,
    );
  }
  if (invitation.statusType !== 'Pending')
    throw new FerryError(
      'API_CONFLICT',
      'This invitation was declined; ask an Administrator of the Organization to invite you again.',
    );
  refusePlatformHostedInvitation(invitation);
  const accountExists = (): FerryError =>
    new FerryError(
      'API_CONFLICT',
      `An account with the email ${invitation.email} exists; sign in and accept with PUT /v1/users/invitations/${invitation.id}?accept=true.`,
    );
  if (await getUserByEmail(db, invitation.email)) throw accountExists();

  const passwordHash = await hashPassword(registration.password);
  const now = nowIso();
  try {
    return await db.transaction().execute(async (tx) => {
      // Holding the token proves the invitation reached the address's owner: the email is approved.
      const created = await insertUser(
        tx,
        newUserRow(
          {
            email: invitation.email,
            firstName: registration.firstName,
            lastName: registration.lastName,
            passwordHash,
            isApproved: true,
          },
          now,
        ),
      );
      if (!(await acceptInvitation(tx, store.dialect, invitation, created.id, invitation.tokenHash ?? '')))
        throw invalidToken();
      return created;
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw accountExists();
    throw err;
  }
}
