import { z } from 'zod';
import { PREVIEW_LIMIT } from '../../../src/protocol/previews.js';
import { RUN_RESULTS } from '../../../src/protocol/solutions.js';
import { Guid, Timestamp } from './common.js';
import { MapParams } from './map.schema.js';

/** A Map model sent with a preview or a native query test instead of the stored Map (optional). */
export const MapModelBody = z
  .record(z.string(), z.unknown())
  .nullish()
  .describe(
    'A Map model (version 3.0, or a 2.x export later than 2.0) used instead of the stored Map; a model of version 2.0 or older is refused: upgrade it first.',
  );

export const PreviewQueryQuery = z.object({
  blockId: z
    .string()
    .trim()
    .max(100)
    .optional()
    .describe("the Fetch (or Query) Block to preview; blank: the Map's Query Block"),
});

export const PreviewParams = MapParams.extend({ previewId: Guid });
export const MapRunParams = MapParams.extend({ commandId: Guid });

export const NativeQueryTestQuery = z.object({
  nativeQueryBlockID: z
    .string()
    .trim()
    .max(100)
    .optional()
    .describe(
      'the Native Query Block; blank: every Native Query Block of the Map (POST), the latest test of any (GET)',
    ),
});

export const PreviewStarted = z.object({
  previewId: z.string(),
  mapId: z.number().int(),
  blockId: z.string(),
  blockName: z.string(),
  limit: z
    .number()
    .int()
    .describe(
      `most records the preview answers with (at most ${PREVIEW_LIMIT}; a Fetch Block's maxRecords when lower)`,
    ),
});

export const NativeQueryTestStarted = z.object({
  mapId: z.number().int(),
  tests: z.array(z.object({ id: z.string(), nativeQueryBlockID: z.string(), blockName: z.string() })),
});

const Value = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/** The result of a preview or a native query test, once the Agent answered. */
export const PreviewAnswer = z.object({
  previewId: z.string().describe("the preview's or native query test's ID"),
  mapId: z.number().int(),
  blockId: z.string(),
  blockName: z.string(),
  entity: z.string().nullable(),
  connectionId: z.string(),
  status: z.enum(['Completed', 'Failed']),
  isComplete: z.literal(true),
  hasError: z.boolean(),
  errorCode: z.string().nullable().describe("the error's code (a CON_ code for the Connector's errors) when hasError"),
  message: z.string().describe("the error's message when hasError"),
  fields: z.array(z.string()),
  records: z.array(z.record(z.string(), Value)),
  recordCount: z.number().int(),
  limit: z.number().int().describe(`most records answered (at most ${PREVIEW_LIMIT})`),
  truncated: z.boolean().describe('more records exist than are answered'),
  requestedAt: Timestamp,
  completedAt: Timestamp.nullable(),
});
export type PreviewAnswer = z.infer<typeof PreviewAnswer>;

/** A single-Map run command and its run. */
export const MapRunAnswer = z.object({
  commandId: z.string(),
  solutionId: z.string(),
  mapId: z.number().int(),
  status: z.enum(['queued', 'running', 'finished', 'failed', 'ignored']),
  ignored: z
    .boolean()
    .describe('true when the Map or its Solution was running: the command was ignored, without an error'),
  message: z.string(),
  runId: z
    .string()
    .nullable()
    .describe('the History processExecutionId of the run (when ignored: of the run in progress)'),
  prepareId: z.string().nullable().describe('the prepare the run waited for, when the Solution was not prepared'),
  executionId: z.number().int().nullable().describe('the History execution ID, once the run started'),
  result: z.enum([...RUN_RESULTS, 'InProgress']).nullable(),
  recordsProcessed: z.number().int().nullable(),
  recordsFailed: z.number().int().nullable(),
  startTime: Timestamp.nullable(),
  stopTime: Timestamp.nullable(),
  mapStatistics: z.record(z.string(), z.unknown()).nullable().describe("the Map's statistics in the execution"),
  requestedAt: Timestamp,
});
export type MapRunAnswer = z.infer<typeof MapRunAnswer>;
