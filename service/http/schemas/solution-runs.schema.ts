import { z } from 'zod';
import { Guid, Timestamp } from './common.js';
import { BlockError } from './map-validation.schema.js';
import { SolutionParams } from './solution.schema.js';

/** SPEC.md "Prepare job". */
export const PrepareJob = z
  .object({
    id: z.string(),
    solutionId: z.string(),
    creationDate: Timestamp,
    isComplete: z.boolean(),
    hasError: z.boolean(),
    mapErrorModels: z.array(
      z.object({
        mapId: z.number().int(),
        message: z.string().describe("the Map's errors as one line, each named by its Block"),
        errors: z.array(BlockError).describe('the same errors, one entry per error with its Block'),
      }),
    ),
    message: z.string(),
  })
  .meta({ id: 'PrepareJob' });

export const PrepareParams = SolutionParams.extend({ prepareId: Guid });

/** The answer of POST S/start (and S/commands/start). */
export const StartAnswer = z
  .object({
    solutionId: z.string(),
    runId: z
      .string()
      .nullable()
      .describe('the run started, or the one in progress when the start was ignored: History processExecutionId'),
    started: z.boolean().describe('false when a run of the Solution was already in progress (the start is ignored)'),
    prepareId: z
      .string()
      .nullable()
      .describe('set when the Solution was not prepared: the prepare job the start waits for'),
    message: z.string(),
  })
  .meta({ id: 'SolutionStart' });

export const StopAnswer = z
  .object({
    solutionId: z.string(),
    stopping: z.boolean().describe('false when no run was in progress'),
    runId: z.string().nullable(),
  })
  .meta({ id: 'SolutionStop' });

export const MonitorAnswer = z
  .object({
    solutionId: z.string(),
    running: z.boolean(),
    runId: z.string().nullable(),
    startedAt: Timestamp.nullable(),
    recordsProcessed: z.number().int(),
    recordsFailed: z.number().int(),
  })
  .meta({ id: 'SolutionMonitor' });
