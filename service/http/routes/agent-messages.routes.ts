import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { TAKE_MESSAGES_PATH, TakeMessagesRequest } from '../../../src/protocol/events.js';
import { agentBearer } from '../agent-bearer.js';
import type { ServiceDeps } from '../deps.js';

/**
 * An Event Solution's messages for the Agent that runs it (bearer credentials): the written ones
 * leave the queue, the next ones are leased to the run (service/events/events.ts).
 */
const agentMessagesRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const bearer = agentBearer(deps.store.db);
  app.post(
    TAKE_MESSAGES_PATH,
    {
      config: { access: 'public' },
      onRequest: bearer.onRequest,
      schema: {
        tags: ['Agent protocol'],
        summary:
          "An Agent acknowledges the messages its run wrote and leases the next ones of a message Map's queue, oldest first",
        body: TakeMessagesRequest,
      },
    },
    async (req, reply) => {
      const body = await deps.events.take(bearer.agentOf(req), req.body);
      return reply.type('application/json').send(body);
    },
  );
};

export default agentMessagesRoutes;
