import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notFound } from '../../../src/errors/ferry-error.js';
import { messageEndpointsRepo } from '../../store/repos/message-endpoints.repo.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { OrgParams, PageQuery, sendList } from '../schemas/common.js';
import { MessageEndpoint, MessageEndpointParams } from '../schemas/message-endpoint.schema.js';

const tags = ['Message Endpoints'];

/** The Message Endpoints of Event Solution Maps: list, and clear one endpoint's queue. */
const endpointsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const repo = messageEndpointsRepo(deps.store.db);

  app.get(
    '/v1/orgs/:orgId/endpoints',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Message Endpoints of the Organization',
        params: OrgParams,
        querystring: PageQuery,
        response: { 200: z.array(MessageEndpoint) },
      },
    },
    async (req, reply) => {
      const { items, total } = await repo.list(orgOf(req).org.id, req.query);
      return sendList(reply, items, total);
    },
  );

  app.put(
    '/v1/orgs/:orgId/endpoints/:endpointid/clear',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Clear the message queue of a Message Endpoint',
        params: MessageEndpointParams,
        response: { 200: MessageEndpoint },
      },
    },
    async (req) => {
      const cleared = await repo.clear(orgOf(req).org.id, req.params.endpointid);
      if (!cleared) throw notFound(`Message Endpoint ${req.params.endpointid}`);
      return cleared;
    },
  );
};

export default endpointsRoutes;
