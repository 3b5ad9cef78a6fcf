import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  deleteUnusedAgent,
  holdVersion,
  listAgentsOf,
  renameAgent,
  requireAgent,
  restartAgent,
  solutionsUsingAgent,
} from '../../agents/agents.js';
import type { AgentRow } from '../../store/schema.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { toAgent } from '../mappers/agent.js';
import { Agent, AgentInput, AgentListQuery, AgentParams, RestartBody, RestartQuery } from '../schemas/agent.schema.js';
import { OrgParams, pageOf, sendList } from '../schemas/common.js';

/** Agents: list, get, modify, delete, restart (SPEC.md "Agents"). */
const agentsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const model = async (row: AgentRow): Promise<Agent> =>
    toAgent(row, deps.agents.commands.isConnected(row.id), await solutionsUsingAgent(db, row.id));

  app.get(
    '/v1/orgs/:orgId/agents',
    {
      config: { access: 'read' },
      schema: {
        tags: ['Agents'],
        summary: 'Agents of the Organization',
        params: OrgParams,
        querystring: AgentListQuery,
        response: { 200: z.array(Agent) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const rows = await listAgentsOf(db, org.id, req.query);
      return sendList(reply, await Promise.all(pageOf(rows, req.query).map(model)), rows.length);
    },
  );

  app.get(
    '/v1/orgs/:orgId/agents/:agentId',
    {
      config: { access: 'read' },
      schema: { tags: ['Agents'], summary: 'One Agent', params: AgentParams, response: { 200: Agent } },
    },
    async (req) => {
      const { org } = orgOf(req);
      return model(await requireAgent(db, org.id, req.params.agentId));
    },
  );

  app.put(
    '/v1/orgs/:orgId/agents/:agentId',
    {
      config: { access: 'write' },
      schema: {
        tags: ['Agents'],
        summary: 'Modify an Agent (its name, and versionHold)',
        params: AgentParams,
        body: AgentInput,
        response: { 200: Agent },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const agent = await requireAgent(db, org.id, req.params.agentId);
      const renamed = await renameAgent(db, agent, req.body.name);
      return model(await holdVersion(db, renamed, req.body.versionHold));
    },
  );

  app.delete(
    '/v1/orgs/:orgId/agents/:agentId',
    {
      config: { access: 'admin' },
      schema: {
        tags: ['Agents'],
        summary: 'Delete an Agent that no Solution uses',
        params: AgentParams,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      await deleteUnusedAgent(deps, await requireAgent(db, org.id, req.params.agentId), req.log);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/v1/orgs/:orgId/agents/:agentId/restart',
    {
      config: { access: 'write' },
      schema: {
        tags: ['Agents'],
        summary: 'Restart an Agent: after running Solutions finish (restartNow false) or at once (true)',
        params: AgentParams,
        querystring: RestartQuery,
        body: RestartBody,
        response: { 200: Agent },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const agent = await requireAgent(db, org.id, req.params.agentId);
      return model(await restartAgent(deps, agent, req.body?.restartNow ?? req.query.restartNow, req.log));
    },
  );
};

export default agentsRoutes;
