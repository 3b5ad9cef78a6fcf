import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { countChildren, deleteOrg, getOrg, listOrgsForUser, roleIn, updateOrg } from '../../store/repos/orgs.repo.js';
import { replaceRules } from '../../store/repos/security-rules.repo.js';
import { listAgents } from '../../store/repos/agents.repo.js';
import { retireAgent } from '../agent-model.js';
import { nowIso } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { assertApiAccess, callerOf, hasApiAccess, orgOf, userName } from '../guard.js';
import { capturePatch, checkDataCenter, checkRules, createOrganization, refusePlatformHosted, toOrganization } from '../org-model.js';
import { decimal, MAX_INT, OrgParams, PageQuery, qbool, sendCreated, sendList } from '../schemas/common.js';
import { ORG_STATUSES, Organization, OrganizationInput } from '../schemas/org.schema.js';
import { rangeContains } from '../../auth/ip-range.js';
import type { OrgRow } from '../../store/schema.js';

const ListQuery = PageQuery.extend({
  expandStatus: qbool(false),
  filterbyAPIAccess: qbool(false),
  name: z.string().max(255).optional(),
  nameContains: z.string().max(255).optional(),
  noPagination: qbool(false),
  parentId: decimal(z.number().int().min(0).max(MAX_INT).optional()),
  status: z.enum(ORG_STATUSES).default('All'),
});

/**
 * The health of an Organization for expandStatus and the status filter. Agents and Solution runs
 * feed it as they come to exist; an Organization with nothing failing is Ok.
 */
function statusOf(_org: OrgRow): { status: (typeof ORG_STATUSES)[number]; statusCause: string | null } {
  return { status: 'Ok', statusCause: null };
}

const orgsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get('/v1/orgs', {
    config: { access: 'user' },
    schema: { tags: ['Organizations'], summary: 'Organizations of the calling user', querystring: ListQuery, response: { 200: z.array(Organization) } },
  }, async (req, reply) => {
    const q = req.query;
    if (q.name !== undefined && q.nameContains !== undefined) {
      throw new FerryError('API_VALIDATION', 'Send either name or nameContains, not both.', {
        errors: [{ path: 'query.nameContains', message: 'not allowed together with name' }],
      });
    }
    const user = callerOf(req);
    const rows = await listOrgsForUser(db, user.id, { name: q.name, nameContains: q.nameContains, parentId: q.parentId });
    // Whether the caller's address may use each Organization's API: filters the list on request,
    // and always decides whether the crypto token may be shown.
    const access = await Promise.all(rows.map((o) => hasApiAccess(deps, o.id, req.ip)));
    const visible = rows.map((org, i) => ({ org, open: access[i] === true })).filter((o) => !q.filterbyAPIAccess || o.open);
    const withStatus = visible.map((o) => ({ ...o, status: statusOf(o.org) }));
    const filtered = q.status === 'All' ? withStatus : withStatus.filter((o) => o.status.status === q.status);
    const page = q.noPagination ? filtered : filtered.slice(q.offset, q.offset + q.limit);
    const models = await Promise.all(
      page.map(async ({ org, open, status }) => {
        const role = (await roleIn(db, user.id, org.id)) ?? 'ReadOnly';
        // The token is a secret of the Organization's API: not shown where its Security Rules refuse the caller.
        return toOrganization(deps, db, org, open ? role : 'ReadOnly', q.expandStatus ? status : undefined);
      }),
    );
    return sendList(reply, models, filtered.length);
  });

  app.post('/v1/orgs', {
    config: { access: 'user' },
    schema: { tags: ['Organizations'], summary: 'Create a child Organization', body: OrganizationInput, response: { 201: Organization } },
  }, async (req, reply) => {
    const user = callerOf(req);
    const body = req.body;
    if (!body.name) throw new FerryError('API_VALIDATION', 'name is required.', { errors: [{ path: 'body.name', message: 'required' }] });
    if (!body.securityRules) {
      throw new FerryError('API_VALIDATION', 'A child Organization needs securityRules in its model.', { errors: [{ path: 'body.securityRules', message: 'required' }] });
    }
    const parent = await parentFor(deps, user.id, body.parentId);
    refusePlatformHosted(parent, 'Creating an Organization');
    await assertApiAccess(deps, parent.id, req.ip);
    deps.rateLimiter.take(parent.id);
    const rules = checkRules(body.securityRules, 'body.securityRules.');
    const dataCenterId = checkDataCenter(body.dataCenterId, false);
    const capture = capturePatch(body);
    const org = await db.transaction().execute(async (tx) =>
      createOrganization(deps, tx, {
        name: body.name as string,
        parentId: parent.id,
        isSvcOrg: false,
        dataCenterId,
        city: body.city,
        country: body.country,
        capture,
        rules,
        administrator: user,
        modificationBy: userName(user),
      }),
    );
    return sendCreated(reply, `/v1/orgs/${org.id}`, await toOrganization(deps, db, org, 'Administrator'));
  });

  app.get('/v1/orgs/:orgId', {
    config: { access: 'read' },
    schema: { tags: ['Organizations'], summary: 'One Organization', params: OrgParams, querystring: z.object({ expandStatus: qbool(false) }), response: { 200: Organization } },
  }, async (req) => {
    const { org, role } = orgOf(req);
    return toOrganization(deps, db, org, role, req.query.expandStatus ? statusOf(org) : undefined);
  });

  app.put('/v1/orgs/:orgId', {
    config: { access: 'admin' },
    schema: { tags: ['Organizations'], summary: 'Modify an Organization', params: OrgParams, body: OrganizationInput, response: { 200: Organization } },
  }, async (req) => {
    const { org, user } = orgOf(req);
    refusePlatformHosted(org, 'Modifying an Organization');
    const body = req.body;
    if (body.dataCenterId !== undefined && body.dataCenterId !== null && body.dataCenterId !== 0 && body.dataCenterId !== org.dataCenterId) {
      throw new FerryError('API_VALIDATION', 'dataCenterId is set when the Organization is created and cannot be changed.', {
        errors: [{ path: 'body.dataCenterId', message: `must stay ${org.dataCenterId}` }],
      });
    }
    if (body.parentId !== undefined && body.parentId !== null && body.parentId !== (org.parentId ?? 0)) {
      throw new FerryError('API_VALIDATION', 'parentId cannot be changed.', { errors: [{ path: 'body.parentId', message: `must stay ${org.parentId ?? 0}` }] });
    }
    const rules = body.securityRules ? checkRules(body.securityRules, 'body.securityRules.') : undefined;
    if (rules && !rules.some((r) => r.apiAccessEnabled === 1 && rangeContains(r.allowedIpRangeStartAddress, r.allowedIpRangeEndAddress, req.ip))) {
      throw new FerryError('API_CONFLICT', `These Security Rules would shut your own address ${req.ip} out of the API; include a rule with apiAccessEnabled that covers it.`);
    }
    const patch = {
      ...capturePatch(body),
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.city !== undefined ? { city: body.city } : {}),
      ...(body.country !== undefined ? { country: body.country } : {}),
      modifiedAt: nowIso(),
      modificationBy: userName(user),
    };
    await db.transaction().execute(async (tx) => {
      await updateOrg(tx, org.id, patch);
      if (rules) await replaceRules(tx, org.id, rules, nowIso());
    });
    const updated = await getOrg(db, org.id);
    if (!updated) throw new FerryError('API_NOT_FOUND', `Organization ${org.id} was not found.`);
    return toOrganization(deps, db, updated, 'Administrator');
  });

  app.delete('/v1/orgs/:orgId', {
    config: { access: 'admin' },
    schema: { tags: ['Organizations'], summary: 'Delete a child Organization', params: OrgParams, response: { 204: z.null() } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    refusePlatformHosted(org, 'Deleting an Organization');
    if (org.parentId === null) {
      throw new FerryError('API_UNSUPPORTED', 'Only child Organizations can be deleted.');
    }
    if ((await countChildren(db, org.id)) > 0) {
      throw new FerryError('API_IN_USE', 'The Organization has child Organizations; delete them first.');
    }
    // Its Agents go first, processes and files included: the database cascade alone would leave a
    // Cloud Agent running and On-Premise Agents connected to an Organization that no longer exists.
    for (const agent of await listAgents(db, org.id)) await retireAgent(deps, agent, req.log);
    await deleteOrg(db, org.id);
    return reply.code(204).send(null);
  });
};

/** The parent of a new child: the one named, or the only Organization the caller administers. */
async function parentFor(deps: ServiceDeps, userId: string, parentId: number | null | undefined): Promise<OrgRow> {
  const { db } = deps.store;
  if (parentId) {
    const parent = await getOrg(db, parentId);
    const role = parent ? await roleIn(db, userId, parent.id) : undefined;
    if (!parent || !role) throw new FerryError('API_NOT_FOUND', `Organization ${parentId} was not found.`);
    if (role !== 'Administrator') throw new FerryError('API_FORBIDDEN_ROLE', `Creating a child Organization needs the Administrator role in Organization ${parentId}.`);
    return parent;
  }
  const administered = (await listOrgsForUser(db, userId, {})).filter((o) => o.parentId === null);
  const own = [];
  for (const o of administered) if ((await roleIn(db, userId, o.id)) === 'Administrator') own.push(o);
  if (own.length === 1 && own[0]) return own[0];
  throw new FerryError('API_VALIDATION', 'Name the parent Organization with parentId.', { errors: [{ path: 'body.parentId', message: 'required' }] });
}

export default orgsRoutes;
