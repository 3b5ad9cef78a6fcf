import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { newToken, sha256 } from '../../auth/password.js';
import { countInvitations, deleteInvitation, getInvitationByEmail, insertInvitation, listInvitations, updateInvitation } from '../../store/repos/invitations.repo.js';
import { emailKeyOf, getMemberByEmail, getUserByEmail } from '../../store/repos/users.repo.js';
import type { Db } from '../../store/sql.js';
import type { InvitationRow } from '../../store/schema.js';
import { newId } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { refusePlatformHosted } from '../org-model.js';
import { OrgParams, PageQuery, sendCreated, sendList } from '../schemas/common.js';
import { EmailParam, EmailQuery, InvitedUser, InvitedUserCreated, InvitedUserInput, InvitedUserPatch } from '../schemas/user.schema.js';
import { invitedUserLocation, noInvitation, toInvitedUser } from '../user-model.js';

/** How long the registration token of a person without an account stays valid. */
export const INVITATION_TOKEN_DAYS = 7;

const tags = ['Invited users'];
const InvitedUserParams = OrgParams.extend({ email: EmailParam });

/** The Organization's invitation of the email, or the 404 that says whether it was accepted. */
async function invitationOf(db: Db, orgId: number, email: string): Promise<InvitationRow> {
  const row = await getInvitationByEmail(db, orgId, email);
  if (!row) throw noInvitation(orgId, email, (await getMemberByEmail(db, orgId, email)) !== undefined);
  return row;
}

/**
 * Invitations of an Organization (SPEC.md's Invited User; the email is the ID). An invitation is
 * Pending until the invited person declines it (Declined) or accepts it (the record goes and the
 * person becomes a member). Administrators manage invitations; everyone in the Organization reads.
 */
const invitedUsersRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get('/v1/orgs/:orgId/invitedusers', {
    config: { access: 'read' },
    schema: { tags, summary: 'Invitations of the Organization (Pending and Declined)', params: OrgParams, querystring: PageQuery, response: { 200: z.array(InvitedUser) } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const [rows, total] = await Promise.all([listInvitations(db, org.id, req.query), countInvitations(db, org.id)]);
    return sendList(reply, rows.map(toInvitedUser), total);
  });

  app.post('/v1/orgs/:orgId/invitedusers', {
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
  }, async (req, reply) => {
    const { org, user } = orgOf(req);
    const body = req.body;
    // An invitation to a platform-hosted Organization could never be answered (SPEC.md rule 8).
    refusePlatformHosted(org, 'Inviting users');
    if (body.statusType !== 'Pending') {
      throw new FerryError('API_VALIDATION', 'A new invitation is Pending; only the invited person can decline it.', {
        errors: [{ path: 'body.statusType', message: 'must be Pending' }],
      });
    }
    if (await getMemberByEmail(db, org.id, body.email)) {
      throw new FerryError('API_CONFLICT', `${body.email} is already a member of Organization ${org.id}.`);
    }
    const already = await getInvitationByEmail(db, org.id, body.email);
    const duplicate = (status: string) =>
      new FerryError('API_CONFLICT', `${body.email} is already invited to Organization ${org.id} (status ${status}); modify that invitation, or delete it and invite again.`);
    if (already) throw duplicate(already.statusType);

    const now = new Date();
    const token = (await getUserByEmail(db, body.email)) ? undefined : newToken();
    const row = await insertInvitation(db, {
      id: newId(),
      orgId: org.id,
      email: body.email,
      emailKey: emailKeyOf(body.email),
      roleType: body.roleType,
      statusType: 'Pending',
      sender: userName(user),
      message: body.message ?? null,
      invitedDate: now.toISOString(),
      tokenHash: token ? sha256(token) : null,
      tokenExpiresAt: token ? new Date(now.getTime() + INVITATION_TOKEN_DAYS * 86_400_000).toISOString() : null,
    });
    if (!row) throw duplicate('Pending');
    const model = { ...toInvitedUser(row), ...(token ? { invitationId: row.id, invitationToken: token } : {}) };
    return sendCreated(reply, invitedUserLocation(org.id, row.email), model);
  });

  app.get('/v1/orgs/:orgId/invitedusers/:email', {
    config: { access: 'read' },
    schema: { tags, summary: 'One invitation, by email', params: InvitedUserParams, response: { 200: InvitedUser } },
  }, async (req) => {
    const { org } = orgOf(req);
    return toInvitedUser(await invitationOf(db, org.id, req.params.email));
  });

  app.put('/v1/orgs/:orgId/invitedusers/:email', {
    config: { access: 'admin' },
    schema: {
      tags,
      summary: 'Modify an invitation: roleType and message',
      description: 'email and statusType may be sent back as read, but not changed.',
      params: InvitedUserParams,
      body: InvitedUserPatch,
      response: { 200: InvitedUser },
    },
  }, async (req) => {
    const { org } = orgOf(req);
    const body = req.body;
    const row = await invitationOf(db, org.id, req.params.email);
    if (body.email !== undefined && emailKeyOf(body.email) !== row.emailKey) {
      throw new FerryError('API_VALIDATION', 'The email of an invitation cannot be changed; invite the other address instead.', {
        errors: [{ path: 'body.email', message: `must be ${row.email}` }],
      });
    }
    if (body.statusType !== undefined && body.statusType !== row.statusType) {
      throw new FerryError('API_VALIDATION', 'Only the invited person changes the status of an invitation, by accepting or declining it.', {
        errors: [{ path: 'body.statusType', message: `must be ${row.statusType}` }],
      });
    }
    const patch = {
      ...(body.roleType !== undefined ? { roleType: body.roleType } : {}),
      ...(body.message !== undefined ? { message: body.message } : {}),
    };
    if (Object.keys(patch).length > 0) await updateInvitation(db, row.id, patch);
    return toInvitedUser({ ...row, ...patch });
  });

  app.delete('/v1/orgs/:orgId/invitedusers', {
    config: { access: 'admin' },
    schema: {
      tags,
      summary: 'Delete a Pending or Declined invitation',
      description: 'An accepted invitation no longer exists: remove the member with DELETE /v1/orgs/{orgId}/users?email=.',
      params: OrgParams,
      querystring: EmailQuery,
      response: { 204: z.null() },
    },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const row = await invitationOf(db, org.id, req.query.email);
    // Zero rows: answered by the invitee (or deleted) in the meantime.
    if ((await deleteInvitation(db, row.id)) === 0) {
      throw noInvitation(org.id, req.query.email, (await getMemberByEmail(db, org.id, req.query.email)) !== undefined);
    }
    return reply.code(204).send(null);
  });
};

export default invitedUsersRoutes;
