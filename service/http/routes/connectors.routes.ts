import fs from 'node:fs';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { agentBearer } from '../agent-bearer.js';
import { commandStatus } from '../mappers/connection.js';
import type { ServiceDeps } from '../deps.js';
import { toOrgConnector, toUiOptions, toVersionLock } from '../mappers/connector.js';
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

/** The Connectors installed in the Organization, their install on all Agents and uninstall. */
const connectorInstallRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const installs = deps.connectors;

  app.get(
    '/v1/orgs/:orgId/connectors',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Connectors installed in the Organization (only those installed on AgentId when given)',
        params: OrgParams,
        querystring: ConnectorListQuery,
        response: { 200: z.array(Connector) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const list = await installs.listInOrg(org.id, req.query);
      return sendList(reply, pageOf(list, req.query).map(toOrgConnector), list.length);
    },
  );

  app.get(
    '/v1/orgs/:orgId/connectors/:connectorId',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'One Connector (installed or offered to the Organization)',
        params: ConnectorParams,
        response: { 200: Connector },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toOrgConnector(await installs.getInOrg(org.id, req.params.connectorId));
    },
  );

  app.post(
    '/v1/orgs/:orgId/connectors/:connectorId/install',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary:
          'Install the Connector in the Organization and on all its Agents; each Agent reports its progress (GET /v1/marketplace/connectors?orgId=…: agentInstallStatuses)',
        params: ConnectorParams,
        response: { 200: Connector },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      const row = await installs.installInOrg(org.id, req.params.connectorId, userName(user));
      return toOrgConnector(await installs.seenBy(org.id, row));
    },
  );

  app.delete(
    '/v1/orgs/:orgId/connectors/:connectorId/delete',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Uninstall the Connector from the Organization and all its Agents (409 while Connections use it)',
        params: ConnectorParams,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      await installs.uninstallFromOrg(org.id, req.params.connectorId, userName(user));
      return reply.code(204).send(null);
    },
  );
};

/** What connecting with a Connector takes: its generic form and its preconnect step. */
const connectorFormRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const installs = deps.connectors;

  app.get(
    '/v1/orgs/:orgId/connectors/:connectorId/uioptions',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'The generic connection form of a Connector (uiDecorations)',
        params: ConnectorParams,
        querystring: UiOptionsQuery,
        response: { 200: UiOptions },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toUiOptions(await installs.requireUsable(org.id, req.params.connectorId));
    },
  );

  app.post(
    '/v1/orgs/:orgId/connectors/:connectorId/preconnect',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          "Run the Connector's preconnect step (form check or OAuth start) on an Agent; property values encrypted with the crypto token",
        params: ConnectorParams,
        querystring: PreconnectQuery,
        body: PreconnectBody,
        response: { 200: TestStatus },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const row = await deps.connectionCommands.preconnect(
        req.log,
        org,
        req.query.agentId,
        req.params.connectorId,
        req.query.isOauth,
        req.body.properties,
      );
      return commandStatus(deps, org, row);
    },
  );

  app.get(
    '/v1/orgs/:orgId/connectors/:connectorId/preconnect/:commandId',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Status of a preconnect step: Requested, then Completed with its reply',
        params: PreconnectParams,
        response: { 200: TestStatus },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const row = await deps.connectionCommands.get(
        org.id,
        req.params.commandId,
        'preconnect',
        `Preconnect ${req.params.commandId} was not found in Organization ${org.id}.`,
      );
      return commandStatus(deps, org, row);
    },
  );
};

/** The version lock of an installed Connector. */
const connectorVersionRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const installs = deps.connectors;

  app.get(
    '/v1/orgs/:orgId/connectors/:connectorId/version',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'The version lock of an installed Connector',
        params: ConnectorParams,
        response: { 200: VersionLock },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const { row } = await installs.requireInstalled(org.id, req.params.connectorId);
      return toVersionLock(row);
    },
  );

  app.put(
    '/v1/orgs/:orgId/connectors/:connectorId/version',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary:
          "Lock (isLocked=true, the default) or unlock the installed Connector's version; only the current production version can be locked",
        params: ConnectorParams,
        querystring: z.object({ isLocked: qbool(true), updateVersion: z.string().min(1).max(50) }),
        response: { 200: VersionLock },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      const { isLocked, updateVersion } = req.query;
      return toVersionLock(
        await installs.setVersionLock(
          org.id,
          req.params.connectorId,
          { isLocked, version: updateVersion },
          userName(user),
        ),
      );
    },
  );
};

/** The package an Agent downloads to install a Connector, with the Agent's bearer credentials. */
const connectorPackageRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const installs = deps.connectors;
  const downloader = agentBearer(deps.store.db);
  app.get(
    '/v1/agent/connectors/:connectorId/:version/package',
    {
      config: { access: 'public' },
      onRequest: downloader.onRequest,
      schema: {
        tags: ['Agent protocol'],
        summary:
          'An Agent downloads a Connector package (application/gzip, bearer credentials); its SHA-256 came with the install command',
        params: z.object({ connectorId: Guid, version: z.string().min(1).max(50) }),
      },
    },
    async (req, reply) => {
      const agent = downloader.agentOf(req);
      const { manifest: m, pkg } = await installs.packageFor(agent.orgId, req.params.connectorId, req.params.version);
      void reply
        .type('application/gzip')
        .header('Content-Length', String(pkg.size))
        .header('Content-Disposition', `attachment; filename="${m.id}-${pkg.version}.tgz"`);
      return reply.send(fs.createReadStream(pkg.file));
    },
  );
};

/**
 * Connectors of an Organization (SPEC.md "Connectors"): the installed ones, their install on all
 * Agents and uninstall, the generic form, the preconnect step, and the version lock. Agents
 * download the packages through `GET /v1/agent/connectors/{id}/{version}/package`.
 */
const connectorsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  await connectorInstallRoutes(app, deps);
  await connectorFormRoutes(app, deps);
  await connectorVersionRoutes(app, deps);
  await connectorPackageRoutes(app, deps);
};

export default connectorsRoutes;
