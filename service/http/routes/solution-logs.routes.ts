import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AgentLogs, LOGS_NOT_AVAILABLE } from '../../agents/logs.js';
import { SolutionLogs } from '../../solutions/solution-logs.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { LogRequested } from '../schemas/agent.schema.js';
import { sendCreated } from '../schemas/common.js';
import { SolutionParams } from '../schemas/solution.schema.js';
import { SolutionLogParams, SolutionLogQuery } from '../schemas/solution-logs.schema.js';

/**
 * A Solution's log archives (SPEC.md "Logs"): the lines of its runs, zipped by its Agent and
 * uploaded through the Agent log path (agent-logs.routes.ts takes the upload).
 */
const solutionLogsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const logs = new SolutionLogs(deps.store.db, new AgentLogs(deps.store.db, deps.agents));

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/logs',
    {
      config: { access: 'write' },
      schema: {
        tags: ['Logs'],
        summary:
          "Ask the Solution's Agent to zip the log lines of the Solution's runs (or of one, or since an instant); returns the logId",
        params: SolutionParams,
        querystring: SolutionLogQuery,
        response: { 201: LogRequested },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      const { solution, logId } = await logs.request(
        org.id,
        req.params.solutionId,
        req.query,
        { ip: req.ip, name: userName(user) },
        req.log,
      );
      return sendCreated(reply, `/v1/orgs/${org.id}/solutions/${solution.id}/logs/${logId}`, { logId });
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/logs/:logId',
    {
      // A HEAD would use up the single download.
      exposeHeadRoute: false,
      config: { access: 'write' },
      schema: {
        tags: ['Logs'],
        summary: `The zip of the Solution's log lines, once; answers "${LOGS_NOT_AVAILABLE}" until it has arrived`,
        params: SolutionLogParams,
        produces: ['application/zip'],
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { row, stream } = await logs.download(org.id, req.params.solutionId, req.params.logId, req.ip, req.log);
      void reply
        .type('application/zip')
        .header('Content-Disposition', `attachment; filename="solution-logs-${row.id}.zip"`);
      if (row.sizeBytes !== null) void reply.header('Content-Length', String(row.sizeBytes));
      return reply.send(stream);
    },
  );
};

export default solutionLogsRoutes;
