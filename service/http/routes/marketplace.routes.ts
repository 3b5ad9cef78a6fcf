import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import type { ConnectorManifest } from '../../../src/protocol/connector-manifest.js';
import { listAgents } from '../../store/repos/agents.repo.js';
import {
  addCustomer,
  getOrgConnector,
  hasCustomerAccess,
  listAgentInstalls,
  listCustomers,
  managedConnectorVendor,
  orgsWithConnector,
  removeCustomer,
} from '../../store/repos/connector-installs.repo.js';
import { getOrg, listOrgsForUser, roleIn } from '../../store/repos/orgs.repo.js';
import { FINAL_INSTALL_STATUSES, type AgentConnectorInstallRow, type InstallStatus } from '../../store/schema.js';
import { nowIso } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { assertApiAccess, callerOf, orgOf, userName } from '../guard.js';
import { decimal, MAX_INT, OrgParams, pageOf, PageQuery, sendList } from '../schemas/common.js';
import { Customer, MarketplaceConnector, MarketplaceQuery } from '../schemas/marketplace.schema.js';

/**
 * The Marketplace (SPEC.md "Marketplace Connector"): every Connector the caller's Organization may
 * install, with its install state there and per Agent; and the customers of a Managed Connector,
 * which its vendor's Organization grants and removes.
 */
const marketplaceRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const installs = deps.connectors;
  const catalogue = installs.catalogue;

  const matches = (m: ConnectorManifest, byName?: string, byDescription?: string): boolean => {
    if (byName === undefined && byDescription === undefined) return true;
    const name = byName !== undefined && m.name.toLowerCase().includes(byName.toLowerCase());
    const description = byDescription !== undefined && m.description.toLowerCase().includes(byDescription.toLowerCase());
    return name || description;
  };

  /** One Marketplace entry as an Organization sees it (orgId undefined: no Organization context). */
  const entry = async (m: ConnectorManifest, orgId: number | undefined): Promise<MarketplaceConnector> => {
    const installed = orgId !== undefined ? await getOrgConnector(db, orgId, m.id) : undefined;
    const agents = orgId !== undefined ? await listAgents(db, orgId) : [];
    const names = new Map(agents.map((a) => [a.id, a.name]));
    const rows = orgId !== undefined ? await listAgentInstalls(db, orgId, m.id) : [];
    const statuses = rows.filter((r) => names.has(r.agentId)).map((r) => ({
      agentId: r.agentId,
      agentName: names.get(r.agentId) ?? '',
      operation: r.operation,
      version: r.version,
      status: r.status,
      error: r.error,
      lastModificationDate: r.updatedAt,
    }));
    const overall = aggregate(rows);
    const vendor = orgId !== undefined && !m.isPublic ? await managedConnectorVendor(db, m.id) : undefined;
    const associated = orgId !== undefined && !m.isPublic && (vendor === orgId || (await hasCustomerAccess(db, m.id, orgId)));
    const roles = new Set(m.solutionRoles);
    return {
      adapterTypeId: m.id,
      name: m.name,
      description: m.description,
      providerName: m.vendor,
      link: m.link ?? m.helpUrl ?? null,
      logoUrl: m.logoUrl ?? null,
      logo: null,
      contactUrl: m.contactUrl ?? null,
      certificationDate: m.certificationDate ?? null,
      lastModificationDate: installed?.lockModifiedAt ?? installed?.installedAt ?? null,
      version: versionParts(installed?.version ?? m.version),
      installed: installed !== undefined,
      isAssociated: associated,
      isFree: m.isFree,
      isHotFix: m.isHotFix,
      isLocked: installed?.isLocked === 1,
      isPublic: m.isPublic,
      requiresJava: false,
      supportsCloudAgents: m.isCloudSupported,
      isisSource: roles.has('Svc.IS2.Source'),
      isisTarget: roles.has('Svc.IS2.Target'),
      ismsSource: roles.has('Svc.MS2.Source'),
      ismsTarget: roles.has('Svc.MS2.Target'),
      isrsSource: roles.has('Svc.RS.Source'),
      isrsTarget: roles.has('Svc.RS.Target'),
      agentId: overall?.agentId ?? null,
      agentName: overall ? (names.get(overall.agentId) ?? null) : null,
      status: overall?.status ?? (installed ? 'Installed' : null),
      agentInstallStatuses: statuses,
    };
  };

  app.get('/v1/marketplace/connectors', {
    config: { access: 'user' },
    schema: {
      tags: ['Connectors'],
      summary: 'Marketplace Connectors: with orgId, all the Organization may install (private Managed ones included) with its install state; without, the public ones installed in any of your Organizations',
      querystring: MarketplaceQuery,
      response: { 200: z.array(MarketplaceConnector) },
    },
  }, async (req, reply) => {
    const user = callerOf(req);
    const { orgId, filterByName, filterByDescription } = req.query;
    let list: ConnectorManifest[];
    if (orgId !== undefined) {
      if (!(await getOrg(db, orgId)) || !(await roleIn(db, user.id, orgId))) throw new FerryError('API_NOT_FOUND', `Organization ${orgId} was not found.`);
      await assertApiAccess(deps, orgId, req.ip);
      list = [];
      for (const m of catalogue.all()) if (await installs.canUse(db, orgId, m)) list.push(m);
    } else {
      const mine = (await listOrgsForUser(db, user.id, {})).map((o) => o.id);
      list = [];
      for (const m of catalogue.all()) if (m.isPublic && (await orgsWithConnector(db, m.id, mine)).length > 0) list.push(m);
    }
    list = list.filter((m) => matches(m, filterByName, filterByDescription));
    const page = await Promise.all(pageOf(list, req.query).map((m) => entry(m, orgId)));
    return sendList(reply, page, list.length);
  });

  const CustomerParams = OrgParams.extend({ connectorId: z.guid() });
  const requireVendor = async (orgId: number, connectorId: string): Promise<ConnectorManifest> => {
    const m = catalogue.get(connectorId);
    if (!m || m.isPublic || (await managedConnectorVendor(db, m.id)) !== orgId) {
      throw new FerryError('CON_NOT_MANAGED', `Organization ${orgId} does not manage Connector ${connectorId}.`, { details: { connectorId } });
    }
    return m;
  };

  app.get('/v1/orgs/:orgId/managedconnectors/:connectorId/customers', {
    config: { access: 'admin' },
    schema: { tags: ['Connectors'], summary: 'Customers with access to a Managed Connector ({orgId} is the vendor\'s managing Organization)', params: CustomerParams, querystring: PageQuery, response: { 200: z.array(Customer) } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const m = await requireVendor(org.id, req.params.connectorId);
    const rows = await listCustomers(db, m.id);
    return sendList(reply, pageOf(rows, req.query).map(toCustomer), rows.length);
  });

  app.post('/v1/orgs/:orgId/managedconnectors/:connectorId/customers/:id', {
    config: { access: 'admin' },
    schema: {
      tags: ['Connectors'],
      summary: 'Grant a customer Organization access to a Managed Connector and install it there (on its Agents as they connect)',
      params: CustomerParams.extend({ id: decimal(z.number().int().positive().max(MAX_INT)) }),
      response: { 200: Customer },
    },
  }, async (req) => {
    const { org, user } = orgOf(req);
    const m = await requireVendor(org.id, req.params.connectorId);
    const customer = await getOrg(db, req.params.id);
    if (!customer) throw new FerryError('API_NOT_FOUND', `Organization ${req.params.id} was not found.`);
    await addCustomer(db, { connectorId: m.id, orgId: customer.id, provisionedBy: userName(user), provisionedDate: nowIso() });
    await installs.installInOrg(customer.id, m.id, userName(user));
    const row = (await listCustomers(db, m.id)).find((c) => c.orgId === customer.id);
    if (!row) throw new FerryError('API_NOT_FOUND', `Organization ${customer.id} is not a customer of Connector ${m.id}.`);
    return toCustomer(row);
  });

  app.delete('/v1/orgs/:orgId/managedconnectors/:connectorId/customers/:id', {
    config: { access: 'admin' },
    schema: {
      tags: ['Connectors'],
      summary: 'Remove a customer\'s access to a Managed Connector (uninstalls it there; 409 while its Connections use it)',
      params: CustomerParams.extend({ id: decimal(z.number().int().positive().max(MAX_INT)) }),
      response: { 204: z.null() },
    },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const m = await requireVendor(org.id, req.params.connectorId);
    if (!(await hasCustomerAccess(db, m.id, req.params.id))) throw new FerryError('API_NOT_FOUND', `Organization ${req.params.id} is not a customer of Connector ${m.id}.`);
    if (await getOrgConnector(db, req.params.id, m.id)) await installs.uninstallFromOrg(req.params.id, m.id);
    await removeCustomer(db, m.id, req.params.id);
    return reply.code(204).send(null);
  });
};

function toCustomer(row: { orgId: number; orgName: string; provisionedBy: string; provisionedDate: string }): Customer {
  return { orgId: row.orgId, orgName: row.orgName, provisionedBy: row.provisionedBy, provisionedDate: row.provisionedDate };
}

/** SPEC's version parts of a semantic version: major.minor.build, revision 0 (majorRevision/minorRevision its 16-bit halves). */
export function versionParts(version: string): MarketplaceConnector['version'] {
  const [major = 0, minor = 0, build = 0, revision = 0] = version
    .split(/[-+]/)[0]!
    .split('.')
    .map((p) => Number.parseInt(p, 10) || 0);
  return { major, minor, build, revision, majorRevision: revision >> 16, minorRevision: revision & 0xffff };
}

/** The install that speaks for all Agents: the least advanced unfinished one, else a failure, else any. */
function aggregate(rows: readonly AgentConnectorInstallRow[]): AgentConnectorInstallRow | undefined {
  const open = rows.filter((r) => !FINAL_INSTALL_STATUSES.includes(r.status));
  if (open.length > 0) return open.sort((a, b) => rank(a.status) - rank(b.status))[0];
  return rows.find((r) => r.status === 'InstallFailed' || r.status === 'InstallTimedOut') ?? rows[0];
}

const ORDER: readonly InstallStatus[] = ['SendingCommandToTheAgent', 'AgentReceivedCommand', 'AgentDownloadingConnectorUpdate', 'AgentServiceRestarting'];
const rank = (s: InstallStatus): number => ORDER.indexOf(s);

export default marketplaceRoutes;
