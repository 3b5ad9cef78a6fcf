import fs from 'node:fs';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import type { ConnectorManifest } from '../../../src/protocol/connector-manifest.js';
import { toConnector, toUiOptions } from '../../marketplace/catalogue.js';
import { getOrgConnector, listOrgConnectors, updateOrgConnectorLock } from '../../store/repos/connector-installs.repo.js';
import type { OrgConnectorRow } from '../../store/schema.js';
import { nowIso } from '../../util/values.js';
import { installedConnectors, requireAgent } from '../../agents/agents.js';
import { agentBearer } from '../agent-bearer.js';
import { preconnectProperties } from '../../connections/properties.js';
import { commandStatus } from '../mappers/connection.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { Guid, OrgParams, pageOf, qbool, sendList } from '../schemas/common.js';
import {
  Connector,
  ConnectorListQuery,
  ConnectorParams,
  PreconnectBody,
  PreconnectParams,
  PreconnectQuery,
  TestStatus,
  UiOptions,
  UiOptionsQuery,
  VersionLock,
} from '../schemas/connection.schema.js';

const tags = ['Connectors'];

/**
 * Connectors of an Organization (SPEC.md "Connectors"): the installed ones, their install on all
 * Agents and uninstall, the generic form, the preconnect step, and the version lock. Agents
 * download the packages through `GET /v1/agent/connectors/{id}/{version}/package`.
 */
const connectorsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const installs = deps.connectors;
  const catalogue = installs.catalogue;

  /** The Connector model as the Organization sees it: its installed (or locked) version and its Connection limit. */
  const model = async (orgId: number, m: ConnectorManifest, row: OrgConnectorRow | undefined, ctx?: { limit: number | null; counts: Map<string, number> }) => {
    const limit = ctx ? ctx.limit : await installs.connectionLimit(orgId);
    const counts = ctx ? ctx.counts : await installs.connectionCounts(orgId);
    const reached = limit !== null && (counts.get(m.id.toLowerCase()) ?? 0) >= limit;
    return { ...toConnector(m), version: row?.version ?? m.version, connectionLimitReached: reached };
  };

  app.get('/v1/orgs/:orgId/connectors', {
    config: { access: 'read' },
    schema: { tags, summary: 'Connectors installed in the Organization (only those installed on AgentId when given)', params: OrgParams, querystring: ConnectorListQuery, response: { 200: z.array(Connector) } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const { agentId, name } = req.query;
    const rows = await listOrgConnectors(db, org.id);
    let list = rows.flatMap((row) => {
      const m = catalogue.get(row.connectorId);
      return m ? [{ m, row }] : [];
    });
    if (agentId !== undefined) {
      const installed = new Set(installedConnectors(await requireAgent(db, org.id, agentId)).map((c) => c.connectorId.toLowerCase()));
      list = list.filter(({ m }) => installed.has(m.id.toLowerCase()));
    }
    if (name !== undefined) list = list.filter(({ m }) => m.name.toLowerCase() === name.toLowerCase());
    list.sort((a, b) => a.m.name.localeCompare(b.m.name) || a.m.id.localeCompare(b.m.id));
    const ctx = { limit: await installs.connectionLimit(org.id), counts: await installs.connectionCounts(org.id) };
    const page = await Promise.all(pageOf(list, req.query).map(({ m, row }) => model(org.id, m, row, ctx)));
    return sendList(reply, page, list.length);
  });

  app.get('/v1/orgs/:orgId/connectors/:connectorId', {
    config: { access: 'read' },
    schema: { tags, summary: 'One Connector (installed or offered to the Organization)', params: ConnectorParams, response: { 200: Connector } },
  }, async (req) => {
    const { org } = orgOf(req);
    const m = await installs.requireUsable(org.id, req.params.connectorId);
    return model(org.id, m, await getOrgConnector(db, org.id, m.id));
  });

  app.post('/v1/orgs/:orgId/connectors/:connectorId/install', {
    config: { access: 'admin' },
    schema: {
      tags,
      summary: 'Install the Connector in the Organization and on all its Agents; each Agent reports its progress (GET /v1/marketplace/connectors?orgId=…: agentInstallStatuses)',
      params: ConnectorParams,
      response: { 200: Connector },
    },
  }, async (req) => {
    const { org, user } = orgOf(req);
    const row = await installs.installInOrg(org.id, req.params.connectorId, userName(user));
    return model(org.id, catalogue.require(row.connectorId), row);
  });

  app.delete('/v1/orgs/:orgId/connectors/:connectorId/delete', {
    config: { access: 'admin' },
    schema: { tags, summary: 'Uninstall the Connector from the Organization and all its Agents (409 while Connections use it)', params: ConnectorParams, response: { 204: z.null() } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    await installs.uninstallFromOrg(org.id, req.params.connectorId);
    return reply.code(204).send(null);
  });

  app.get('/v1/orgs/:orgId/connectors/:connectorId/uioptions', {
    config: { access: 'read' },
    schema: { tags, summary: 'The generic connection form of a Connector (uiDecorations)', params: ConnectorParams, querystring: UiOptionsQuery, response: { 200: UiOptions } },
  }, async (req) => {
    const { org } = orgOf(req);
    return toUiOptions(await installs.requireUsable(org.id, req.params.connectorId));
  });

  app.post('/v1/orgs/:orgId/connectors/:connectorId/preconnect', {
    config: { access: 'write' },
    schema: {
      tags,
      summary: 'Run the Connector\'s preconnect step (form check or OAuth start) on an Agent; property values encrypted with the crypto token',
      params: ConnectorParams,
      querystring: PreconnectQuery,
      body: PreconnectBody,
      response: { 200: TestStatus },
    },
  }, async (req) => {
    const { org } = orgOf(req);
    const { manifest } = await installs.requireInstalled(org.id, req.params.connectorId);
    const properties = preconnectProperties(manifest, req.body.properties, deps.connections.cryptoToken(org));
    const { commandId } = await deps.connectionCommands.start(req.log, org.id, req.query.agentId, { kind: 'preconnect', connectionId: null, name: manifest.name }, {
      type: 'preconnect',
      connectorId: manifest.id,
      isOauth: req.query.isOauth,
      properties,
    });
    const row = await deps.connectionCommands.get(org.id, commandId, 'preconnect', `Preconnect ${commandId} was not found.`);
    return commandStatus(deps, org, row);
  });

  app.get('/v1/orgs/:orgId/connectors/:connectorId/preconnect/:commandId', {
    config: { access: 'read' },
    schema: { tags, summary: 'Status of a preconnect step: Requested, then Completed with its reply', params: PreconnectParams, response: { 200: TestStatus } },
  }, async (req) => {
    const { org } = orgOf(req);
    const row = await deps.connectionCommands.get(org.id, req.params.commandId, 'preconnect', `Preconnect ${req.params.commandId} was not found in Organization ${org.id}.`);
    return commandStatus(deps, org, row);
  });

  app.get('/v1/orgs/:orgId/connectors/:connectorId/version', {
    config: { access: 'read' },
    schema: { tags, summary: 'The version lock of an installed Connector', params: ConnectorParams, response: { 200: VersionLock } },
  }, async (req) => {
    const { org } = orgOf(req);
    const { row } = await installs.requireInstalled(org.id, req.params.connectorId);
    return toLock(row);
  });

  app.put('/v1/orgs/:orgId/connectors/:connectorId/version', {
    config: { access: 'admin' },
    schema: {
      tags,
      summary: 'Lock (isLocked=true, the default) or unlock the installed Connector\'s version; only the current production version can be locked',
      params: ConnectorParams,
      querystring: z.object({ isLocked: qbool(true), updateVersion: z.string().min(1).max(50) }),
      response: { 200: VersionLock },
    },
  }, async (req) => {
    const { org, user } = orgOf(req);
    const { manifest, row } = await installs.requireInstalled(org.id, req.params.connectorId);
    const { isLocked, updateVersion } = req.query;
    const now = nowIso();
    if (isLocked) {
      if (updateVersion !== manifest.version || manifest.isHotFix) {
        throw new FerryError(
          'CON_VERSION_NOT_LOCKABLE',
          manifest.isHotFix
            ? `${manifest.name} ${manifest.version} is a hotfix version; only its vendor can lock it.`
            : `Only the current production version of ${manifest.name} (${manifest.version}) can be locked, not ${updateVersion}.`,
          { details: { connectorId: manifest.id, current: manifest.version, requested: updateVersion } },
        );
      }
      await updateOrgConnectorLock(db, org.id, manifest.id, { isLocked: 1, version: updateVersion, lockCreatedAt: row.lockCreatedAt ?? now, lockModifiedAt: now, lockModifiedBy: userName(user) });
    } else {
      await updateOrgConnectorLock(db, org.id, manifest.id, { isLocked: 0, version: row.version, lockCreatedAt: row.lockCreatedAt, lockModifiedAt: now, lockModifiedBy: userName(user) });
      // Unlocked: the Agents move to the current version.
      if (row.version !== manifest.version) await installs.installInOrg(org.id, manifest.id, userName(user));
    }
    const updated = await getOrgConnector(db, org.id, manifest.id);
    if (!updated) throw new FerryError('API_NOT_FOUND', `Connector ${manifest.id} is no longer installed.`);
    return toLock(updated);
  });

  const downloader = agentBearer(db);
  app.get('/v1/agent/connectors/:connectorId/:version/package', {
    config: { access: 'public' },
    onRequest: downloader.onRequest,
    schema: {
      tags: ['Agent protocol'],
      summary: 'An Agent downloads a Connector package (application/gzip, bearer credentials); its SHA-256 came with the install command',
      params: z.object({ connectorId: Guid, version: z.string().min(1).max(50) }),
    },
  }, async (req, reply) => {
    const agent = downloader.agentOf(req);
    const m = await installs.requireUsable(agent.orgId, req.params.connectorId);
    const pkg = await deps.connectors.packages.get(m.id, req.params.version);
    void reply.type('application/gzip').header('Content-Length', String(pkg.size)).header('Content-Disposition', `attachment; filename="${m.id}-${pkg.version}.tgz"`);
    return reply.send(fs.createReadStream(pkg.file));
  });
};

function toLock(row: OrgConnectorRow): z.infer<typeof VersionLock> {
  return {
    isLocked: row.isLocked === 1 ? 'true' : 'false',
    version: row.version,
    creationDate: row.lockCreatedAt,
    lastModificationDate: row.lockModifiedAt,
    modificationBy: row.lockModifiedBy,
  };
}

export default connectorsRoutes;
