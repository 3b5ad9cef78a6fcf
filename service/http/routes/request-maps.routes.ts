import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { isRequestMap, requestMapsDocument, type RequestMapEntry } from '../../events/openapi.js';
import { serviceBaseUrl } from '../base-url.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { OrgParams } from '../schemas/common.js';
import { MapParams } from '../schemas/map.schema.js';
import { SolutionParams } from '../schemas/solution.schema.js';
import { packageVersion } from '../../util/package-root.js';

const tags = ['Message Endpoints'];
const Document = z.record(z.string(), z.unknown()).describe('An OpenAPI 3.0 document');

/**
 * OpenAPI documents of request/reply Maps (service/events/openapi.ts): of one Map, of a Solution's,
 * of the Organization's; only enabled, valid Maps whose Solution was prepared (they have an endpoint).
 */
const requestMapsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  /** The enabled, valid request Maps with an endpoint, of the Organization (of a Solution, of a Map). */
  const entries = async (orgId: number, solutionId?: string, mapId?: number): Promise<RequestMapEntry[]> => {
    let q = deps.store.db
      .selectFrom('messageEndpoints as e')
      .innerJoin('maps as m', 'm.id', 'e.mapId')
      .innerJoin('solutions as s', 's.id', 'e.solutionId')
      .select(['e.urlMapId', 'm.id as mapId', 's.id as solutionId', 's.name as solutionName'])
      .where('e.orgId', '=', orgId)
      .where('e.kind', '=', 'request')
      .where('m.enabled', '=', 1)
      .where('m.valid', '=', 1)
      .orderBy('e.id');
    if (solutionId !== undefined) q = q.where('s.id', '=', solutionId.toLowerCase());
    if (mapId !== undefined) q = q.where('m.id', '=', mapId);
    const rows = await q.execute();
    const out: RequestMapEntry[] = [];
    for (const r of rows) {
      const view = await deps.maps.get(orgId, r.solutionId, r.mapId);
      if (isRequestMap(view.model)) out.push({ view, solutionName: r.solutionName, urlMapId: r.urlMapId });
    }
    return out;
  };

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/openapi',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'The OpenAPI 3 document of a request/reply Map: its request and reply, at its eventUrl',
        params: MapParams,
        response: { 200: Document },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const view = await deps.maps.get(org.id, req.params.solutionId, req.params.mapId);
      if (!isRequestMap(view.model))
        throw new FerryError(
          'API_UNSUPPORTED',
          `Map ${view.row.name} (${view.row.id}) does not begin with Wait For Request: only request/reply Maps have an OpenAPI document.`,
        );
      const maps = await entries(org.id, req.params.solutionId, req.params.mapId);
      if (maps.length === 0)
        throw new FerryError(
          'API_CONFLICT',
          `Map ${view.row.name} (${view.row.id}) is disabled, not valid, or its Solution was not prepared since it was added: enable and validate it, then prepare the Solution.`,
        );
      return requestMapsDocument({
        title: `${maps[0]?.solutionName ?? ''}: ${view.row.name}`,
        version: `${view.row.revision}`,
        baseUrl: serviceBaseUrl(req, deps.config),
        orgId: org.id,
        maps,
      });
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/openapi',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: "The OpenAPI 3 document of a Solution's enabled request/reply Maps",
        params: SolutionParams,
        response: { 200: Document },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const solution = await deps.solutions.get(org.id, req.params.solutionId);
      return requestMapsDocument({
        title: solution.row.name,
        version: packageVersion(),
        baseUrl: serviceBaseUrl(req, deps.config),
        orgId: org.id,
        maps: await entries(org.id, req.params.solutionId),
      });
    },
  );

  app.get(
    '/v1/orgs/:orgId/openapi',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: "The OpenAPI 3 document of the Organization's enabled request/reply Maps",
        params: OrgParams,
        response: { 200: Document },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return requestMapsDocument({
        title: `${org.name}: request/reply Maps`,
        version: packageVersion(),
        baseUrl: serviceBaseUrl(req, deps.config),
        orgId: org.id,
        maps: await entries(org.id),
      });
    },
  );
};

export default requestMapsRoutes;
