import { z } from 'zod';
import { acknowledgement } from './acknowledgement.js';
import { ScheduleRule } from './schedule.js';

/**
 * Solutions on Agents and their runs: what prepare hands an Agent, and what the Agent reports
 * back about each run. Shared by both halves (src/protocol never imports either).
 *
 *   Service                                            Agent
 *     prepare ─▶ PreparedSolution (stored, versioned)
 *     connect / change ─▶ assignSolutions {solutionId, version}[] ─▶ drops the others,
 *                     ◀── {need: solutionIds it lacks at that version}
 *     putSolution {solution} ──────────────────────────▶ kept locally (encrypted: it holds properties)
 *     startSolution {solutionId, runId, mapIds?} ──────▶ run queue (ignored while one runs)
 *     stopSolution / monitorSolution ──────────────────▶ cancel between batches / counts so far
 *                     ◀── reports (durable outbox): runStarted, runProgress, runErrors, runFinished,
 *                                                   scheduleSkipped
 *
 * A run's ID is chosen by whoever starts it (the Service for a start call, the Agent for a
 * scheduled run), so every report about it is idempotent: the Service upserts by run ID.
 */

const Id = z.string().min(1).max(100);
const Timestamp = z.string().max(40);
const Name = z.string().max(500);

export const SOLUTION_TYPES = ['Replication', 'Integration', 'IntegrationEvent', 'Migration'] as const;
export const SolutionTypeSchema = z.enum(SOLUTION_TYPES);

/** A Connection a prepared Solution uses, with its plain properties (the channel is authenticated; the Agent stores them encrypted). */
export const PreparedConnection = z.object({
  connectionId: Id,
  connectorId: z.string().max(100),
  name: Name,
  properties: z.record(z.string().max(200), z.string().max(100_000)),
});
export type PreparedConnection = z.infer<typeof PreparedConnection>;

/** A Map of an IS/MS Solution as prepare compiled it: the current model (3.0), checked again by the Agent. */
export const PreparedMap = z.object({
  mapId: z.number().int(),
  name: Name,
  enabled: z.boolean(),
  /** The Map model (src/protocol/map.ts MapModel, version 3.0); the Agent parses it with that schema. */
  model: z.record(z.string(), z.unknown()),
});
export type PreparedMap = z.infer<typeof PreparedMap>;

/** What an RS Solution copies. `entities` is the resolved list (All / Recommended expanded at prepare). */
/** How a Replication reads what changed (docs/change-capture.md): a net-change stamp, or the source's log. */
export const CHANGE_CAPTURE_METHODS = ['NetChange', 'Logical'] as const;
export const ChangeCaptureSettings = z.object({
  method: z.enum(CHANGE_CAPTURE_METHODS),
  /** Logical: a run keeps applying changes until stopped (else it ends once caught up). */
  continuous: z.boolean(),
  /** Logical: the source's log kept for the Replication above which it warns (MB). */
  retainedWalWarningMb: z.number().int().min(1).max(1_000_000),
});
export type ChangeCaptureSettings = z.infer<typeof ChangeCaptureSettings>;
export const DEFAULT_RETAINED_WAL_WARNING_MB = 1024;

export const PreparedReplication = z.object({
  sourceConnectionId: Id,
  targetConnectionId: Id,
  selectionType: z.enum(['Selected', 'Recommended', 'All']),
  entities: z.array(z.string().max(1000)).max(10_000),
  checkForBulk: z.boolean(),
  /** Absent from older Services: net change. */
  changeCapture: ChangeCaptureSettings.optional(),
});
export type PreparedReplication = z.infer<typeof PreparedReplication>;

/** The Organization's failed-record capture switches (src/failures/capture.ts). */
export const CaptureSettingsSchema = z.object({
  captureOnFailedRecordsForReprocessing: z.boolean(),
  captureDuringCloudAppRuns: z.boolean(),
  captureDuringLocalAgentAppRuns: z.boolean(),
  isSourceDataLocal: z.boolean(),
});

/** Everything an Agent needs to run a Solution, without the Service. */
export const PreparedSolution = z.object({
  solutionId: Id,
  orgId: z.number().int(),
  name: Name,
  solutionType: SolutionTypeSchema,
  /** Changes whenever anything below does; the Agent keeps the one it was last given. */
  version: z.string().max(100),
  isDisabled: z.boolean(),
  /** Null: on demand. */
  schedule: ScheduleRule.nullable(),
  connections: z.array(PreparedConnection).max(500),
  /** IS/MS: in run order (mapLinks order); disabled ones are skipped by runs. */
  maps: z.array(PreparedMap).max(1000),
  /** RS only. */
  replication: PreparedReplication.nullable(),
  capture: CaptureSettingsSchema,
  /** The Lookup Tables the Maps read, by name: fetched by the Agent at run start. */
  lookupTables: z.array(z.string().max(200)).max(1000),
});
export type PreparedSolution = z.infer<typeof PreparedSolution>;

export const SolutionAssignment = z.object({ solutionId: Id, version: z.string().max(100) });
export type SolutionAssignment = z.infer<typeof SolutionAssignment>;

// ── Run reports ───────────────────────────────────────────────────────────────

/** Why a run started: a call, a schedule, or messages waiting for an Event Solution's Maps. */
export const RUN_TRIGGERS = ['start', 'schedule', 'event'] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];

/** History results (DESIGN.md "History"); InProgress is only ever shown, never reported as an end. */
export const RUN_RESULTS = [
  'CompletedSuccessfully',
  'CompletedWithErrors',
  'FatalError',
  'RecordErrorsAndFatalErrors',
] as const;
export type RunResult = (typeof RUN_RESULTS)[number];

/** Timing of one Block (or, for an RS entity, of its reads and writes) in a run. */
export const RunBlockStats = z.object({
  blockId: z.string().max(100),
  name: Name,
  blockType: z.string().max(100),
  processed: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  minMs: z.number().nonnegative(),
  maxMs: z.number().nonnegative(),
  avgMs: z.number().nonnegative(),
  totalMs: z.number().nonnegative(),
});

/** Statistics of one Map (IS/MS) or one entity (RS) of a run: SPEC.md's mapStatistics. */
export const RunMapStats = z.object({
  mapId: z.number().int().optional(),
  mapName: Name,
  entity: z.string().max(1000).optional(),
  processed: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  minMs: z.number().nonnegative(),
  maxMs: z.number().nonnegative(),
  avgMs: z.number().nonnegative(),
  totalMs: z.number().nonnegative(),
  totalTime: z.string().max(40),
  /** The Map's or entity's fatal error, when it ended with one. */
  fatal: z.string().max(10_000).optional(),
  blocks: z.array(RunBlockStats).max(300),
});
export type RunMapStats = z.infer<typeof RunMapStats>;

/** Key fields a record error carries at most, and characters of one text value (sourceKeyOf cuts longer ones). */
export const MAX_SOURCE_KEY_FIELDS = 16;
export const MAX_SOURCE_KEY_TEXT = 1000;
/** The source record's key: its entity's primary-key fields and their values (scalars). */
export type SourceKey = Record<string, string | number | boolean | null>;

/**
 * Checked by hand rather than as a zod record of a union: every record error of a report carries
 * one, and this costs the Service ≈ 0.05 µs a key against ≈ 0.36.
 */
function isSourceKey(k: unknown): k is SourceKey {
  if (typeof k !== 'object' || k === null || Array.isArray(k)) return false;
  let n = 0;
  for (const f in k) {
    if (++n > MAX_SOURCE_KEY_FIELDS || f.length > 500) return false;
    const v = (k as Record<string, unknown>)[f];
    if (
      v !== null &&
      typeof v !== 'boolean' &&
      (typeof v !== 'number' || !Number.isFinite(v)) &&
      (typeof v !== 'string' || v.length > MAX_SOURCE_KEY_TEXT)
    )
      return false;
  }
  return true;
}
export const SourceKey = z.custom<SourceKey>(isSourceKey, {
  message: `a source key: an object of at most ${MAX_SOURCE_KEY_FIELDS} fields, each a string of at most ${MAX_SOURCE_KEY_TEXT} characters, a number, a boolean or null`,
});

/**
 * The key a record error carries for a source record: the values of `fields` (its entity's primary
 * key), within the protocol's bounds (the first {@link MAX_SOURCE_KEY_FIELDS} fields, text cut to
 * {@link MAX_SOURCE_KEY_TEXT} characters); undefined when the entity has no key.
 */
export function sourceKeyOf(
  fields: readonly string[],
  record: Readonly<Record<string, unknown>>,
): SourceKey | undefined {
  if (fields.length === 0) return undefined;
  const key: SourceKey = {};
  const n = Math.min(fields.length, MAX_SOURCE_KEY_FIELDS);
  for (let i = 0; i < n; i++) {
    const f = fields[i] as string;
    key[f.slice(0, 500)] = keyValue(record[f]);
  }
  return key;
}

function keyValue(v: unknown): string | number | boolean | null {
  if (typeof v === 'string') return v.length > MAX_SOURCE_KEY_TEXT ? v.slice(0, MAX_SOURCE_KEY_TEXT) : v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'boolean' || v === null || v === undefined) return v ?? null;
  // Not a connector Value (a Date, a Buffer): its JSON text, within bounds.
  const text = v instanceof Date ? v.toISOString() : (JSON.stringify(v) ?? null);
  return text === null ? null : text.slice(0, MAX_SOURCE_KEY_TEXT);
}

/**
 * One record error of a run (SPEC.md "Error"). `sourceKey` and `sourceRow` name the failed
 * source record: its key when its entity has one, its position in the run's read (from 1) when
 * the reader knows it. Older Agents send neither; older Services drop both (unknown fields).
 */
export const RunRecordError = z.object({
  id: Id,
  mapId: z.number().int().optional(),
  mapName: Name,
  sourceEntity: z.string().max(1000),
  blockId: z.string().max(100).optional(),
  blockName: z.string().max(500).optional(),
  code: z.string().max(100),
  errorMessage: z.string().max(10_000),
  errorDetail: z.string().max(20_000),
  canReprocess: z.boolean(),
  failedRecordId: z.string().max(100).optional(),
  sourceKey: SourceKey.optional(),
  sourceRow: z.number().int().positive().optional(),
});
export type RunRecordError = z.infer<typeof RunRecordError>;

/** Record errors travel in reports of at most this many. */
export const MAX_ERRORS_PER_REPORT = 200;

export const RunStartedReport = z.object({
  kind: z.literal('runStarted'),
  runId: Id,
  solutionId: Id,
  trigger: z.enum(RUN_TRIGGERS),
  /** The due time a scheduled run fired for. */
  dueAt: Timestamp.optional(),
  at: Timestamp,
});
export const RunProgressReport = z.object({
  kind: z.literal('runProgress'),
  runId: Id,
  solutionId: Id,
  at: Timestamp,
  processed: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
});
/**
 * The fields of a record error that a report's errors may share: all but the error's own IDs and
 * its record's (failedRecordId, sourceKey, sourceRow). A
 * run's refused records mostly fail alike (same Map, Block, code and message), and sent once per
 * report they make a report of 200 errors about a sixth of the size (the Agent serializes,
 * stores, reads back and sends less; the Service parses and validates less).
 */
export const SharedErrorFields = RunRecordError.omit({
  id: true,
  failedRecordId: true,
  sourceKey: true,
  sourceRow: true,
}).partial();
type SharedErrorField = keyof z.infer<typeof SharedErrorFields>;
export const SHARED_ERROR_FIELDS: readonly SharedErrorField[] = SharedErrorFields.keyof().options;
/** The fields an error must have, itself or through the report's `shared`: those RunRecordError does not make optional. */
const REQUIRED_ERROR_FIELDS: readonly SharedErrorField[] = SHARED_ERROR_FIELDS.filter(
  (f) => !RunRecordError.shape[f].safeParse(undefined).success,
);
export type SharedErrorFields = z.infer<typeof SharedErrorFields>;

/**
 * A Service that states this feature in its hello reply (`features`) takes runErrors reports with
 * `shared` fields; an Agent sends any other Service every error whole.
 */
export const SHARED_ERRORS_FEATURE = 'runErrors.shared';
/** The Service takes runCommitted reports ({@link RunCommittedReport}); to a Service without it they are not sent. */
export const RUN_COMMITTED_FEATURE = 'runCommitted';

/**
 * Record errors of a run. With `shared`, each error leaves out the fields it has in common with
 * every other error of the report, and reads as `{...shared, ...error}` (errorsOf); without it, each
 * error is whole, as older Agents send them.
 */
export const RunErrorsReport = z
  .object({
    kind: z.literal('runErrors'),
    runId: Id,
    solutionId: Id,
    shared: SharedErrorFields.optional(),
    errors: z
      .array(RunRecordError.partial().required({ id: true }))
      .min(1)
      .max(MAX_ERRORS_PER_REPORT),
  })
  .superRefine((r, ctx) => {
    const shared = r.shared ?? {};
    r.errors.forEach((e, i) => {
      for (const f of REQUIRED_ERROR_FIELDS) {
        if (e[f] === undefined && shared[f] === undefined)
          ctx.addIssue({
            code: 'custom',
            path: ['errors', i, f],
            message: `${f} is required, in the error or in shared`,
          });
      }
    });
  });

/** A runErrors report's errors, each whole. */
export function errorsOf(r: {
  shared?: SharedErrorFields | undefined;
  errors: ReadonlyArray<Partial<RunRecordError> & { id: string }>;
}): RunRecordError[] {
  const shared = r.shared;
  // RunErrorsReport checked that every error has its required fields, itself or in shared.
  if (!shared) return r.errors as RunRecordError[];
  // One object shape for every error, built field by field: spreading two objects into a third cost ≈ 3 µs an error.
  return r.errors.map((e) => ({
    id: e.id,
    mapId: e.mapId ?? shared.mapId,
    mapName: (e.mapName ?? shared.mapName) as string,
    sourceEntity: (e.sourceEntity ?? shared.sourceEntity) as string,
    blockId: e.blockId ?? shared.blockId,
    blockName: e.blockName ?? shared.blockName,
    code: (e.code ?? shared.code) as string,
    errorMessage: (e.errorMessage ?? shared.errorMessage) as string,
    errorDetail: (e.errorDetail ?? shared.errorDetail) as string,
    canReprocess: (e.canReprocess ?? shared.canReprocess) as boolean,
    failedRecordId: e.failedRecordId,
    sourceKey: e.sourceKey,
    sourceRow: e.sourceRow,
  }));
}

/**
 * Errors as a report carries them to a Service with {@link SHARED_ERRORS_FEATURE}: the fields
 * every error has with one value go once, in `shared`, and each error keeps the rest.
 */
export function shareErrorFields(errors: readonly RunRecordError[]): {
  shared?: SharedErrorFields;
  errors: Array<Partial<RunRecordError> & { id: string }>;
} {
  const first = errors[0];
  if (!first || errors.length < 2) return { errors: [...errors] };
  const same = SHARED_ERROR_FIELDS.filter((f) => first[f] !== undefined && errors.every((e) => e[f] === first[f]));
  if (same.length === 0) return { errors: [...errors] };
  const shared: Record<string, unknown> = {};
  for (const f of same) shared[f] = first[f];
  const own = SHARED_ERROR_FIELDS.filter((f) => !same.includes(f));
  return {
    shared,
    errors: errors.map((e) => {
      const out: Record<string, unknown> = { id: e.id };
      for (const f of own) if (e[f] !== undefined) out[f] = e[f];
      if (e.failedRecordId !== undefined) out['failedRecordId'] = e.failedRecordId;
      if (e.sourceKey !== undefined) out['sourceKey'] = e.sourceKey;
      if (e.sourceRow !== undefined) out['sourceRow'] = e.sourceRow;
      return out as Partial<RunRecordError> & { id: string };
    }),
  };
}
export const RunFinishedReport = z.object({
  kind: z.literal('runFinished'),
  runId: Id,
  solutionId: Id,
  trigger: z.enum(RUN_TRIGGERS),
  startedAt: Timestamp,
  at: Timestamp,
  result: z.enum(RUN_RESULTS),
  processed: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  /** The fatal error's text (SPEC.md `details`), or why the run stopped early. */
  details: z.string().max(10_000).optional(),
  /** A user stopped it. */
  stopped: z.boolean(),
  /** Where the failed source records of this run are kept. */
  sourceDataLocal: z.boolean(),
  statistics: z.array(RunMapStats).max(1000),
});
/**
 * What a run that ended with its Agent process had written of one Map or entity, as a later run
 * found it in the target's checkpoint (src/maps/runtime/run-counts.ts): more than the run was
 * counted with when its end was reported. The Service keeps the larger figures (History's counts,
 * the Map's or entity's statistics, the stop time, the Subscription's usage), so a report applied
 * twice or late changes nothing more.
 */
export const RunCommittedReport = z.object({
  kind: z.literal('runCommitted'),
  runId: Id,
  solutionId: Id,
  /** The Map (Integration, Migration), or the entity (Replication). */
  mapId: z.number().int().optional(),
  mapName: Name,
  entity: z.string().max(1000).optional(),
  processed: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  /** When the batch that committed the checkpoint was written. */
  at: Timestamp,
});
export type RunCommittedReport = z.infer<typeof RunCommittedReport>;
/**
 * Failed source records kept in the cloud (the Organization's `isSourceDataLocal` false): the copy
 * of each record's source fields, stored by the Service under the record error's `failedRecordId`.
 */
export const RunFailedRecord = z.object({
  id: Id,
  mapId: z.number().int().optional(),
  mapName: Name,
  entity: z.string().max(1000),
  blockId: z.string().max(100),
  blockName: z.string().max(500),
  code: z.string().max(100),
  errorMessage: z.string().max(10_000),
  /** The source record's fields the Map reads. */
  source: z.record(z.string(), z.unknown()),
});
export type RunFailedRecord = z.infer<typeof RunFailedRecord>;
/** Failed records travel in reports of at most this many (and at most ~512 KiB of them). */
export const MAX_FAILED_RECORDS_PER_REPORT = 100;
export const RunFailedRecordsReport = z.object({
  kind: z.literal('runFailedRecords'),
  runId: Id,
  solutionId: Id,
  records: z.array(RunFailedRecord).min(1).max(MAX_FAILED_RECORDS_PER_REPORT),
});
export type RunFailedRecordsReport = z.infer<typeof RunFailedRecordsReport>;

/** A due time that did not start a run: the previous run still going, or missed while the Agent was down past the grace period. */
export const ScheduleSkippedReport = z.object({
  kind: z.literal('scheduleSkipped'),
  solutionId: Id,
  dueAt: Timestamp,
  reason: z.enum(['running', 'missed', 'paused']),
  at: Timestamp,
  /** On the oldest missed due time of a catch-up: how many even older ones were missed and are not reported one by one. */
  earlier: z.object({ count: z.number().int().nonnegative(), exact: z.boolean() }).optional(),
});

export type RunStartedReport = z.infer<typeof RunStartedReport>;
export type RunProgressReport = z.infer<typeof RunProgressReport>;
export type RunErrorsReport = z.infer<typeof RunErrorsReport>;
export type RunFinishedReport = z.infer<typeof RunFinishedReport>;
export type ScheduleSkippedReport = z.infer<typeof ScheduleSkippedReport>;

// ── Commands (Service → Agent) ────────────────────────────────────────────────

export const AssignSolutionsCommand = z.object({
  id: Id,
  type: z.literal('assignSolutions'),
  /** Every Solution the Agent holds a current assignment for; it drops any other before it fires anything. */
  assignments: z.array(SolutionAssignment).max(100_000),
});
/** Reply of assignSolutions: the Solutions the Agent lacks at the assigned version. */
export const AssignSolutionsResult = z.object({ need: z.array(Id) });
export type AssignSolutionsResult = z.infer<typeof AssignSolutionsResult>;

export const PutSolutionCommand = z.object({ id: Id, type: z.literal('putSolution'), solution: PreparedSolution });
/** Reply of putSolution: the version the Agent now holds (only an acknowledgement to the Service). */
export const PutSolutionResult = acknowledgement<{ version: string }>();

export const StartSolutionCommand = z.object({
  id: Id,
  type: z.literal('startSolution'),
  solutionId: Id,
  runId: Id,
  /** The version the Service holds: an Agent holding another answers AGT_SOLUTION_NOT_HELD, and is brought up to date first. */
  version: z.string().max(100).optional(),
  /**
   * Run only these Maps of the Solution (the Maps API's single-Map run), disabled ones included;
   * absent: every enabled Map. A Map the Agent's copy lacks is answered AGT_SOLUTION_NOT_HELD.
   */
  mapIds: z.array(z.number().int()).min(1).max(1000).optional(),
});
/** Reply of startSolution: whether this run started; when one was already running, its ID. */
export const StartSolutionResult = z.object({ started: z.boolean(), runId: Id.optional() });
export type StartSolutionResult = z.infer<typeof StartSolutionResult>;

export const StopSolutionCommand = z.object({ id: Id, type: z.literal('stopSolution'), solutionId: Id });
export const StopSolutionResult = z.object({ stopping: z.boolean(), runId: Id.optional() });
export type StopSolutionResult = z.infer<typeof StopSolutionResult>;

export const MonitorSolutionCommand = z.object({ id: Id, type: z.literal('monitorSolution'), solutionId: Id });
export const MonitorSolutionResult = z.object({
  running: z.boolean(),
  runId: Id.optional(),
  startedAt: Timestamp.optional(),
  processed: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
});
export type MonitorSolutionResult = z.infer<typeof MonitorSolutionResult>;

/** The change capture of a Replication that reads its source's log: what the source keeps for it (docs/change-capture.md). */
export const ChangeCaptureStatusCommand = z.object({
  id: Id,
  type: z.literal('changeCaptureStatus'),
  solutionId: Id,
});
export const ChangeCaptureStatusResult = z.object({
  /** The slot's (and publication's) name in the source. */
  slotName: z.string().max(100),
  exists: z.boolean(),
  /** Bytes of log the source keeps for the Replication. */
  retainedBytes: z.number().int().nonnegative(),
  /** Above this the runs warn (retainedWalWarningMb). */
  warnAboveBytes: z.number().int().nonnegative(),
  warning: z.boolean(),
  /** The source invalidated the slot: a re-snapshot is needed. */
  lost: z.boolean(),
  confirmedPosition: z.string().max(100).nullable(),
});
export type ChangeCaptureStatusCommand = z.infer<typeof ChangeCaptureStatusCommand>;
export type ChangeCaptureStatusResult = z.infer<typeof ChangeCaptureStatusResult>;

export type AssignSolutionsCommand = z.infer<typeof AssignSolutionsCommand>;
export type PutSolutionCommand = z.infer<typeof PutSolutionCommand>;
export type StartSolutionCommand = z.infer<typeof StartSolutionCommand>;
export type StopSolutionCommand = z.infer<typeof StopSolutionCommand>;
export type MonitorSolutionCommand = z.infer<typeof MonitorSolutionCommand>;
