import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { solutionsUsingConnection } from '../../connections/connections.js';
import type { ConnectionRow, OrgRow } from '../../store/schema.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { commandStatus, testStarted, toConnection } from '../mappers/connection.js';
import { OrgParams, pageOf, sendCreated, sendList } from '../schemas/common.js';
import {
  Connection,
  ConnectionInput,
  ConnectionListQuery,
  ConnectionParams,
  ConnectionTestParams,
  TestQuery,
  TestStarted,
  TestStatus,
} from '../schemas/connection.schema.js';

const tags = ['Connections'];

/** A Connection as the API answers it, with the Solutions that use it. */
const connectionModel =
  ({ connections, store: { db } }: ServiceDeps) =>
  async (org: OrgRow, row: ConnectionRow) =>
    toConnection(
      row,
      connections.catalogue,
      connections.properties(row),
      connections.cryptoToken(org),
      await solutionsUsingConnection(db, row.id),
    );

/** /connections: list, create, and test a model without saving it. */
const connectionListRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { connections, connectionCommands } = deps;
  const model = connectionModel(deps);

  app.get(
    '/v1/orgs/:orgId/connections',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Connections (only those usable by agentId when given)',
        params: OrgParams,
        querystring: ConnectionListQuery,
        response: { 200: z.array(Connection) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const rows = await connections.list(org.id, req.query);
      return sendList(reply, await Promise.all(pageOf(rows, req.query).map((r) => model(org, r))), rows.length);
    },
  );

  app.post(
    '/v1/orgs/:orgId/connections',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Create a Connection; property values encrypted with the crypto token',
        params: OrgParams,
        body: ConnectionInput,
        response: { 201: Connection },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      const row = await connections.create(org, req.body, userName(user));
      return sendCreated(reply, `/v1/orgs/${org.id}/connections/${row.id}`, await model(org, row));
    },
  );

  // Registered before /connections/:connectionId so that "test" is never read as an ID.
  app.get(
    '/v1/orgs/:orgId/connections/test/:commandId',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Status of a Connection test: Requested, then Completed with reply SUCCESS or the error',
        params: ConnectionTestParams,
        response: { 200: TestStatus },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const test = await connectionCommands.get(
        org.id,
        req.params.commandId,
        'test',
        `Connection test ${req.params.commandId} was not found in Organization ${org.id}.`,
      );
      return commandStatus(deps, org, test);
    },
  );

  app.post(
    '/v1/orgs/:orgId/connections/test',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Test a Connection model without saving it',
        params: OrgParams,
        querystring: TestQuery,
        body: ConnectionInput,
        response: { 200: TestStarted },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return testStarted(await connectionCommands.testModel(req.log, org, req.query.agentId, req.body));
    },
  );
};

/** /connections/{connectionId}: get, modify, delete and test one Connection. */
const connectionRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { connections, connectionCommands } = deps;
  const model = connectionModel(deps);

  app.get(
    '/v1/orgs/:orgId/connections/:connectionId',
    {
      config: { access: 'read' },
      schema: { tags, summary: 'One Connection', params: ConnectionParams, response: { 200: Connection } },
    },
    async (req) => {
      const { org } = orgOf(req);
      return model(org, await connections.require(org.id, req.params.connectionId));
    },
  );

  app.put(
    '/v1/orgs/:orgId/connections/:connectionId',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Modify a Connection; omitted protected properties keep their value',
        params: ConnectionParams,
        body: ConnectionInput,
        response: { 200: Connection },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      const updated = await connections.update(org, req.params.connectionId, req.body, userName(user));
      // The Agents running Solutions with it get its new properties before their next run.
      deps.assignments
        .syncOrg(org.id)
        .catch((err: unknown) =>
          req.log.warn({ err }, 'agent solutions not reconciled; they are at their next connect'),
        );
      return model(org, updated);
    },
  );

  app.delete(
    '/v1/orgs/:orgId/connections/:connectionId',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Delete a Connection that no Solution uses',
        params: ConnectionParams,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      await connections.delete(org.id, req.params.connectionId);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/v1/orgs/:orgId/connections/:connectionId/test',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Test a saved Connection on an Agent; returns the commandId (also as id)',
        params: ConnectionParams,
        querystring: TestQuery,
        response: { 200: TestStarted },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return testStarted(
        await connectionCommands.testSaved(
          req.log,
          org,
          req.query.agentId,
          await connections.require(org.id, req.params.connectionId),
        ),
      );
    },
  );
};

/** Connections: list, create, get, modify, delete, test (SPEC.md "Connections"). */
const connectionsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  await connectionListRoutes(app, deps);
  await connectionRoutes(app, deps);
};

export default connectionsRoutes;
