import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { CLOUD_AGENT_NAME } from '../../auth/agent-registration.js';
import { agentNameTaken, getAgentById, listAgents, updateAgent } from '../../store/repos/agents.repo.js';
import { nowIso } from '../../util/values.js';
import { installedConnectors, requireAgent, retireAgent, solutionsUsingAgent, toAgent } from '../agent-model.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { Agent, AgentInput, AgentListQuery, AgentParams, RestartBody, RestartQuery } from '../schemas/agent.schema.js';
import { OrgParams, pageOf, sendList } from '../schemas/common.js';

/** Agents: list, get, modify, delete, restart (SPEC.md "Agents"). */
const agentsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const connected = (agentId: string) => deps.agents.commands.isConnected(agentId);

  app.get('/v1/orgs/:orgId/agents', {
    config: { access: 'read' },
    schema: { tags: ['Agents'], summary: 'Agents of the Organization', params: OrgParams, querystring: AgentListQuery, response: { 200: z.array(Agent) } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const { connectorId, name } = req.query;
    // An Organization has few Agents: the connector filter reads their JSON list here.
    let rows = await listAgents(db, org.id, { name });
    if (connectorId !== undefined) {
      const wanted = connectorId.toLowerCase();
      rows = rows.filter((r) => installedConnectors(r).some((c) => c.connectorId.toLowerCase() === wanted));
    }
    const page = pageOf(rows, req.query);
    const models = await Promise.all(page.map(async (r) => toAgent(r, connected(r.id), await solutionsUsingAgent(db, r.id))));
    return sendList(reply, models, rows.length);
  });

  app.get('/v1/orgs/:orgId/agents/:agentId', {
    config: { access: 'read' },
    schema: { tags: ['Agents'], summary: 'One Agent', params: AgentParams, response: { 200: Agent } },
  }, async (req) => {
    const { org } = orgOf(req);
    const agent = await requireAgent(db, org.id, req.params.agentId);
    return toAgent(agent, connected(agent.id), await solutionsUsingAgent(db, agent.id));
  });

  app.put('/v1/orgs/:orgId/agents/:agentId', {
    config: { access: 'write' },
    schema: { tags: ['Agents'], summary: 'Modify an Agent (its name)', params: AgentParams, body: AgentInput, response: { 200: Agent } },
  }, async (req) => {
    const { org } = orgOf(req);
    const agent = await requireAgent(db, org.id, req.params.agentId);
    const name = req.body.name;
    if (name !== undefined && name !== agent.name) {
      if (agent.isCloudAgent === 1) {
        throw new FerryError('API_VALIDATION', `The Cloud Agent is always named ${CLOUD_AGENT_NAME}.`, { errors: [{ path: 'body.name', message: `must stay ${CLOUD_AGENT_NAME}` }] });
      }
      if (name.toLowerCase() === CLOUD_AGENT_NAME.toLowerCase()) {
        throw new FerryError('API_VALIDATION', `${CLOUD_AGENT_NAME} is the name of the Cloud Agent; choose another name.`, { errors: [{ path: 'body.name', message: 'reserved for the Cloud Agent' }] });
      }
      if (await agentNameTaken(db, org.id, name, agent.id)) {
        throw new FerryError('API_DUPLICATE_NAME', `Another Agent of Organization ${org.id} is named ${name}.`);
      }
      await updateAgent(db, agent.id, { name, nameKey: name.toLowerCase(), modifiedAt: nowIso() });
    }
    const updated = await requireAgent(db, org.id, agent.id);
    return toAgent(updated, connected(agent.id), await solutionsUsingAgent(db, agent.id));
  });

  app.delete('/v1/orgs/:orgId/agents/:agentId', {
    config: { access: 'admin' },
    schema: { tags: ['Agents'], summary: 'Delete an Agent that no Solution uses', params: AgentParams, response: { 204: z.null() } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const agent = await requireAgent(db, org.id, req.params.agentId);
    const usedIn = await solutionsUsingAgent(db, agent.id);
    if (usedIn.length > 0) {
      throw new FerryError('API_IN_USE', `Agent ${agent.name} is used by the Solutions ${usedIn.join(', ')}; move them to another Agent first.`);
    }
    await retireAgent(deps, agent, req.log);
    return reply.code(204).send(null);
  });

  app.post('/v1/orgs/:orgId/agents/:agentId/restart', {
    config: { access: 'write' },
    schema: {
      tags: ['Agents'],
      summary: 'Restart an Agent: after running Solutions finish (restartNow false) or at once (true)',
      params: AgentParams,
      querystring: RestartQuery,
      body: RestartBody,
      response: { 200: Agent },
    },
  }, async (req) => {
    const { org } = orgOf(req);
    const agent = await requireAgent(db, org.id, req.params.agentId);
    const restartNow = req.body?.restartNow ?? req.query.restartNow;
    await deps.agents.commands.send(agent.id, { type: 'restart', restartNow });
    // The Agent accepted: it starts no new work, (interrupts or) waits, then restarts.
    await updateAgent(db, agent.id, { status: 'WaitingToRestartAgentUserRequest', modifiedAt: nowIso() });
    req.log.info({ agentId: agent.id, restartNow }, 'agent restart requested');
    const updated = await getAgentById(db, agent.id);
    if (!updated) throw new FerryError('API_NOT_FOUND', `Agent ${agent.id} was not found in Organization ${org.id}.`);
    return toAgent(updated, connected(agent.id), await solutionsUsingAgent(db, agent.id));
  });
};

export default agentsRoutes;
