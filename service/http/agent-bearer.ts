import type { FastifyRequest } from 'fastify';
import { FerryError } from '../../src/errors/ferry-error.js';
import { authenticateAgent } from '../auth/agent-auth.js';
import type { AgentRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';

/**
 * Bearer authentication of the Agent-facing HTTP routes (log upload, package download): an
 * `onRequest` hook that checks `Authorization: Bearer <agentId>.<secret>` before the body is read,
 * and `agentOf` for the handler.
 */
export function agentBearer(db: Db): {
  onRequest: (req: FastifyRequest) => Promise<void>;
  agentOf: (req: FastifyRequest) => AgentRow;
} {
  const agents = new WeakMap<FastifyRequest, AgentRow>();
  return {
    onRequest: async (req) => {
      const agent = await authenticateAgent(db, req.headers.authorization);
      if (!agent)
        throw new FerryError(
          'AGT_UNAUTHORIZED',
          'Send Authorization: Bearer <agentId>.<secret> with the credentials the Agent received at registration.',
        );
      agents.set(req, agent);
    },
    agentOf: (req) => {
      const agent = agents.get(req);
      if (!agent) throw new FerryError('AGT_UNAUTHORIZED', 'Agent credentials are required.');
      return agent;
    },
  };
}
