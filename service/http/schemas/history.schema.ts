import { z } from 'zod';
import {
  EXECUTION_SORTS,
  executionSortOf,
  HISTORY_RESULTS,
  historyResultOf,
  parseInstant,
} from '../../history/query.js';
import { decimal, MAX_INT, PageQuery, Timestamp } from './common.js';
import { SolutionParams } from './solution.schema.js';

/**
 * An execution in a path: its integer `id`, or (a Ferry addition) its run ID, the
 * `processExecutionId` GUID, since SPEC.md calls the execution ID a GUID.
 */
export const ExecutionRef = z
  .union([decimal(z.number().int().positive().max(MAX_INT)), z.string().min(1).max(100)])
  .describe("the execution's integer id, or its processExecutionId");

export const ExecutionParams = SolutionParams.extend({ id: ExecutionRef });
export const ExecutionErrorsParams = SolutionParams.extend({ historyId: ExecutionRef });
export const ExecutionErrorParams = ExecutionErrorsParams.extend({
  id: z.string().min(1).max(100).describe("the error's id"),
});

/** Text in any case (or, `also`, another spelling) read as one of `values`; anything else is left for the enum to refuse. */
const oneOf = <const T extends readonly [string, ...string[]]>(
  values: T,
  read: (text: string) => T[number] | undefined,
) => z.preprocess((v) => (typeof v === 'string' ? (read(v) ?? v) : v), z.enum(values));

const LaterThanDate = z
  .string()
  .max(64)
  .transform((text, ctx) => {
    const at = parseInstant(text);
    if (at === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be a date (2024-1-31) or a date and time (2024-01-31T10:00:00Z)',
        input: text,
      });
      return z.NEVER;
    }
    return at;
  });

export const ExecutionListQuery = PageQuery.extend({
  laterThanDate: LaterThanDate.optional().describe(
    'executions that started at or after this (UTC unless an offset is given); default: the last 45 days',
  ),
  result: oneOf(HISTORY_RESULTS, historyResultOf).optional().describe('only executions with this result, any case'),
  executionHistoryColumnSort: oneOf(EXECUTION_SORTS, executionSortOf)
    .default('Start')
    .describe('Start (default), Result, RecordsProcessed or RecordsFailed, any case, or its index 0..3'),
  sortOrder: oneOf(['asc', 'desc'], (t) =>
    t.toLowerCase() === 'asc' ? 'asc' : t.toLowerCase() === 'desc' ? 'desc' : undefined,
  ).default('asc'),
});

export const MapStatistic = z.object({
  mapId: z.number().int().nullable().describe('null for an entity of a Replication run'),
  mapName: z.string(),
  entityName: z.string().nullable(),
  recordsProcessed: z.number().int(),
  recordsFailed: z.number().int(),
  minimum: z.number().describe('shortest time of one record, ms'),
  maximum: z.number().describe('longest time of one record, ms'),
  average: z.number().describe('mean time of one record, ms'),
  totalTime: z.number().describe('total time, ms'),
  totalTimeFormatted: z.string().describe('totalTime as hh:mm:ss'),
  fatalError: z.string().nullable().describe('the fatal error the Map or entity ended with'),
});

export const LegacyCounter = z.object({
  mapName: z.string(),
  blockId: z.string(),
  blockName: z.string(),
  actionType: z.string().describe("the Block's kind (Query, Create, Upsert, …)"),
  callCount: z.number().int().describe('records the Block handled'),
  errorCount: z.number().int().describe('records that failed in it'),
  minimum: z.number().describe('ms'),
  maximum: z.number().describe('ms'),
  average: z.number().describe('ms'),
  totalTime: z.number().describe('ms'),
});

export const ExecutionStatistics = z.object({
  mapStatistics: z.array(MapStatistic),
  legacyCounters: z.array(LegacyCounter),
});

/** The Solution execution model (SPEC.md "Solution execution (History)"). */
export const Execution = z.object({
  id: z.number().int().describe('the History id (an integer)'),
  processExecutionId: z.string().describe("the run's GUID, named by every report about it"),
  solutionId: z.string(),
  agentId: z.string().describe('Ferry addition: the Agent that ran it'),
  start: Timestamp,
  stop: Timestamp.nullable().describe('null while the run is going'),
  duration: z.number().describe('seconds (with milliseconds), up to now while the run is going'),
  result: z.enum(HISTORY_RESULTS),
  details: z
    .string()
    .nullable()
    .describe(
      "the fatal error's text, or why the run stopped early; while the run is going and its Agent is away, which Agent and since when",
    ),
  recordsProcessed: z.number().int(),
  recordsFailed: z.number().int(),
  reprocessRecordsRemaining: z.number().int().describe('record errors that can still be reprocessed'),
  isReprocessJob: z.boolean(),
  sourceDataLocal: z.boolean().describe('whether the failed source records stay with the Agent'),
  stopped: z.boolean().describe('Ferry addition: a user stopped the run'),
  trigger: z.string().describe('Ferry addition: start (a start call) or schedule'),
  dueAt: Timestamp.nullable().describe('Ferry addition: the due time a scheduled run fired for'),
  mapStatistics: z.array(MapStatistic),
  legacyCounters: z.array(LegacyCounter),
});
export type Execution = z.infer<typeof Execution>;

/** A record error (SPEC.md "Error"). */
export const RecordError = z.object({
  id: z.string(),
  failedRecordId: z.string().nullable().describe('the source record with the error, when captured'),
  mapName: z.string(),
  sourceEntity: z.string(),
  errorMessage: z.string(),
  errorDetail: z.string(),
  additionalErrorDetails: z.string(),
  canReprocess: z.boolean(),
  marked: z.boolean(),
  mapId: z.number().int().nullable().describe('Ferry addition'),
  blockName: z.string().nullable().describe('Ferry addition: the Block the record failed in'),
  code: z.string().describe('Ferry addition: the error code (docs/errors.md)'),
  created: Timestamp.describe('Ferry addition: when the Service received it'),
  sourceKey: z
    .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]))
    .nullable()
    .describe(
      "Ferry addition: the failed source record's key, its entity's primary-key fields and values; null when it has none or the Agent did not send it",
    ),
  sourceRow: z
    .number()
    .int()
    .nullable()
    .describe("Ferry addition: the failed source record's position in the run's read, from 1; null when not known"),
});
export type RecordError = z.infer<typeof RecordError>;

/** A due time that did not start a run (a Ferry addition). */
export const ScheduleSkip = z.object({
  solutionId: z.string(),
  dueAt: Timestamp,
  reason: z
    .string()
    .describe(
      'running (the previous run was still going), missed (the Agent was down past the grace period) or paused',
    ),
  at: Timestamp.describe('when the Agent decided it'),
});
export type ScheduleSkip = z.infer<typeof ScheduleSkip>;

/** SPEC.md "Failed Record": the source record of a record error kept in the cloud. */
export const FailedRecord = z
  .object({
    id: z.string().describe("the record error's id"),
    name: z.string().describe('the entity'),
    properties: z
      .array(z.object({ key: z.string(), value: z.unknown() }))
      .describe("the source record's fields the Map reads"),
    children: z.array(z.object({ key: z.string(), value: z.unknown() })),
    sourceData: z.record(z.string(), z.unknown()).describe('the source record as one object'),
  })
  .meta({ id: 'FailedRecord' });
export type FailedRecord = z.infer<typeof FailedRecord>;
