import fs from 'node:fs';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAgent, solutionsUsingAgent } from '../../agents/agents.js';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { agentBearer } from '../agent-bearer.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { toAgent } from '../mappers/agent.js';
import { Agent, AgentParams } from '../schemas/agent.schema.js';

const Version = z.string().min(1).max(50);

/** `POST …/agents/{id}/update`: the version to update to; absent, the newest the Service offers. */
export const AgentUpdateBody = z.strictObject({ version: Version.optional() }).nullish();

export const AgentVersions = z.object({
  /** The Agent versions this Service offers, oldest first; Agents older than the last are updated. */
  versions: z.array(z.object({ version: z.string(), sha256: z.string(), size: z.number().int() })),
});

/**
 * Agent updates (docs/agents.md "Updates"): the versions offered, an operator's update of one
 * Agent, and the package an Agent downloads. Holding an Agent at its version is `versionHold` on
 * `PUT …/agents/{id}`.
 */
const agentUpdatesRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const { updates } = deps.agents;
  const downloader = agentBearer(db);

  app.get(
    '/v1/orgs/:orgId/agentversions',
    {
      config: { access: 'read' },
      schema: {
        tags: ['Agents'],
        summary: 'The Agent versions this Service offers (Ferry extension)',
        params: AgentParams.pick({ orgId: true }),
        response: { 200: AgentVersions },
      },
    },
    async () => ({
      versions: updates.packages.map(({ version, sha256, size }) => ({ version, sha256, size })),
    }),
  );

  app.post(
    '/v1/orgs/:orgId/agents/:agentId/update',
    {
      config: { access: 'admin' },
      schema: {
        tags: ['Agents'],
        summary:
          'Update an Agent to a version the Service offers (Ferry extension): it finishes running Solutions first, and goes back to its version by itself when the new one does not connect',
        params: AgentParams,
        body: AgentUpdateBody,
        response: { 200: Agent },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const agent = await requireAgent(db, org.id, req.params.agentId);
      const row = await updates.request(agent, req.body?.version);
      return toAgent(row, deps.agents.commands.isConnected(row.id), await solutionsUsingAgent(db, row.id));
    },
  );

  app.get(
    '/v1/agent/packages/:version',
    {
      config: { access: 'public' },
      onRequest: downloader.onRequest,
      schema: {
        tags: ['Agent protocol'],
        summary:
          'An Agent downloads an Agent package (application/gzip, bearer credentials); its SHA-256 came with the updateAgent command',
        params: z.object({ version: Version }),
      },
    },
    async (req, reply) => {
      const pkg = updates.packageOf(req.params.version);
      if (!pkg)
        throw new FerryError('API_NOT_FOUND', `This Service offers no Agent package of version ${req.params.version}.`);
      void reply
        .type('application/gzip')
        .header('Content-Length', String(pkg.size))
        .header('Content-Disposition', `attachment; filename="ferry-agent-${pkg.version}.tgz"`);
      return reply.send(fs.createReadStream(pkg.file));
    },
  );
};

export default agentUpdatesRoutes;
