import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { hashPassword, sha256 } from '../../auth/password.js';
import { countInvitationsFor, getInvitation, listInvitationsFor, updateInvitation, type InvitationWithOrgRow } from '../../store/repos/invitations.repo.js';
import { getUserByEmail, insertUser, isUniqueViolation, listUserMemberships, newUserRow } from '../../store/repos/users.repo.js';
import { fromFlag, nowIso } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { callerOf } from '../guard.js';
import { PageQuery, sendCreated, sendList } from '../schemas/common.js';
import { Invitation, InvitationParams, RegisterInput, User } from '../schemas/user.schema.js';
import { acceptInvitation, toInvitation, toUser } from '../user-model.js';

const tags = ['Users (own account)'];

const invalidToken = (): FerryError =>
  new FerryError('API_INVITATION_TOKEN_INVALID', 'The invitation token is not valid, or was already used; ask an Administrator of the Organization to invite you again.');

/** Whether a submitted token is the invitation's (compared as SHA-256, in constant time). */
function tokenMatches(invitation: InvitationWithOrgRow | undefined, token: string): invitation is InvitationWithOrgRow {
  if (!invitation?.tokenHash) return false;
  const given = Buffer.from(sha256(token), 'hex');
  const stored = Buffer.from(invitation.tokenHash, 'hex');
  return given.length === stored.length && timingSafeEqual(given, stored);
}

function refusePlatformHostedInvitation(invitation: InvitationWithOrgRow): void {
  if (fromFlag(invitation.isSvcOrg)) {
    throw new FerryError('API_PLATFORM_HOSTED', `Answering an invitation to Organization ${invitation.orgId} is not supported: it is platform-hosted; use the platform's user management.`);
  }
}

/**
 * The invitations addressed to the caller, and the answer to one (SPEC.md's Invitation states):
 * accept makes the caller a member and removes the record; decline leaves it Declined. A person
 * without an account answers by registering with the one-time token the invitation carried.
 */
const userInvitationsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get('/v1/users/invitations', {
    config: { access: 'user' },
    schema: { tags, summary: 'Invitations addressed to your email', querystring: PageQuery, response: { 200: z.array(Invitation) } },
  }, async (req, reply) => {
    const user = callerOf(req);
    const [rows, total] = await Promise.all([listInvitationsFor(db, user.email, req.query), countInvitationsFor(db, user.email)]);
    return sendList(reply, rows.map((r) => toInvitation(r)), total);
  });

  app.put('/v1/users/invitations/:inviteId', {
    config: { access: 'user' },
    schema: {
      tags,
      summary: 'Accept or decline one of your invitations',
      description:
        'accept=true makes you a member with the invited role and removes the invitation (the answer shows status Accepted); ' +
        'accept=false leaves it Declined. Only Pending invitations can be accepted. Not supported for platform-hosted Organizations.',
      params: InvitationParams,
      querystring: z.object({ accept: z.stringbool() }),
      response: { 200: Invitation },
    },
  }, async (req) => {
    const user = callerOf(req);
    const invitation = await getInvitation(db, req.params.inviteId);
    // Someone else's invitation is as absent as one that does not exist.
    if (!invitation || invitation.emailKey !== user.emailKey) throw new FerryError('API_NOT_FOUND', `You have no invitation ${req.params.inviteId}.`);
    refusePlatformHostedInvitation(invitation);
    if (!req.query.accept) {
      if (invitation.statusType === 'Pending') await updateInvitation(db, invitation.id, { statusType: 'Declined', tokenHash: null, tokenExpiresAt: null });
      return toInvitation(invitation, 'Declined');
    }
    if (invitation.statusType !== 'Pending') {
      throw new FerryError('API_CONFLICT', `You declined this invitation; ask an Administrator of Organization ${invitation.orgId} to invite you again.`);
    }
    const accepted = await db.transaction().execute(async (tx) => acceptInvitation(tx, deps.store.dialect, invitation, user.id));
    if (!accepted) throw new FerryError('API_CONFLICT', 'The invitation was answered or withdrawn meanwhile.');
    return toInvitation(invitation, 'Accepted');
  });

  app.post('/v1/users/invitations/:inviteId/register', {
    config: { access: 'public' },
    schema: {
      tags,
      summary: 'Create your account from an invitation (for people without an account)',
      description:
        'Send the one-time invitationToken the inviting Administrator received. Creates your user (email as invited), ' +
        'accepts the invitation, and answers your user information; then call the API with HTTP Basic email:password. ' +
        'A wrong or used token answers 401, an expired one 410.',
      security: [],
      params: InvitationParams,
      body: RegisterInput,
      response: { 201: User },
    },
  }, async (req, reply) => {
    const body = req.body;
    const invitation = await getInvitation(db, req.params.inviteId);
    if (!tokenMatches(invitation, body.token)) throw invalidToken();
    if (!invitation.tokenExpiresAt || invitation.tokenExpiresAt <= nowIso()) {
      throw new FerryError('API_INVITATION_TOKEN_EXPIRED', `The invitation token expired at ${invitation.tokenExpiresAt ?? 'an unknown time'}; ask an Administrator of the Organization to invite you again.`);
    }
    if (invitation.statusType !== 'Pending') throw new FerryError('API_CONFLICT', 'This invitation was declined; ask an Administrator of the Organization to invite you again.');
    refusePlatformHostedInvitation(invitation);
    const accountExists = (): FerryError =>
      new FerryError('API_CONFLICT', `An account with the email ${invitation.email} exists; sign in and accept with PUT /v1/users/invitations/${invitation.id}?accept=true.`);
    if (await getUserByEmail(db, invitation.email)) throw accountExists();

    const passwordHash = await hashPassword(body.password);
    const now = nowIso();
    let user;
    try {
      user = await db.transaction().execute(async (tx) => {
        const created = // Holding the token proves the invitation reached the address's owner: the email is approved.
        await insertUser(tx, newUserRow({ email: invitation.email, firstName: body.firstName, lastName: body.lastName, passwordHash, isApproved: true }, now));
        if (!(await acceptInvitation(tx, deps.store.dialect, invitation, created.id, invitation.tokenHash ?? ''))) throw invalidToken();
        return created;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw accountExists();
      throw err;
    }
    const [membership] = await listUserMemberships(db, user.id, { limit: 1, offset: 0 });
    return sendCreated(reply, '/v1/users', toUser(user, membership));
  });
};

export default userInvitationsRoutes;
