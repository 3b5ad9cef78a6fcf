import { z } from 'zod';
import { decimal, MAX_INT, qbool } from './common.js';
import { ExecutionRef } from './history.schema.js';
import { SolutionParams } from './solution.schema.js';

/** `POST H/{historyId}/errors/{id}/mark`: `mark` true (default) sets the mark, false clears it. */
export const MarkErrorQuery = z.object({
  mark: qbool(true).describe('true (default) marks the record error for reprocessing, false unmarks it'),
});
/** `POST H/{id}/mark`: `mark` false (default) clears every mark of the execution, true sets them. */
export const MarkExecutionQuery = z.object({
  mark: qbool(false).describe(
    'true marks every record error of the execution that can be reprocessed; false (default) unmarks them',
  ),
});

export const MarkExecutionAnswer = z.object({
  historyId: z.number().int().describe('the execution'),
  mark: z.boolean(),
  changed: z.number().int().describe('record errors whose mark changed'),
  reprocessRecordsRemaining: z.number().int().describe('record errors of the execution that can still be reprocessed'),
});
export type MarkExecutionAnswer = z.infer<typeof MarkExecutionAnswer>;

/** `POST H/{historyId}/{id}/reprocess`: both name the execution (its id or its processExecutionId). */
export const ReprocessParams = SolutionParams.extend({ historyId: ExecutionRef, id: ExecutionRef });

export const ReprocessAnswer = z.object({
  solutionId: z.string(),
  historyId: z.number().int().describe('the execution whose marked records are reprocessed'),
  runId: z
    .string()
    .nullable()
    .describe(
      "the reprocess run: its own execution's processExecutionId (isReprocessJob true); when ignored because the Solution runs, the run in progress",
    ),
  started: z
    .boolean()
    .describe('false when no record was marked or the Solution is running (then the records stay marked)'),
  records: z.number().int().describe('records the run reprocesses'),
  message: z.string(),
});
export type ReprocessAnswer = z.infer<typeof ReprocessAnswer>;

/** `GET /v1/agent/reprocess/{runId}/records` (an Agent's bearer credentials). */
export const ReprocessPageParams = z.object({ runId: z.string().min(1).max(100) });
export const ReprocessPageQuery = z.object({
  mapId: decimal(z.number().int().min(0).max(MAX_INT)),
  after: decimal(z.number().int().min(0).max(MAX_INT).default(0)),
});
