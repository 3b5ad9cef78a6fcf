import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { solutionConnections } from '../../solutions/solution-connections.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { SolutionConnectionSummary } from '../schemas/solution-connection.schema.js';
import { SolutionParams } from '../schemas/solution.schema.js';

/** The Connections a Solution uses (SPEC.md `GET S/connections`). */
const solutionConnectionsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/connections',
    {
      config: { access: 'read' },
      schema: {
        tags: ['Solutions'],
        summary:
          "The Connections the Solution uses: a Replication's source and target, then its Maps' sources and targets in run order, each once",
        params: SolutionParams,
        response: { 200: z.array(SolutionConnectionSummary) },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const view = await deps.solutions.get(org.id, req.params.solutionId);
      const used = await solutionConnections(deps.store.db, deps.connections.catalogue, view);
      return used.map(({ connection, connectorName, connectorLogoUrl }) => ({
        connectionID: connection.id,
        connectionName: connection.name,
        connectorID: connection.connectorId,
        connectorName,
        connectorLogoUrl,
      }));
    },
  );
};

export default solutionConnectionsRoutes;
