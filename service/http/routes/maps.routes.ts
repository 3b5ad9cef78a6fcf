import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { MapRow } from '../../store/schema.js';
import { serviceBaseUrl } from '../base-url.js';
import type { ServiceDeps } from '../deps.js';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { orgOf, userName } from '../guard.js';
import { eventUrlsOf, toMap, toMapLink, toMapRevision } from '../mappers/map.js';
import { PageQuery, sendCreated, sendList } from '../schemas/common.js';
import {
  MapAnswer,
  MapEnableQuery,
  MapGetQuery,
  MapInput,
  MapLink,
  MapListQuery,
  MapLockQuery,
  MapModifyQuery,
  MapParams,
  MapRevertQuery,
  MapRevision,
  MapSaveQuery,
} from '../schemas/map.schema.js';
import { MapSaveAnswer } from '../schemas/map-validation.schema.js';
import { SolutionParams } from '../schemas/solution.schema.js';
import { checkSavedMap } from '../../solutions/map-save-check.js';

const tags = ['Maps'];

/** Reading Maps and their revisions, reverting to one, and cloning a Map. */
const mapReadRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { maps } = deps;

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/maps',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: "The Solution's Maps in run order, each at its latest revision",
        params: SolutionParams,
        querystring: MapListQuery,
        response: { 200: z.array(MapAnswer) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { items, total } = await maps.list(org.id, req.params.solutionId, req.query);
      return sendList(reply, items.map(toMap), total);
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'One Map, at its latest revision or at `revision`; `lockMap=true` locks it for you first',
        params: MapParams,
        querystring: MapGetQuery,
        response: { 200: MapAnswer },
      },
    },
    async (req) => {
      const { org, role, user } = orgOf(req);
      if (req.query.lockMap && role === 'ReadOnly') {
        throw new FerryError(
          'API_FORBIDDEN_ROLE',
          `Locking a Map needs the Administrator or User role; you have the ${role} role in Organization ${org.id}. Read it without lockMap.`,
        );
      }
      return toMap(
        await maps.get(org.id, req.params.solutionId, req.params.mapId, req.query.revision, {
          lockFor: req.query.lockMap ? userName(user) : undefined,
        }),
      );
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/revisions',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: "A Map's revisions, newest first",
        params: MapParams,
        querystring: PageQuery,
        response: { 200: z.array(MapRevision) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { items, total } = await maps.revisions(org.id, req.params.solutionId, req.params.mapId, req.query);
      return sendList(reply, items.map(toMapRevision), total);
    },
  );

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/revert',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          'Restore an earlier revision as the next one; the Map is not valid and the Solution Incomplete until validated, saved and prepared; lastRunDate keeps its current value',
        params: MapParams,
        querystring: MapRevertQuery,
        response: { 200: MapAnswer },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      return toMap(await maps.revert(org, req.params.solutionId, req.params.mapId, req.query.revision, userName(user)));
    },
  );

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/clone',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Copy the latest revision as a disabled Map "Copy of <name> N" at the end of the run order',
        params: MapParams,
        response: { 201: MapAnswer },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      const view = await maps.clone(org, req.params.solutionId, req.params.mapId, userName(user));
      return sendCreated(reply, `/v1/orgs/${org.id}/solutions/${view.row.solutionId}/maps/${view.row.id}`, toMap(view));
    },
  );
};

/** A Map's link, its place in the run order and its state: enabled, locked. */
const mapLinkRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { maps, assignments } = deps;
  /** The link of a Map, with the URL of its Message Endpoint when it has one. */
  const linkOf = async (req: FastifyRequest, row: MapRow) => {
    const urls = await eventUrlsOf(deps.store.db, row.orgId, [row.id], () => serviceBaseUrl(req, deps.config));
    return toMapLink(row, urls.get(row.id) ?? null);
  };

  app.put(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/enable',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Enable or disable a Map; a disabled Map is skipped when its Solution runs',
        params: MapParams,
        querystring: MapEnableQuery,
        response: { 200: MapLink },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const { row, solution } = await maps.enable(
        org.id,
        req.params.solutionId,
        req.params.mapId,
        req.query.enableState,
      );
      assignments
        .sync(solution.agentId)
        .catch((err: unknown) =>
          req.log.warn(
            { err, agentId: solution.agentId },
            'agent solutions not reconciled; they are at its next connect',
          ),
        );
      return linkOf(req, row);
    },
  );

  app.put(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/lock',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Lock a Map for you, or unlock it (its holder or an Administrator)',
        params: MapParams,
        querystring: MapLockQuery,
        response: { 200: MapLink },
      },
    },
    async (req) => {
      const { org, role, user } = orgOf(req);
      return linkOf(
        req,
        await maps.lock(
          org.id,
          req.params.solutionId,
          req.params.mapId,
          req.query.lockState,
          userName(user),
          role === 'Administrator',
        ),
      );
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/maplinks/:mapId',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: "A Map's link: its place in the run order and its state",
        params: MapParams,
        response: { 200: MapLink },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return linkOf(req, await maps.link(org.id, req.params.solutionId, req.params.mapId));
    },
  );
};

/** Creating, saving and deleting a Map; a saved Map is checked at once against the Connections' metadata. */
const mapSaveRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { maps } = deps;

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/advanced',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          "Create a Map (revision 1) at the end of the run order; a 2.x model is upgraded; the Solution becomes Incomplete; checked at once when the Connections' metadata is loaded (valid, errors per Block)",
        params: SolutionParams,
        querystring: MapSaveQuery,
        body: MapInput,
        response: { 201: MapSaveAnswer },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      const view = await maps.create(org, req.params.solutionId, req.body, req.query.comment, userName(user));
      const check = await checkSavedMap(deps.store.db, deps.metadata, org.id, view);
      return sendCreated(reply, `/v1/orgs/${org.id}/solutions/${view.row.solutionId}/maps/${view.row.id}`, {
        ...toMap(view),
        ...check,
      });
    },
  );

  app.put(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/advanced/:mapId',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          "Save a Map as its next revision (409 while another user holds its lock); the Solution becomes Incomplete; checked at once when the Connections' metadata is loaded (valid, errors per Block)",
        params: MapParams,
        querystring: MapModifyQuery,
        body: MapInput,
        response: { 200: MapSaveAnswer },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      const view = await maps.save(
        org,
        req.params.solutionId,
        req.params.mapId,
        req.body,
        req.query.comment,
        userName(user),
        { unlock: req.query.unlockMap },
      );
      return { ...toMap(view), ...(await checkSavedMap(deps.store.db, deps.metadata, org.id, view)) };
    },
  );

  app.delete(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          'Delete a Map and its revisions (409 while another user holds its lock); the Solution becomes Incomplete',
        params: MapParams,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      await maps.delete(org.id, req.params.solutionId, req.params.mapId, userName(user));
      return reply.code(204).send(null);
    },
  );
};

/** The Maps of an Integration, Migration or Integration Event Solution (SPEC.md "Maps"). */
const mapsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  await mapReadRoutes(app, deps);
  await mapLinkRoutes(app, deps);
  await mapSaveRoutes(app, deps);
};

export default mapsRoutes;
