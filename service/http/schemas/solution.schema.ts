import { z } from 'zod';
import {
  DAYS_OPTIONS,
  SCHEDULE_OPTIONS,
  TIME_INTERVAL_UNITS,
  TIME_OPTIONS,
  WEEKDAYS,
} from '../../../src/protocol/schedule.js';
import { SELECTION_TYPES, SOLUTION_SORTS } from '../../solutions/solutions.js';
import { SOLUTION_STATUSES, SOLUTION_TYPES } from '../../solutions/status.js';
import { Guid, Name, OrgParams, PageQuery, Text, Timestamp } from './common.js';
import { MapLink } from './map.schema.js';
import { CHANGE_CAPTURE_METHODS, ChangeCaptureSettings } from '../../../src/protocol/solutions.js';

export const SolutionParams = OrgParams.extend({ solutionId: Guid });

/** One of `values`, accepted in any case and answered in the spelling of `values`. */
const anyCase = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.preprocess(
    (v) => (typeof v === 'string' ? (values.find((x) => x.toLowerCase() === v.toLowerCase()) ?? v) : v),
    z.enum(values),
  );

export const SolutionTypeSchema = anyCase(SOLUTION_TYPES);

const EntityName = z.string().trim().min(1).max(1000);

/** A Replication Solution's entity selection. */
export const ReplicationSettings = z.object({
  selectionType: z.enum(SELECTION_TYPES),
  entities: z.array(z.string()),
  changeCapture: ChangeCaptureSettings.optional().describe(
    'how runs read what changed: Logical reads the source log (docs/change-capture.md); absent: net change',
  ),
});

/** The Solution model (SPEC.md, with the fields DESIGN.md lists from clients of the original service). */
export const Solution = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  solutionType: z.enum(SOLUTION_TYPES),
  status: z
    .enum(SOLUTION_STATUSES)
    .describe(
      'derived: Disabled; Incomplete until prepared since the last change; what the Agent status means (AgentShutdown, AgentHeartbeatLate, …); InProgress; WaitingForEvent, Idle (scheduled) or OnDemand',
    ),
  agentId: z.string(),
  connectionIdForSource: z.string().nullable(),
  connectionIdForTarget: z.string().nullable(),
  replicationSettings: ReplicationSettings.nullable().describe(
    'Replication Solutions only: the entities the next run copies',
  ),
  entities: z.array(z.string()).describe("SPEC.md's form of replicationSettings.entities"),
  checkForBulk: z.boolean(),
  isDisabled: z.boolean(),
  reasonDisabled: z.number().int().describe('0 while enabled, 1 when a user disabled the Solution'),
  inProgressStartTime: Timestamp.nullable(),
  lastRunTime: Timestamp.nullable(),
  nextRunTime: Timestamp.nullable(),
  minAgentVersion: z.string().nullable(),
  sharedFromSolutionId: z
    .string()
    .nullable()
    .describe("a by-reference copy's source Solution, whose Maps it runs (docs/solutions.md); null otherwise"),
  mapLinks: z
    .array(MapLink)
    .describe(
      "the Maps in run order; always [] for a Replication Solution and for a by-reference copy (its source's Maps)",
    ),
  creationDate: Timestamp,
  lastModificationDate: Timestamp,
  modificationBy: z.string().nullable(),
});
export type Solution = z.infer<typeof Solution>;

const ReadOnlyText = z.string().max(100).nullable().optional();

/** A Map link as clients send it back; only id and index count (the run order), the other fields are ignored. */
const MapLinkInput = z.strictObject({
  id: z.number().int().nullable().optional(),
  index: z.number().int().nullable().optional(),
  name: z.string().max(255).nullable().optional(),
  enabled: z.boolean().nullable().optional(),
  valid: z.boolean().nullable().optional(),
  mapType: z.string().max(100).nullable().optional(),
  sources: z.unknown().optional(),
  targets: z.unknown().optional(),
  lockedBy: z.string().max(320).nullable().optional(),
  lockDate: ReadOnlyText,
  eventUrl: z.string().max(2000).nullable().optional(),
  lastModified: ReadOnlyText,
  modifiedBy: z.string().max(320).nullable().optional(),
  description: Text.nullable().optional(),
});

/**
 * The Solution model clients send (create and modify). Fields the Service owns (status, run
 * times, dates, …) are accepted so that a model read with GET can be sent back, and ignored;
 * fields the model does not have are a 400.
 */
export const SolutionInput = z.strictObject({
  id: z.string().max(100).nullable().optional(),
  name: Name,
  description: Text.nullable().optional(),
  solutionType: SolutionTypeSchema,
  agentId: Guid,
  connectionIdForSource: Guid.nullable().optional(),
  connectionIdForTarget: Guid.nullable().optional(),
  replicationSettings: z
    .strictObject({
      selectionType: anyCase(SELECTION_TYPES),
      entities: z.array(EntityName).max(10_000).nullable().optional(),
      changeCapture: z
        .strictObject({
          method: anyCase(CHANGE_CAPTURE_METHODS),
          continuous: z.boolean().nullable().optional(),
          retainedWalWarningMb: z.number().int().min(1).max(1_000_000).nullable().optional(),
        })
        .nullable()
        .optional(),
    })
    .nullable()
    .optional(),
  entities: z.array(EntityName).max(10_000).nullable().optional(),
  checkForBulk: z.boolean().nullable().optional(),
  isDisabled: z.boolean().nullable().optional(),
  mapLinks: z.array(MapLinkInput).max(1000).nullable().optional(),
  // Read-only: ignored.
  status: ReadOnlyText,
  reasonDisabled: z.number().int().nullable().optional(),
  inProgressStartTime: ReadOnlyText,
  lastRunTime: ReadOnlyText,
  nextRunTime: ReadOnlyText,
  minAgentVersion: ReadOnlyText,
  sharedFromSolutionId: ReadOnlyText,
  creationDate: ReadOnlyText,
  lastModificationDate: ReadOnlyText,
  modificationBy: z.string().max(320).nullable().optional(),
});
export type SolutionInput = z.infer<typeof SolutionInput>;

/** `checkForBulk` may also travel in the query string (SPEC.md: "model; checkForBulk"); the body wins. */
export const CheckForBulkQuery = z.object({ checkForBulk: z.stringbool().optional() });

export const SolutionListQuery = PageQuery.extend({
  /** Part of the name, any case. */
  solutionNameFilter: z.string().max(255).optional(),
  solutionType: SolutionTypeSchema.optional(),
  solutionStatusFilter: anyCase(SOLUTION_STATUSES).optional(),
  sortName: anyCase(SOLUTION_SORTS).default('Name'),
  sortOrder: anyCase(['asc', 'desc']).default('asc'),
});

// ── the schedule model as answered (the request side is src/protocol/schedule.ts Schedule, which also reads the spellings clients send) ──

const opt = <T extends z.ZodType>(t: T) => t.nullable().optional();
export const ScheduleAnswer = z
  .object({
    scheduleOption: z.enum(SCHEDULE_OPTIONS),
    solutionId: z.string(),
    runOnceOptions: opt(z.object({ dateTime: opt(z.string()) })),
    recurringOptions: opt(
      z.object({
        days: opt(
          z.object({
            daysOption: opt(z.enum(DAYS_OPTIONS)),
            daysIntervalStartDate: opt(z.string()),
            daysInterval: opt(z.number().int()),
            daysOfMonth: opt(z.array(z.number().int().nullish())),
            daysOfWeek: opt(z.array(z.enum(WEEKDAYS).nullish())),
            lastDayOfMonth: opt(z.boolean()),
          }),
        ),
        times: opt(
          z.object({
            timeOption: opt(z.enum(TIME_OPTIONS)),
            hourlyMinutes: opt(z.number().int()),
            timeOfDay: opt(z.string()),
            timeInterval: opt(z.number().int()),
            timeIntervalUnit: opt(z.enum(TIME_INTERVAL_UNITS)),
          }),
        ),
        timeZone: opt(z.string()),
      }),
    ),
  })
  .describe(
    'A Solution schedule: OnDemand, RunOnce (runOnceOptions.dateTime) or Recurring (days, times, timeZone as sent)',
  );
