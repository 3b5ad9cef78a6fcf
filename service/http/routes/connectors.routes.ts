import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { installedConnectors, requireAgent } from '../agent-model.js';
import { builtInConnectors, toConnector, toUiOptions } from '../connector-catalogue.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { OrgParams, pageOf, sendList } from '../schemas/common.js';
import { Connector, ConnectorListQuery, ConnectorParams, UiOptions, UiOptionsQuery } from '../schemas/connection.schema.js';

const tags = ['Connectors'];

/** Connectors: the catalogue of the built-in plugins' manifests (SPEC.md "Connectors"). */
const connectorsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const catalogue = builtInConnectors();

  app.get('/v1/orgs/:orgId/connectors', {
    config: { access: 'read' },
    schema: { tags, summary: 'Connectors (only those installed on AgentId when given)', params: OrgParams, querystring: ConnectorListQuery, response: { 200: z.array(Connector) } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const { agentId, name } = req.query;
    let list = catalogue.all();
    if (agentId !== undefined) {
      const installed = new Set(installedConnectors(await requireAgent(db, org.id, agentId)).map((c) => c.connectorId.toLowerCase()));
      list = list.filter((m) => installed.has(m.id.toLowerCase()));
    }
    if (name !== undefined) list = list.filter((m) => m.name.toLowerCase() === name.toLowerCase());
    return sendList(reply, pageOf(list, req.query).map(toConnector), list.length);
  });

  app.get('/v1/orgs/:orgId/connectors/:connectorId', {
    config: { access: 'read' },
    schema: { tags, summary: 'One Connector', params: ConnectorParams, response: { 200: Connector } },
  }, async (req) => toConnector(catalogue.require(req.params.connectorId)));

  app.get('/v1/orgs/:orgId/connectors/:connectorId/uioptions', {
    config: { access: 'read' },
    schema: { tags, summary: 'The generic connection form of a Connector (uiDecorations)', params: ConnectorParams, querystring: UiOptionsQuery, response: { 200: UiOptions } },
  }, async (req) => toUiOptions(catalogue.require(req.params.connectorId)));
};

export default connectorsRoutes;
