/**
 * A run's counts in a transactional checkpoint. A batch that commits with its checkpoint in the
 * target (a Create with net change, a resume point, a Replication's Create) carries in that
 * checkpoint what the run had written through it: the counts are committed with the rows, or not
 * at all. A run killed with its Agent is ended from the counts the Agent kept after each batch
 * (committed.ts), which can miss the last batch the target committed; the next run reads the
 * checkpoint anyway, finds the killed run's counts there, and reports them so that History counts
 * what the target holds (the Service keeps the larger of the two).
 *
 *   batch N of run R ──▶ target: rows + checkpoint { …, counted: { run R, processed, failed, at } }
 *   kill -9 ──▶ recover(): R ends with the counts of batch N−1 (the Agent's own)
 *   next run ──▶ reads the checkpoint ──▶ counted.run is R, not itself ──▶ report runCommitted
 */

/** What a run had written through the batch that committed a checkpoint. */
export interface RunCounts {
  /** The run (execution) ID. */
  readonly run: string;
  /** Records processed through that batch, the batch included. */
  readonly processed: number;
  /** Records failed before that batch (the batch's own refusals are known only after its commit). */
  readonly failed: number;
  /** When the batch was written (ISO-8601). */
  readonly at: string;
}

/** A checkpoint value's JSON object with the run's counts added. */
export function withCounts<T extends object>(value: T, counts: RunCounts): T & { counted: RunCounts } {
  return { ...value, counted: counts };
}

/** The run's counts a checkpoint value holds, or null (none, or not JSON). */
export function countsOf(value: string | null): RunCounts | null {
  if (value === null) return null;
  let c: Partial<RunCounts> | undefined;
  try {
    c = (JSON.parse(value) as { counted?: Partial<RunCounts> } | null)?.counted;
  } catch {
    return null;
  }
  if (
    !c ||
    typeof c.run !== 'string' ||
    typeof c.at !== 'string' ||
    !Number.isSafeInteger(c.processed) ||
    !Number.isSafeInteger(c.failed)
  )
    return null;
  if ((c.processed as number) < 0 || (c.failed as number) < 0) return null;
  return { run: c.run, processed: c.processed as number, failed: c.failed as number, at: c.at };
}
