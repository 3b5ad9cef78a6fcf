import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { retireAgent } from '../../agents/agents.js';
import {
  createChildOrganization,
  deleteOrganization,
  listOrganizations,
  modifyOrganization,
  organizationView,
  requestChildOrganization,
} from '../../orgs/organizations.js';
import { orgStatus } from '../../orgs/status.js';
import type { ServiceDeps } from '../deps.js';
import { assertApiAccess, callerOf, orgOf, userName } from '../guard.js';
import { toOrganization } from '../mappers/org.js';
import { decimal, MAX_INT, OrgParams, PageQuery, qbool, sendCreated, sendList } from '../schemas/common.js';
import { ORG_STATUSES, Organization, OrganizationInput } from '../schemas/org.schema.js';

const ListQuery = PageQuery.extend({
  expandStatus: qbool(false),
  filterbyAPIAccess: qbool(false),
  name: z.string().max(255).optional(),
  nameContains: z.string().max(255).optional(),
  noPagination: qbool(false),
  parentId: decimal(z.number().int().min(0).max(MAX_INT).optional()),
  status: z.enum(ORG_STATUSES).default('All'),
});

const orgsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get(
    '/v1/orgs',
    {
      config: { access: 'user' },
      schema: {
        tags: ['Organizations'],
        summary: 'Organizations of the calling user',
        querystring: ListQuery,
        response: { 200: z.array(Organization) },
      },
    },
    async (req, reply) => {
      const q = req.query;
      if (q.name !== undefined && q.nameContains !== undefined) {
        throw new FerryError('API_VALIDATION', 'Send either name or nameContains, not both.', {
          errors: [{ path: 'query.nameContains', message: 'not allowed together with name' }],
        });
      }
      const user = callerOf(req);
      const { items, total } = await listOrganizations(db, user.id, req.ip, {
        name: q.name,
        nameContains: q.nameContains,
        parentId: q.parentId,
        onlyOpen: q.filterbyAPIAccess,
        status: q.status,
        page: q.noPagination ? undefined : { limit: q.limit, offset: q.offset },
      });
      // The token is a secret of the Organization's API: not shown where its Security Rules refuse the caller.
      const models = await Promise.all(
        items.map(async ({ org, role, open, status }) =>
          toOrganization(
            deps.secrets,
            await organizationView(db, org),
            open ? role : 'ReadOnly',
            q.expandStatus ? status : undefined,
          ),
        ),
      );
      return sendList(reply, models, total);
    },
  );

  app.post(
    '/v1/orgs',
    {
      config: { access: 'user' },
      schema: {
        tags: ['Organizations'],
        summary: 'Create a child Organization',
        body: OrganizationInput,
        response: { 201: Organization },
      },
    },
    async (req, reply) => {
      const user = callerOf(req);
      const request = await requestChildOrganization(db, user.id, req.body);
      // Creating a child is a call to its parent's API: the parent's Security Rules and rate limit apply.
      await assertApiAccess(deps, request.parent.id, req.ip);
      await deps.rateLimiter.take(request.parent.id);
      const org = await createChildOrganization(deps, db, request, {
        administrator: user,
        modificationBy: userName(user),
      });
      return sendCreated(
        reply,
        `/v1/orgs/${org.id}`,
        toOrganization(deps.secrets, await organizationView(db, org), 'Administrator'),
      );
    },
  );

  app.get(
    '/v1/orgs/:orgId',
    {
      config: { access: 'read' },
      schema: {
        tags: ['Organizations'],
        summary: 'One Organization',
        params: OrgParams,
        querystring: z.object({ expandStatus: qbool(false) }),
        response: { 200: Organization },
      },
    },
    async (req) => {
      const { org, role } = orgOf(req);
      return toOrganization(
        deps.secrets,
        await organizationView(db, org),
        role,
        req.query.expandStatus ? await orgStatus(db, org) : undefined,
      );
    },
  );

  app.put(
    '/v1/orgs/:orgId',
    {
      config: { access: 'admin' },
      schema: {
        tags: ['Organizations'],
        summary: 'Modify an Organization',
        params: OrgParams,
        body: OrganizationInput,
        response: { 200: Organization },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      const updated = await modifyOrganization(db, org, req.body, req.ip, userName(user));
      // The capture switches travel with each Solution to its Agent: a change applies to the next run.
      deps.assignments
        .syncOrg(org.id)
        .catch((err: unknown) =>
          req.log.warn({ err }, 'agent solutions not reconciled; they are at their next connect'),
        );
      return toOrganization(deps.secrets, await organizationView(db, updated), 'Administrator');
    },
  );

  app.delete(
    '/v1/orgs/:orgId',
    {
      config: { access: 'admin' },
      schema: {
        tags: ['Organizations'],
        summary: 'Delete a child Organization',
        params: OrgParams,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      await deleteOrganization(db, org, (agent) => retireAgent(deps, agent, req.log));
      return reply.code(204).send(null);
    },
  );
};

export default orgsRoutes;
