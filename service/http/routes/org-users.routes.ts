import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { getInvitationByEmail } from '../../store/repos/invitations.repo.js';
import { countMembers, getMemberByEmail, listMembers, lockMembers, removeMembership, updateMembership, updateUser } from '../../store/repos/users.repo.js';
import type { Db } from '../../store/sql.js';
import { nowIso } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { OrgParams, PageQuery, sendList } from '../schemas/common.js';
import { EmailQuery, OrgUser, OrgUserInput } from '../schemas/user.schema.js';
import { keepAnAdministrator, toOrgUser } from '../user-model.js';

const tags = ['Organization users'];

/** The 404 for an email that is not a member; points to the invitation when there is one. */
async function notAMember(db: Db, orgId: number, email: string): Promise<FerryError> {
  const invitation = await getInvitationByEmail(db, orgId, email);
  if (invitation) {
    return new FerryError(
      'API_NOT_FOUND',
      `${email} has not accepted the invitation to Organization ${orgId} (status ${invitation.statusType}); manage it with /v1/orgs/${orgId}/invitedusers.`,
    );
  }
  return new FerryError('API_NOT_FOUND', `${email} is not a member of Organization ${orgId}.`);
}

/**
 * The members of an Organization (people who accepted an invitation, and its creators). Everyone in
 * the Organization may read them; only Administrators change them (SPEC.md: "Users cannot change
 * the Organization or its members").
 */
const orgUsersRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get('/v1/orgs/:orgId/users', {
    config: { access: 'read' },
    schema: { tags, summary: 'Members of the Organization', params: OrgParams, querystring: PageQuery, response: { 200: z.array(OrgUser) } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const [rows, total] = await Promise.all([listMembers(db, org.id, req.query), countMembers(db, org.id)]);
    return sendList(reply, rows.map(toOrgUser), total);
  });

  app.put('/v1/orgs/:orgId/users', {
    config: { access: 'admin' },
    schema: {
      tags,
      summary: 'Modify a member (email names the member): name and role',
      description: 'Absent or null fields stay as they are. The last Administrator cannot be given another role.',
      params: OrgParams,
      body: OrgUserInput,
      response: { 200: OrgUser },
    },
  }, async (req) => {
    const { org } = orgOf(req);
    const body = req.body;
    const updated = await db.transaction().execute(async (tx) => {
      await lockMembers(tx, deps.store.dialect, org.id);
      const member = await getMemberByEmail(tx, org.id, body.email);
      if (!member) throw await notAMember(tx, org.id, body.email);
      if (body.roleType && body.roleType !== member.roleType) {
        await keepAnAdministrator(tx, org.id, member, body.roleType);
        await updateMembership(tx, org.id, member.id, { roleType: body.roleType });
      }
      const names = {
        ...(body.firstName ? { firstName: body.firstName } : {}),
        ...(body.lastName ? { lastName: body.lastName } : {}),
      };
      if (Object.keys(names).length > 0) await updateUser(tx, member.id, { ...names, modifiedAt: nowIso() });
      return getMemberByEmail(tx, org.id, body.email);
    });
    if (!updated) throw new FerryError('API_NOT_FOUND', `${body.email} is not a member of Organization ${org.id}.`);
    return toOrgUser(updated);
  });

  app.delete('/v1/orgs/:orgId/users', {
    config: { access: 'admin' },
    schema: {
      tags,
      summary: 'Remove a member who accepted the invitation',
      description: 'The user account stays; only its membership of this Organization goes. The last Administrator cannot be removed.',
      params: OrgParams,
      querystring: EmailQuery,
      response: { 204: z.null() },
    },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const { email } = req.query;
    await db.transaction().execute(async (tx) => {
      await lockMembers(tx, deps.store.dialect, org.id);
      const member = await getMemberByEmail(tx, org.id, email);
      if (!member) throw await notAMember(tx, org.id, email);
      await keepAnAdministrator(tx, org.id, member, undefined);
      await removeMembership(tx, org.id, member.id);
    });
    return reply.code(204).send(null);
  });
};

export default orgUsersRoutes;
