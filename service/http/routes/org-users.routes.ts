import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { membersOf, modifyMember, removeMember } from '../../users/members.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { toOrgUser } from '../mappers/user.js';
import { OrgParams, PageQuery, sendList } from '../schemas/common.js';
import { EmailQuery, OrgUser, OrgUserInput } from '../schemas/user.schema.js';

const tags = ['Organization users'];

/**
 * The members of an Organization (people who accepted an invitation, and its creators). Everyone in
 * the Organization may read them; only Administrators change them (SPEC.md: "Users cannot change
 * the Organization or its members").
 */
const orgUsersRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get(
    '/v1/orgs/:orgId/users',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Members of the Organization',
        params: OrgParams,
        querystring: PageQuery,
        response: { 200: z.array(OrgUser) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { rows, total } = await membersOf(db, org.id, req.query);
      return sendList(reply, rows.map(toOrgUser), total);
    },
  );

  app.put(
    '/v1/orgs/:orgId/users',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Modify a member (email names the member): name and role',
        description: 'Absent or null fields stay as they are. The last Administrator cannot be given another role.',
        params: OrgParams,
        body: OrgUserInput,
        response: { 200: OrgUser },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toOrgUser(await modifyMember(deps.store, org.id, req.body));
    },
  );

  app.delete(
    '/v1/orgs/:orgId/users',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Remove a member who accepted the invitation',
        description:
          'The user account stays; only its membership of this Organization goes. The last Administrator cannot be removed.',
        params: OrgParams,
        querystring: EmailQuery,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      await removeMember(deps.store, org.id, req.query.email);
      return reply.code(204).send(null);
    },
  );
};

export default orgUsersRoutes;
