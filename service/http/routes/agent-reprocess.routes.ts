import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { agentBearer } from '../agent-bearer.js';
import type { ServiceDeps } from '../deps.js';
import { ReprocessPageParams, ReprocessPageQuery } from '../schemas/history-reprocess.schema.js';

/**
 * The records of a reprocess run, for the Agent that runs it (bearer credentials): one Map's
 * records after `after`, in order, with the copy of each when the Service keeps it
 * (src/protocol/reprocess.ts ReprocessPage). The Agent pulls the next page as its Map consumes.
 */
const agentReprocessRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const bearer = agentBearer(deps.store.db);
  app.get(
    '/v1/agent/reprocess/:runId/records',
    {
      config: { access: 'public' },
      onRequest: bearer.onRequest,
      schema: {
        tags: ['Agent protocol'],
        summary:
          'An Agent reads a page of the records of a reprocess run it runs, with their stored copies when the Service keeps them',
        params: ReprocessPageParams,
        querystring: ReprocessPageQuery,
      },
    },
    async (req) => deps.history.reprocessPage(bearer.agentOf(req), req.params.runId, req.query.mapId, req.query.after),
  );
};

export default agentReprocessRoutes;
