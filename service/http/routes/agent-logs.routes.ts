import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAgent } from '../../agents/agents.js';
import { AgentLogs, LOGS_NOT_AVAILABLE } from '../../agents/logs.js';
import { MAX_LOG_ARCHIVE_BYTES } from '../../store/log-archives.js';
import { agentBearer } from '../agent-bearer.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { AgentLogParams, AgentParams, LogRequested } from '../schemas/agent.schema.js';
import { Guid, sendCreated } from '../schemas/common.js';

/** Agent log archives (SPEC.md "Logs"): the request, the one download, the Agent's upload ({@link AgentLogs}). */
const agentLogsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const logs = new AgentLogs(db, deps.agents);
  const uploader = agentBearer(db);

  // The upload body is streamed to its store (a file, or chunks in the database) as it arrives, never held in memory.
  app.addContentTypeParser(
    ['application/zip', 'application/octet-stream', 'application/x-zip-compressed'],
    (_req, payload, done) => done(null, payload),
  );

  app.post(
    '/v1/orgs/:orgId/agents/:agentId/logs',
    {
      config: { access: 'write' },
      schema: {
        tags: ['Logs'],
        summary: 'Ask an On-Premise Agent to zip and upload its logs; returns the logId',
        params: AgentParams,
        response: { 201: LogRequested },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      const agent = await requireAgent(db, org.id, req.params.agentId);
      const logId = await logs.request(agent, { ip: req.ip, name: userName(user) }, req.log);
      return sendCreated(reply, `/v1/orgs/${org.id}/agents/${agent.id}/logs/${logId}`, { logId });
    },
  );

  app.get(
    '/v1/orgs/:orgId/agents/:agentId/logs/:logId',
    {
      // A HEAD would use up the single download.
      exposeHeadRoute: false,
      config: { access: 'write' },
      schema: {
        tags: ['Logs'],
        summary: `The zip of the logs, once; answers "${LOGS_NOT_AVAILABLE}" until it has arrived`,
        params: AgentLogParams,
        produces: ['application/zip'],
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const agent = await requireAgent(db, org.id, req.params.agentId);
      const { row, stream } = await logs.download(agent, req.params.logId, req.ip, req.log);
      void reply
        .type('application/zip')
        .header('Content-Disposition', `attachment; filename="agent-logs-${row.id}.zip"`);
      if (row.sizeBytes !== null) void reply.header('Content-Length', String(row.sizeBytes));
      return reply.send(stream);
    },
  );

  app.put(
    '/v1/agent/logs/:logId',
    {
      config: { access: 'public' },
      bodyLimit: MAX_LOG_ARCHIVE_BYTES,
      // The Agent's bearer secret is checked before the body is read.
      onRequest: uploader.onRequest,
      schema: {
        tags: ['Agent protocol'],
        summary: 'An Agent uploads the log archive it was asked for (application/zip, bearer credentials)',
        params: z.object({ logId: Guid }),
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      const agent = uploader.agentOf(req);
      await logs.receive(agent, req.params.logId, req.body, Number(req.headers['content-length']), req.log);
      return reply.code(204).send(null);
    },
  );
};

export default agentLogsRoutes;
