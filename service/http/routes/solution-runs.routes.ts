import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { toMonitor, toPrepareJob } from '../mappers/solution-runs.js';
import { SolutionParams } from '../schemas/solution.schema.js';
import { ChangeCaptureStatusResult } from '../../../src/protocol/solutions.js';
import { MonitorAnswer, PrepareJob, PrepareParams, StartAnswer, StopAnswer } from '../schemas/solution-runs.schema.js';

const tags = ['Solutions'];

/** Prepare, start, stop and monitor a Solution (SPEC.md "Solutions"); the runs execute on its Agent. */
const solutionRunsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { prepareJobs, solutionRuns } = deps;

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/prepare',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          "Start preparing the Solution: its Connections' metadata through its Agent, every Map validated and compiled",
        params: SolutionParams,
        response: { 200: PrepareJob },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const { job } = await prepareJobs.start(org, req.params.solutionId);
      return toPrepareJob(job);
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/prepare/:prepareId',
    {
      config: { access: 'read', polled: true },
      schema: {
        tags,
        summary: 'A prepare job: isComplete, hasError, mapErrorModels',
        params: PrepareParams,
        response: { 200: PrepareJob },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toPrepareJob(await prepareJobs.get(org.id, req.params.solutionId, req.params.prepareId));
    },
  );

  for (const path of [
    '/v1/orgs/:orgId/solutions/:solutionId/start',
    '/v1/orgs/:orgId/solutions/:solutionId/commands/start',
  ]) {
    app.post(
      path,
      {
        config: { access: 'write' },
        schema: {
          tags,
          summary: 'Start a run now (prepares first when needed; ignored while a run is in progress)',
          params: SolutionParams,
          response: { 200: StartAnswer },
        },
      },
      async (req) => {
        const { org } = orgOf(req);
        return solutionRuns.start(org, req.params.solutionId);
      },
    );
  }

  for (const path of [
    '/v1/orgs/:orgId/solutions/:solutionId/stop',
    '/v1/orgs/:orgId/solutions/:solutionId/commands/stop',
  ]) {
    app.post(
      path,
      {
        config: { access: 'write' },
        schema: {
          tags,
          summary: 'Stop the run in progress between batches',
          params: SolutionParams,
          response: { 200: StopAnswer },
        },
      },
      async (req) => {
        const { org } = orgOf(req);
        return solutionRuns.stop(org, req.params.solutionId);
      },
    );
  }

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/startmonitor',
    {
      config: { access: 'read', polled: true },
      schema: {
        tags,
        summary: "The records processed so far by the run in progress; when none runs, the last run's final counts",
        params: SolutionParams,
        response: { 200: MonitorAnswer },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toMonitor(await solutionRuns.monitor(org, req.params.solutionId));
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/changecapture',
    {
      config: { access: 'read', polled: true },
      schema: {
        tags,
        summary:
          "A Replication that reads its source's log: the replication slot, the log the source keeps for it, and whether it was invalidated",
        params: SolutionParams,
        response: { 200: ChangeCaptureStatusResult.extend({ solutionId: z.string() }) },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return solutionRuns.changeCapture(org, req.params.solutionId);
    },
  );

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/stopmonitor',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Stop monitoring (monitoring holds nothing on the Service: always succeeds)',
        params: SolutionParams,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      orgOf(req);
      return reply.code(204).send(null);
    },
  );
};

export default solutionRunsRoutes;
