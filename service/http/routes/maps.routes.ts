import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { toMap, toMapLink } from '../mappers/map.js';
import { sendCreated, sendList } from '../schemas/common.js';
import { MapAnswer, MapGetQuery, MapInput, MapLink, MapListQuery, MapModifyQuery, MapParams, MapSaveQuery } from '../schemas/map.schema.js';
import { SolutionParams } from '../schemas/solution.schema.js';

const tags = ['Maps'];

/** The Maps of an Integration, Migration or Integration Event Solution (SPEC.md "Maps"). */
const mapsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { maps } = deps;

  app.get('/v1/orgs/:orgId/solutions/:solutionId/maps', {
    config: { access: 'read' },
    schema: { tags, summary: 'The Solution\'s Maps in run order, each at its latest revision', params: SolutionParams, querystring: MapListQuery, response: { 200: z.array(MapAnswer) } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const { items, total } = await maps.list(org.id, req.params.solutionId, req.query);
    return sendList(reply, items.map(toMap), total);
  });

  app.get('/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId', {
    config: { access: 'read' },
    schema: { tags, summary: 'One Map, at its latest revision or at `revision`', params: MapParams, querystring: MapGetQuery, response: { 200: MapAnswer } },
  }, async (req) => {
    const { org } = orgOf(req);
    return toMap(await maps.get(org.id, req.params.solutionId, req.params.mapId, req.query.revision));
  });

  app.get('/v1/orgs/:orgId/solutions/:solutionId/maplinks/:mapId', {
    config: { access: 'read' },
    schema: { tags, summary: 'A Map\'s link: its place in the run order and its state', params: MapParams, response: { 200: MapLink } },
  }, async (req) => {
    const { org } = orgOf(req);
    return toMapLink(await maps.link(org.id, req.params.solutionId, req.params.mapId));
  });

  app.post('/v1/orgs/:orgId/solutions/:solutionId/maps/advanced', {
    config: { access: 'write' },
    schema: {
      tags,
      summary: 'Create a Map (revision 1) at the end of the run order; a 2.x model is upgraded; the Solution becomes Incomplete',
      params: SolutionParams,
      querystring: MapSaveQuery,
      body: MapInput,
      response: { 201: MapAnswer },
    },
  }, async (req, reply) => {
    const { org, user } = orgOf(req);
    const view = await maps.create(org, req.params.solutionId, req.body, req.query.comment, userName(user));
    return sendCreated(reply, `/v1/orgs/${org.id}/solutions/${view.row.solutionId}/maps/${view.row.id}`, toMap(view));
  });

  app.put('/v1/orgs/:orgId/solutions/:solutionId/maps/advanced/:mapId', {
    config: { access: 'write' },
    schema: {
      tags,
      summary: 'Save a Map as its next revision; the Solution becomes Incomplete (unlockMap, validateMap, prepareMap and the Connection reassignment are accepted and not applied yet)',
      params: MapParams,
      querystring: MapModifyQuery,
      body: MapInput,
      response: { 200: MapAnswer },
    },
  }, async (req) => {
    const { org, user } = orgOf(req);
    return toMap(await maps.save(org, req.params.solutionId, req.params.mapId, req.body, req.query.comment, userName(user)));
  });

  app.delete('/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId', {
    config: { access: 'write' },
    schema: { tags, summary: 'Delete a Map and its revisions; the Solution becomes Incomplete', params: MapParams, response: { 204: z.null() } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    await maps.delete(org.id, req.params.solutionId, req.params.mapId);
    return reply.code(204).send(null);
  });
};

export default mapsRoutes;
