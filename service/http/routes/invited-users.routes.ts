import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  INVITATION_TOKEN_DAYS,
  invitationOf,
  invitationsOf,
  invite,
  modifyInvitation,
  withdrawInvitation,
} from '../../users/invitations.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { invitedUserLocation, toInvitedUser, toInvitedUserCreated } from '../mappers/user.js';
import { OrgParams, PageQuery, sendCreated, sendList } from '../schemas/common.js';
import {
  EmailParam,
  EmailQuery,
  InvitedUser,
  InvitedUserCreated,
  InvitedUserInput,
  InvitedUserPatch,
} from '../schemas/user.schema.js';

const tags = ['Invited users'];
const InvitedUserParams = OrgParams.extend({ email: EmailParam });

/**
 * Invitations of an Organization (SPEC.md's Invited User; the email is the ID). An invitation is
 * Pending until the invited person declines it (Declined) or accepts it (the record goes and the
 * person becomes a member). Administrators manage invitations; everyone in the Organization reads.
 */
const invitedUsersRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get(
    '/v1/orgs/:orgId/invitedusers',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Invitations of the Organization (Pending and Declined)',
        params: OrgParams,
        querystring: PageQuery,
        response: { 200: z.array(InvitedUser) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { rows, total } = await invitationsOf(db, org.id, req.query);
      return sendList(reply, rows.map(toInvitedUser), total);
    },
  );

  app.post(
    '/v1/orgs/:orgId/invitedusers',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Invite a person',
        description:
          'statusType must be Pending. When no user has the email yet, the answer also carries invitationId and a one-time ' +
          `invitationToken (valid ${INVITATION_TOKEN_DAYS} days, shown only here) with which the person creates an account ` +
          'at POST /v1/users/invitations/{invitationId}/register.',
        params: OrgParams,
        body: InvitedUserInput,
        response: { 201: InvitedUserCreated },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      const { row, token } = await invite(db, org, req.body, userName(user));
      return sendCreated(reply, invitedUserLocation(org.id, row.email), toInvitedUserCreated(row, token));
    },
  );

  app.get(
    '/v1/orgs/:orgId/invitedusers/:email',
    {
      config: { access: 'read' },
      schema: { tags, summary: 'One invitation, by email', params: InvitedUserParams, response: { 200: InvitedUser } },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toInvitedUser(await invitationOf(db, org.id, req.params.email));
    },
  );

  app.put(
    '/v1/orgs/:orgId/invitedusers/:email',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Modify an invitation: roleType and message',
        description: 'email and statusType may be sent back as read, but not changed.',
        params: InvitedUserParams,
        body: InvitedUserPatch,
        response: { 200: InvitedUser },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toInvitedUser(await modifyInvitation(db, org.id, req.params.email, req.body));
    },
  );

  app.delete(
    '/v1/orgs/:orgId/invitedusers',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Delete a Pending or Declined invitation',
        description:
          'An accepted invitation no longer exists: remove the member with DELETE /v1/orgs/{orgId}/users?email=.',
        params: OrgParams,
        querystring: EmailQuery,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      await withdrawInvitation(db, orgOf(req).org.id, req.query.email);
      return reply.code(204).send(null);
    },
  );
};

export default invitedUsersRoutes;
