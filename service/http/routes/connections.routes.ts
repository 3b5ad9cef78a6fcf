import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { deleteConnection, getConnection, getConnectionTest, insertConnection, listConnections, updateConnection } from '../../store/repos/connections.repo.js';
import { commandStatus, startConnectionCommand } from '../connection-commands.js';
import { resetMetadataCache } from '../../store/repos/metadata.repo.js';
import type { ConnectionRow, OrgRow } from '../../store/schema.js';
import { newId, nowIso } from '../../util/values.js';
import { installedConnectors, requireAgent } from '../agent-model.js';
import {
  aliasOf,
  connectionNotFound,
  connectorOfInput,
  cryptoTokenOf,
  openProperties,
  resolveProperties,
  sealProperties,
  solutionsUsingConnection,
  toConnection,
  type PlainProperties,
} from '../connection-model.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { OrgParams, pageOf, sendCreated, sendList } from '../schemas/common.js';
import { Connection, ConnectionInput, ConnectionListQuery, ConnectionParams, ConnectionTestParams, TestQuery, TestStarted, TestStatus } from '../schemas/connection.schema.js';

const tags = ['Connections'];


/** Connections: list, create, get, modify, delete, test (SPEC.md "Connections"). */
const connectionsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const catalogue = deps.connectors.catalogue;

  const model = async (org: OrgRow, row: ConnectionRow) =>
    toConnection(row, catalogue, openProperties(deps.secrets, row), cryptoTokenOf(deps.secrets, org), await solutionsUsingConnection(db, row.id));

  const requireConnection = async (orgId: number, id: string): Promise<ConnectionRow> => {
    const row = await getConnection(db, orgId, id);
    if (!row) throw connectionNotFound(orgId, id);
    return row;
  };

  app.get('/v1/orgs/:orgId/connections', {
    config: { access: 'read' },
    schema: { tags, summary: 'Connections (only those usable by agentId when given)', params: OrgParams, querystring: ConnectionListQuery, response: { 200: z.array(Connection) } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const { agentId, name } = req.query;
    let rows = await listConnections(db, org.id, { name });
    if (agentId !== undefined) {
      const agent = await requireAgent(db, org.id, agentId);
      const installed = new Set(installedConnectors(agent).map((c) => c.connectorId.toLowerCase()));
      rows = rows.filter((r) => installed.has(r.connectorId.toLowerCase()) && (agent.isCloudAgent !== 1 || catalogue.get(r.connectorId)?.isCloudSupported === true));
    }
    const page = await Promise.all(pageOf(rows, req.query).map((r) => model(org, r)));
    return sendList(reply, page, rows.length);
  });

  app.post('/v1/orgs/:orgId/connections', {
    config: { access: 'write' },
    schema: { tags, summary: 'Create a Connection; property values encrypted with the crypto token', params: OrgParams, body: ConnectionInput, response: { 201: Connection } },
  }, async (req, reply) => {
    const { org, user } = orgOf(req);
    const body = req.body;
    const manifest = connectorOfInput(catalogue, body.connectorId);
    await deps.connectors.requireInstalled(org.id, manifest.id);
    const props = resolveProperties(manifest, body.properties, cryptoTokenOf(deps.secrets, org));
    await deps.connectors.checkConnectionLimit(org.id, manifest);
    const now = nowIso();
    const row: ConnectionRow = {
      id: newId(),
      orgId: org.id,
      name: body.name,
      nameKey: body.name.toLowerCase(),
      alias: body.alias ?? aliasOf(body.name),
      connectorId: manifest.id,
      color: body.color,
      properties: sealProperties(deps.secrets, props),
      createDateTime: now,
      lastModificationDateTime: now,
      modificationBy: userName(user),
    };
    await insertConnection(db, row);
    return sendCreated(reply, `/v1/orgs/${org.id}/connections/${row.id}`, await model(org, row));
  });

  // Registered before /connections/:connectionId so that "test" is never read as an ID.
  app.get('/v1/orgs/:orgId/connections/test/:commandId', {
    config: { access: 'read' },
    schema: { tags, summary: 'Status of a Connection test: Requested, then Completed with reply SUCCESS or the error', params: ConnectionTestParams, response: { 200: TestStatus } },
  }, async (req) => {
    const { org } = orgOf(req);
    const test = await getConnectionTest(db, org.id, req.params.commandId, 'test');
    if (!test) throw new FerryError('API_NOT_FOUND', `Connection test ${req.params.commandId} was not found in Organization ${org.id}.`);
    return commandStatus(deps, org, test);
  });

  app.post('/v1/orgs/:orgId/connections/test', {
    config: { access: 'write' },
    schema: { tags, summary: 'Test a Connection model without saving it', params: OrgParams, querystring: TestQuery, body: ConnectionInput, response: { 200: TestStarted } },
  }, async (req) => {
    const { org } = orgOf(req);
    const manifest = connectorOfInput(catalogue, req.body.connectorId);
    const props = resolveProperties(manifest, req.body.properties, cryptoTokenOf(deps.secrets, org));
    return startConnectionCommand(deps, req.log, org.id, req.query.agentId, { kind: 'test', connectionId: null, name: req.body.name }, { type: 'testConnection', connectorId: manifest.id, properties: props });
  });

  app.get('/v1/orgs/:orgId/connections/:connectionId', {
    config: { access: 'read' },
    schema: { tags, summary: 'One Connection', params: ConnectionParams, response: { 200: Connection } },
  }, async (req) => {
    const { org } = orgOf(req);
    return model(org, await requireConnection(org.id, req.params.connectionId));
  });

  app.put('/v1/orgs/:orgId/connections/:connectionId', {
    config: { access: 'write' },
    schema: { tags, summary: 'Modify a Connection; omitted protected properties keep their value', params: ConnectionParams, body: ConnectionInput, response: { 200: Connection } },
  }, async (req) => {
    const { org, user } = orgOf(req);
    const body = req.body;
    const current = await requireConnection(org.id, req.params.connectionId);
    const bodyId = body.id ?? body.connectionId;
    if (bodyId && bodyId.toLowerCase() !== current.id) {
      throw new FerryError('API_VALIDATION', 'The Connection ID in the body differs from the one in the path.', { errors: [{ path: 'body.id', message: `must be ${current.id}` }] });
    }
    const manifest = connectorOfInput(catalogue, body.connectorId);
    // Another Connector has other properties: nothing of the old ones is kept.
    const previous: PlainProperties | undefined = manifest.id.toLowerCase() === current.connectorId.toLowerCase() ? openProperties(deps.secrets, current) : undefined;
    const props = resolveProperties(manifest, body.properties, cryptoTokenOf(deps.secrets, org), previous ?? {});
    const found = await updateConnection(db, org.id, current.id, {
      name: body.name,
      nameKey: body.name.toLowerCase(),
      alias: body.alias ?? current.alias,
      connectorId: manifest.id,
      color: body.color,
      properties: sealProperties(deps.secrets, props),
      lastModificationDateTime: nowIso(),
      modificationBy: userName(user),
    });
    if (!found) throw connectionNotFound(org.id, current.id);
    // New properties may reach another datastore: the next metadata call reloads.
    await resetMetadataCache(db, current.id);
    return model(org, await requireConnection(org.id, current.id));
  });

  app.delete('/v1/orgs/:orgId/connections/:connectionId', {
    config: { access: 'write' },
    schema: { tags, summary: 'Delete a Connection that no Solution uses', params: ConnectionParams, response: { 204: z.null() } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const row = await requireConnection(org.id, req.params.connectionId);
    const usedIn = await solutionsUsingConnection(db, row.id);
    if (usedIn.length > 0) {
      throw new FerryError('API_IN_USE', `Connection ${row.name} is used by the Solutions ${usedIn.join(', ')}; change them to another Connection first.`);
    }
    if (!(await deleteConnection(db, org.id, row.id))) throw connectionNotFound(org.id, row.id);
    return reply.code(204).send(null);
  });

  app.post('/v1/orgs/:orgId/connections/:connectionId/test', {
    config: { access: 'write' },
    schema: { tags, summary: 'Test a saved Connection on an Agent; returns the commandId', params: ConnectionParams, querystring: TestQuery, response: { 200: TestStarted } },
  }, async (req) => {
    const { org } = orgOf(req);
    const row = await requireConnection(org.id, req.params.connectionId);
    const props = openProperties(deps.secrets, row);
    return startConnectionCommand(deps, req.log, org.id, req.query.agentId, { kind: 'test', connectionId: row.id, name: row.name }, { type: 'testConnection', connectorId: row.connectorId, properties: props });
  });
};

export default connectionsRoutes;
