import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { accountOf } from '../../users/account.js';
import { answerInvitation, invitationsFor, registerFromInvitation } from '../../users/invitation-answers.js';
import type { ServiceDeps } from '../deps.js';
import { callerOf } from '../guard.js';
import { toInvitation, toUser } from '../mappers/user.js';
import { PageQuery, sendCreated, sendList } from '../schemas/common.js';
import { Invitation, InvitationParams, RegisterInput, User } from '../schemas/user.schema.js';

const tags = ['Users (own account)'];

/**
 * The invitations addressed to the caller, and the answer to one (SPEC.md's Invitation states):
 * accept makes the caller a member and removes the record; decline leaves it Declined. A person
 * without an account answers by registering with the one-time token the invitation carried.
 */
const userInvitationsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get(
    '/v1/users/invitations',
    {
      config: { access: 'user' },
      schema: {
        tags,
        summary: 'Invitations addressed to your email',
        querystring: PageQuery,
        response: { 200: z.array(Invitation) },
      },
    },
    async (req, reply) => {
      const user = callerOf(req);
      const { rows, total } = await invitationsFor(db, user.email, req.query);
      return sendList(
        reply,
        rows.map((r) => toInvitation(r)),
        total,
      );
    },
  );

  app.put(
    '/v1/users/invitations/:inviteId',
    {
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
    },
    async (req) => {
      const { invitation, status } = await answerInvitation(
        deps.store,
        callerOf(req),
        req.params.inviteId,
        req.query.accept,
      );
      return toInvitation(invitation, status);
    },
  );

  app.post(
    '/v1/users/invitations/:inviteId/register',
    {
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
    },
    async (req, reply) => {
      const created = await registerFromInvitation(deps.store, req.params.inviteId, req.body);
      const { user, membership } = await accountOf(db, created);
      return sendCreated(reply, '/v1/users', toUser(user, membership));
    },
  );
};

export default userInvitationsRoutes;
