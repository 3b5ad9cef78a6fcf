import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { toExecution, toFailedRecord, toRecordError, toScheduleSkip } from '../mappers/history.js';
import { PageQuery, sendList } from '../schemas/common.js';
import {
  Execution,
  ExecutionErrorParams,
  FailedRecord,
  ExecutionErrorsParams,
  ExecutionListQuery,
  ExecutionParams,
  ExecutionStatistics,
  RecordError,
  ScheduleSkip,
} from '../schemas/history.schema.js';
import { SolutionParams } from '../schemas/solution.schema.js';
import {
  MarkErrorQuery,
  MarkExecutionAnswer,
  MarkExecutionQuery,
  ReprocessAnswer,
  ReprocessParams,
} from '../schemas/history-reprocess.schema.js';

const tags = ['History'];
const H = '/v1/orgs/:orgId/solutions/:solutionId/history';

/** The executions of a Solution, one execution and its statistics, and the skipped due times. */
const executionRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { history } = deps;

  app.get(
    H,
    {
      config: { access: 'read', polled: true },
      schema: {
        tags,
        summary:
          "The Solution's executions since laterThanDate (default: the last 45 days), filtered by result, sorted",
        params: SolutionParams,
        querystring: ExecutionListQuery,
        response: { 200: z.array(Execution) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { items, total } = await history.list(org.id, req.params.solutionId, req.query);
      return sendList(reply, items.map(toExecution), total);
    },
  );

  // Registered before `${H}/:id`; the router prefers the static segment anyway.
  app.get(
    `${H}/skipped`,
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary:
          'Ferry addition: the due times of the schedule that did not start a run, newest first, with the reason',
        params: SolutionParams,
        querystring: PageQuery,
        response: { 200: z.array(ScheduleSkip) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { items, total } = await history.skipped(org.id, req.params.solutionId, req.query);
      return sendList(reply, items.map(toScheduleSkip), total);
    },
  );

  app.get(
    `${H}/:id`,
    {
      config: { access: 'read', polled: true },
      schema: {
        tags,
        summary: 'One execution, by its id (or its processExecutionId)',
        params: ExecutionParams,
        response: { 200: Execution },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toExecution(await history.get(org.id, req.params.solutionId, req.params.id));
    },
  );

  app.get(
    `${H}/:id/statistics`,
    {
      config: { access: 'read', polled: true },
      schema: {
        tags,
        summary: "An execution's statistics per Map (or entity) and per Block; empty while it runs",
        params: ExecutionParams,
        response: { 200: ExecutionStatistics },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return history.statistics(org.id, req.params.solutionId, req.params.id);
    },
  );
};

/** An execution's record errors and the failed source records behind them. */
const recordErrorRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { history } = deps;

  app.get(
    `${H}/:historyId/errors`,
    {
      config: { access: 'read', polled: true },
      schema: {
        tags,
        summary: "An execution's record errors in order of arrival",
        params: ExecutionErrorsParams,
        querystring: PageQuery,
        response: { 200: z.array(RecordError) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { items, total } = await history.errors(org.id, req.params.solutionId, req.params.historyId, req.query);
      return sendList(reply, items.map(toRecordError), total);
    },
  );

  app.get(
    `${H}/:historyId/errors/:id`,
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'One record error of an execution',
        params: ExecutionErrorParams,
        response: { 200: RecordError },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toRecordError(await history.error(org.id, req.params.solutionId, req.params.historyId, req.params.id));
    },
  );

  app.get(
    `${H}/:historyId/failedrecords/:id`,
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary:
          "The failed source record of a record error (id = the error's id), when the Organization keeps failed records in the cloud; 409 when they are kept on the Agent",
        params: ExecutionErrorParams,
        response: { 200: FailedRecord },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toFailedRecord(
        await history.failedRecord(org.id, req.params.solutionId, req.params.historyId, req.params.id),
      );
    },
  );
};

/** Reprocessing marks, on one record error or the whole execution, and the reprocessing of the marked records. */
const reprocessRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { history } = deps;

  app.post(
    `${H}/:historyId/errors/:id/mark`,
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          'Sets (mark=true, the default) or clears (mark=false) the reprocessing mark of a record error; only one with canReprocess true can be marked (409 otherwise)',
        params: ExecutionErrorParams,
        querystring: MarkErrorQuery,
        response: { 200: RecordError },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toRecordError(
        await history.mark(org.id, req.params.solutionId, req.params.historyId, req.params.id, req.query.mark),
      );
    },
  );

  app.post(
    `${H}/:id/mark`,
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          'Marks (mark=true) or unmarks (mark=false, the default) every record error of the execution that can be reprocessed',
        params: ExecutionParams,
        querystring: MarkExecutionQuery,
        response: { 200: MarkExecutionAnswer },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return history.markAll(org.id, req.params.solutionId, req.params.id, req.query.mark);
    },
  );

  const reprocessSummary =
    "Reprocesses the marked records of the execution on the Solution's Agent, from their stored copies, as a new execution (isReprocessJob true); each record once; ignored while the Solution runs";
  app.post(
    `${H}/:historyId/:id/reprocess`,
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: `${reprocessSummary} (historyId and id both name the execution)`,
        params: ReprocessParams,
        response: { 200: ReprocessAnswer },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return history.reprocess(org.id, req.params.solutionId, req.params.historyId, req.params.id);
    },
  );

  app.post(
    `${H}/:id/reprocess`,
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: `${reprocessSummary} (the path older clients call)`,
        params: ExecutionParams,
        response: { 200: ReprocessAnswer },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return history.reprocess(org.id, req.params.solutionId, req.params.id);
    },
  );
};

/**
 * The History of a Solution: executions, their statistics and record errors, skipped due times,
 * failed records, marks and reprocessing (SPEC.md "History, errors and failed records").
 */
const historyRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  await executionRoutes(app, deps);
  await recordErrorRoutes(app, deps);
  await reprocessRoutes(app, deps);
};

export default historyRoutes;
