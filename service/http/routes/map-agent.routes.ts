import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { toMapRun, toPreview } from '../mappers/map-agent.js';
import {
  MapModelBody,
  MapRunAnswer,
  MapRunParams,
  NativeQueryTestQuery,
  NativeQueryTestStarted,
  PreviewAnswer,
  PreviewParams,
  PreviewQueryQuery,
  PreviewStarted,
} from '../schemas/map-agent.schema.js';
import { MapParams } from '../schemas/map.schema.js';

const tags = ['Maps'];
const M = '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId';

/** What a Map asks of its Solution's Agent (SPEC.md "Maps"): preview query, native query test, single-Map run. */
const mapAgentRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { mapPreviews, mapRuns } = deps;

  app.post(
    `${M}/previewquery`,
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          "Start reading the first records (at most 100) of a Query or Fetch Block through the Solution's Agent, its filter applied; a model in the body is used instead of the stored Map",
        params: MapParams,
        querystring: PreviewQueryQuery,
        body: MapModelBody,
        response: { 200: PreviewStarted },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const { previewId, block, limit } = await mapPreviews.preview(
        org,
        req.params.solutionId,
        req.params.mapId,
        req.query.blockId || undefined,
        req.body,
      );
      return { previewId, mapId: req.params.mapId, blockId: block.blockId, blockName: block.name, limit };
    },
  );

  app.get(
    `${M}/previewquery/:previewId`,
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary:
          "POLL: the preview's records (404 until the Agent answered); a Connector's error is a result with hasError",
        params: PreviewParams,
        response: { 200: PreviewAnswer },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toPreview(
        await mapPreviews.previewResult(org.id, req.params.solutionId, req.params.mapId, req.params.previewId),
      );
    },
  );

  app.post(
    `${M}/nativequerytest`,
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          "Start running a Native Query Block's statement (as written) through the Solution's Agent; the first 100 rows are kept",
        params: MapParams,
        querystring: NativeQueryTestQuery,
        body: MapModelBody,
        response: { 200: NativeQueryTestStarted },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const tests = await mapPreviews.nativeQueryTest(
        org,
        req.params.solutionId,
        req.params.mapId,
        req.query.nativeQueryBlockID || undefined,
        req.body,
      );
      return {
        mapId: req.params.mapId,
        tests: tests.map((t) => ({ id: t.id, nativeQueryBlockID: t.blockId, blockName: t.blockName })),
      };
    },
  );

  app.get(
    `${M}/nativequerytest`,
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'POLL: the latest native query test of the Block (404 until the Agent answered)',
        params: MapParams,
        querystring: NativeQueryTestQuery,
        response: { 200: PreviewAnswer },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toPreview(
        await mapPreviews.nativeQueryTestResult(
          org.id,
          req.params.solutionId,
          req.params.mapId,
          req.query.nativeQueryBlockID || undefined,
        ),
      );
    },
  );

  app.post(
    `${M}/run`,
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          "Run this one Map on the Solution's Agent (recorded in History as a run of the Solution); ignored while the Solution runs",
        params: MapParams,
        response: { 200: MapRunAnswer },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toMapRun(await mapRuns.run(org, req.params.solutionId, req.params.mapId));
    },
  );

  app.get(
    `${M}/run/:commandId`,
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary:
          'The status of a single-Map run: queued, running, finished (with its History execution), failed or ignored',
        params: MapRunParams,
        response: { 200: MapRunAnswer },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toMapRun(await mapRuns.status(org.id, req.params.solutionId, req.params.mapId, req.params.commandId));
    },
  );
};

export default mapAgentRoutes;
