import type { FastifyInstance, FastifyRequest } from 'fastify';
import { FerryError } from '../../src/errors/ferry-error.js';
import { getAgent } from '../store/repos/agents.repo.js';
import type { ServiceDeps } from './deps.js';

/** The request parts whose validated values are searched for an Agent ID. */
const PARTS = ['params', 'query', 'body'] as const;

/**
 * The Agent IDs a request names: every top-level field called `agentId` (any case) of its
 * validated path parameters, query string and body. Empty strings and null name no Agent.
 */
export function agentIdsOf(req: Pick<FastifyRequest, (typeof PARTS)[number]>): Array<{ part: string; value: string }> {
  const found: Array<{ part: string; value: string }> = [];
  for (const part of PARTS) {
    const values: unknown = req[part];
    if (values === null || typeof values !== 'object' || Array.isArray(values)) continue;
    for (const [key, value] of Object.entries(values)) {
      if (key.toLowerCase() !== 'agentid') continue;
      for (const one of Array.isArray(value) ? (value as unknown[]) : [value]) {
        if (typeof one === 'string' && one !== '') found.push({ part, value: one });
        else if (typeof one === 'number') found.push({ part, value: String(one) });
      }
    }
  }
  return found;
}

/**
 * Every Agent ID a route of an Organization accepts names an Agent of that Organization, or the
 * call is a 404, whether the route would have used it or not: a parameter naming another
 * tenant's resource is never accepted silently. Checked here, once, after validation (so the
 * keys are already matched case-insensitively), instead of in each route, so that no route can
 * forget; the message does not tell whether the Agent exists in another Organization.
 */
export function registerAgentParamCheck(app: FastifyInstance, deps: ServiceDeps): void {
  app.addHook('preHandler', async (req) => {
    if (!req.routeOptions.url?.startsWith('/v1/orgs/:orgId/')) return;
    const ids = agentIdsOf(req);
    if (ids.length === 0) return;
    // The guard has resolved the path's Organization for every member route; otherwise the path names it.
    const orgId = req.ferryOrg?.id ?? Number((req.params as Record<string, unknown>)['orgId']);
    for (const { part, value } of ids) {
      const agent = Number.isSafeInteger(orgId) ? await getAgent(deps.store.db, orgId, value) : undefined;
      if (!agent) {
        throw new FerryError('API_NOT_FOUND', `Agent ${value} was not found in Organization ${orgId}.`, {
          details: { agentId: value },
          errors: [
            { path: `${part === 'params' ? 'path' : part}.agentId`, message: 'no such Agent in this Organization' },
          ],
        });
      }
    }
  });
}
