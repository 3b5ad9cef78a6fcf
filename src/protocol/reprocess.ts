import { z } from 'zod';

/**
 * Reprocessing the marked record errors of an execution (SPEC.md "History, errors and failed
 * records"). Marks live on the Service; the stored copies of the failed records live either on the
 * Agent that ran the execution (its local store) or on the Service (the cloud store). The records
 * are never read from the source again.
 *
 *   Service                                                     Agent
 *     POST H/{id}/reprocess
 *       one UPDATE takes the marked errors (canReprocess 0, reprocess run ID)
 *       execution row (isReprocessJob) ─▶ reprocessRun {runId, maps} ─▶ ignored while the Solution runs
 *                                     ◀── {started}                     (then the errors are given back)
 *     GET /v1/agent/reprocess/{runId}/records?mapId&after ◀──────────── each Map in run order pulls pages:
 *         [{seq, errorId, failedRecordId, source?}] ──────────────────▶ source (cloud) or the local store
 *                                     ◀── reports as any run: runStarted, runErrors, runFailedRecords,
 *                                         runProgress, runFinished (the run's ID is the execution's)
 *     no {started} came (time-out, channel dropped): when the Agent connects, and every minute
 *       knownRuns {runIds} ────────────────────────────────────────▶ open run? report in the outbox?
 *                                     ◀── {known}                      the others: never started
 *       the runs not known: errors given back (marked), execution removed
 *
 * Pages travel over HTTP, pulled by the Agent as its Map consumes them: a million records are never
 * in one message nor in memory at once.
 */

const Id = z.string().min(1).max(100);

/** How many records of one Map the reprocess run takes. */
export const ReprocessMap = z.object({ mapId: z.number().int(), records: z.number().int().nonnegative() });
export type ReprocessMap = z.infer<typeof ReprocessMap>;

export const ReprocessRunCommand = z.object({
  id: Id,
  type: z.literal('reprocessRun'),
  solutionId: Id,
  /** The reprocess run's ID: the `processExecutionId` of its own execution. */
  runId: Id,
  /** The execution whose marked records these are. */
  executionId: z.number().int(),
  /** The version the Service holds (as in startSolution): the current prepared Maps are used. */
  version: z.string().max(100).optional(),
  maps: z.array(ReprocessMap).min(1).max(1000),
});
export type ReprocessRunCommand = z.infer<typeof ReprocessRunCommand>;

/** Reply of reprocessRun: false when a run of the Solution is in progress (then nothing was taken). */
export const ReprocessRunResult = z.object({ started: z.boolean(), runId: Id.optional() });
export type ReprocessRunResult = z.infer<typeof ReprocessRunResult>;

/** Runs a knownRuns command asks about at most. */
export const MAX_KNOWN_RUNS = 500;

/**
 * `knownRuns`: which of these runs the Agent has or had — a run it has open, or one whose reports
 * are still in its outbox (sent or set aside, not yet acknowledged). The Service asks it about
 * reprocess runs it has no answer for (the reply to reprocessRun was lost): a run the Agent knows
 * reports its own end; one it does not know it never started, and from this answer on it never
 * starts it (a reprocessRun for it is refused with AGT_RUN_ABANDONED), so the Service gives its
 * records back. Added in protocol version 1 without a bump: an older Agent answers it with a
 * validation error, and the Service then gives nothing back.
 */
export const KnownRunsCommand = z.object({
  id: Id,
  type: z.literal('knownRuns'),
  runIds: z.array(Id).min(1).max(MAX_KNOWN_RUNS),
});
export type KnownRunsCommand = z.infer<typeof KnownRunsCommand>;

/** Reply of knownRuns: the run IDs asked about that the Agent has or had. */
export const KnownRunsResult = z.object({ known: z.array(Id).max(MAX_KNOWN_RUNS) });
export type KnownRunsResult = z.infer<typeof KnownRunsResult>;

/** One record to reprocess: its error, and its source fields when the Service keeps them (else the Agent's local store does). */
export const ReprocessRecord = z.object({
  seq: z.number().int(),
  errorId: Id,
  failedRecordId: Id.nullable(),
  source: z.record(z.string(), z.unknown()).optional(),
});
export type ReprocessRecord = z.infer<typeof ReprocessRecord>;

/** A page of `GET /v1/agent/reprocess/{runId}/records`; `next` is the `after` of the next page, null after the last. */
export const ReprocessPage = z.object({ records: z.array(ReprocessRecord), next: z.number().int().nullable() });
export type ReprocessPage = z.infer<typeof ReprocessPage>;

/** Records a page holds at most (fewer when their copies are large). */
export const MAX_REPROCESS_PAGE = 500;

/** The path an Agent pulls a reprocess run's records from. */
export const reprocessRecordsPath = (runId: string): string =>
  `/v1/agent/reprocess/${encodeURIComponent(runId)}/records`;
