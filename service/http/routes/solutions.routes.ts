import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { SolutionView } from '../../solutions/solutions.js';
import { serviceBaseUrl } from '../base-url.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { eventUrlsOf, type EventUrls } from '../mappers/map.js';
import { toScheduleAnswer, toSolution } from '../mappers/solution.js';
import { OrgParams, sendCreated, sendList } from '../schemas/common.js';
import { Schedule } from '../../../src/protocol/schedule.js';
import {
  CheckForBulkQuery,
  ScheduleAnswer,
  Solution,
  SolutionInput,
  SolutionListQuery,
  SolutionParams,
} from '../schemas/solution.schema.js';

const tags = ['Solutions'];

/** Solutions: list, create, get, modify, delete, and their schedule (SPEC.md "Solutions"). */
const solutionsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { solutions } = deps;
  /** The event URLs of the Solutions' message Maps (their links' eventUrl). */
  const eventUrls = (req: FastifyRequest, orgId: number, views: readonly SolutionView[]): Promise<EventUrls> =>
    eventUrlsOf(
      deps.store.db,
      orgId,
      views.flatMap((v) => v.maps.map((m) => m.id)),
      () => serviceBaseUrl(req, deps.config),
    );

  app.get(
    '/v1/orgs/:orgId/solutions',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Solutions, filtered by name, type and status, sorted',
        params: OrgParams,
        querystring: SolutionListQuery,
        response: { 200: z.array(Solution) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { items, total } = await solutions.list(org.id, req.query);
      const urls = await eventUrls(req, org.id, items);
      return sendList(
        reply,
        items.map((v) => toSolution(v, urls)),
        total,
      );
    },
  );

  app.post(
    '/v1/orgs/:orgId/solutions',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Create a Solution; it is Incomplete until prepared',
        params: OrgParams,
        querystring: CheckForBulkQuery,
        body: SolutionInput,
        response: { 201: Solution },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      const view = await solutions.create(org, req.body, userName(user), req.query.checkForBulk);
      return sendCreated(reply, `/v1/orgs/${org.id}/solutions/${view.row.id}`, toSolution(view));
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId',
    {
      config: { access: 'read', polled: true },
      schema: { tags, summary: 'One Solution', params: SolutionParams, response: { 200: Solution } },
    },
    async (req) => {
      const { org } = orgOf(req);
      const view = await solutions.get(org.id, req.params.solutionId);
      return toSolution(view, await eventUrls(req, org.id, [view]));
    },
  );

  app.put(
    '/v1/orgs/:orgId/solutions/:solutionId',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Modify a Solution; a new Replication source or target needs the entities selected again',
        params: SolutionParams,
        querystring: CheckForBulkQuery,
        body: SolutionInput,
        response: { 200: Solution },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      const view = await solutions.update(org, req.params.solutionId, req.body, userName(user), req.query.checkForBulk);
      return toSolution(view, await eventUrls(req, org.id, [view]));
    },
  );

  app.delete(
    '/v1/orgs/:orgId/solutions/:solutionId',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Delete a Solution that is not running',
        params: SolutionParams,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      await solutions.delete(org.id, req.params.solutionId);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/schedule',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: "The Solution's schedule (OnDemand when none was set)",
        params: SolutionParams,
        response: { 200: ScheduleAnswer },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toScheduleAnswer(await solutions.schedule(org.id, req.params.solutionId));
    },
  );

  app.put(
    '/v1/orgs/:orgId/solutions/:solutionId/schedule',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          "Set the Solution's schedule: OnDemand, RunOnce or Recurring (days, times, time zone as a Windows or IANA name)",
        params: SolutionParams,
        querystring: CheckForBulkQuery,
        body: Schedule,
        response: { 200: ScheduleAnswer },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      return toScheduleAnswer(
        await solutions.setSchedule(org, req.params.solutionId, req.body, userName(user), req.query.checkForBulk),
      );
    },
  );
};

export default solutionsRoutes;
