import { z } from 'zod';

/**
 * History retention on the Agent (docs/decisions.md "History retention"): the Service removes
 * executions older than its window (FERRY_HISTORY_RETENTION_DAYS) and tells each connected Agent
 * the window's start, so the Agent removes its local failed records of those runs too.
 *
 *   Service                                                   Agent
 *     retention pass (hourly), and each Agent connect
 *       ─▶ pruneFailedRecords {before} ─────────────────▶ a run open? ─▶ {removed: 0, deferred: true}
 *                                                          else: records of every run whose newest
 *                                                          record came before `before`, in chunks
 *       ◀── {removed} ◀──────────────────────────────────
 *
 * Idempotent and stateless: an Agent that was offline gets the window at its next connect.
 */
export const PruneFailedRecordsCommand = z.object({
  id: z.string().min(1).max(100),
  type: z.literal('pruneFailedRecords'),
  /** The start of the Service's History window (ISO-8601 UTC). */
  before: z.string().max(40),
});
export type PruneFailedRecordsCommand = z.infer<typeof PruneFailedRecordsCommand>;

export const PruneFailedRecordsResult = z.object({
  removed: z.number().int().nonnegative(),
  /** True when a run was open on the Agent: nothing was removed, the next pass tries again. */
  deferred: z.boolean().optional(),
});
export type PruneFailedRecordsResult = z.infer<typeof PruneFailedRecordsResult>;
