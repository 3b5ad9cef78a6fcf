/**
 * A copy's checkpoint: how far a Map run or a Replication's entity has copied, where that is kept,
 * and how it is read back. One module for both, so that both read, merge and key it alike.
 *
 *   load ── the Agent's file (WatermarkStore) ─┐
 *        └─ the target's row (transactional) ──┴─▶ saved state ─▶ observe batches (MarkTracker)
 *                                                                       │
 *   commit ◀── with the batch, in the target's transaction (value) ◀────┘ or the file after it
 *
 * - Where: a transactional target (PostgreSQL, SQLite) keeps it in its checkpoint table under
 *   {@link checkpointKeyOf}'s key, committed with each batch; the Agent keeps it in a JSON file
 *   (watermark.ts FileWatermark) saved after each batch.
 * - Which wins: the target's when it holds one. It commits with the data, so it says what the
 *   target holds; the file lags it by at most a batch (a kill between the commit and the save),
 *   and a file ahead of it (a target restored from a backup) would skip what the target lost.
 *   Without one in the target (a checkpoint kept before the target kept them), the file's.
 * - The value: JSON of the watermark ({@link WatermarkState}), or of a resume point
 *   (resume-point.ts), with the counts of the run that committed it (run-counts.ts). One parser
 *   reads it; a value that is not one of those is refused (RUN_CHECKPOINT_INVALID), never taken
 *   for "nothing copied", which would copy everything again.
 * - Keys: `ferry:map:<solution>:<map>` and `ferry:rs:<source connection>:<entity>:<field>`, hashed
 *   past 500 characters. A target written by an older Agent holds the key of its day
 *   (`ferry-map-<solution>-<map>`, `rs:…`): read when the key of today holds nothing.
 */
import { createHash } from 'node:crypto';
import { FerryError } from '../../errors/ferry-error.js';
import { countsOf, withCounts, type RunCounts } from './run-counts.js';

/** A checkpoint: the watermark and the identities of the records at exactly it that were processed. */
export interface WatermarkState {
  lastRunDate: string;
  /** Record identities (watermark.ts `recordIdentity`) whose net-change value is `lastRunDate`; absent = none. */
  processedAtLastRunDate?: string[];
}

/** Where a run keeps its watermark on the Agent (a local file, memory): watermark.ts. */
export interface WatermarkStore {
  load(): Promise<WatermarkState | null>;
  save(state: WatermarkState): Promise<void>;
}

/** What a checkpoint belongs to. */
export type CheckpointScope =
  | { readonly kind: 'map'; readonly solutionId: string; readonly mapId: number | string }
  | { readonly kind: 'entity'; readonly sourceConnectionId: string; readonly entity: string; readonly field: string };

/** A checkpoint's key in a target, and the key an older Agent kept it under. */
export interface CheckpointKey {
  readonly key: string;
  readonly legacy?: string;
}

/** Keys longer than this are kept as a hash (the checkpoint tables' key columns). */
const MAX_KEY = 500;

/** The key of a checkpoint in a target (see the module comment). */
export function checkpointKeyOf(scope: CheckpointScope): CheckpointKey {
  if (scope.kind === 'map') {
    return {
      key: bounded(`ferry:map:${scope.solutionId}:${scope.mapId}`, 'ferry:'),
      legacy: `ferry-map-${scope.solutionId}-${scope.mapId}`,
    };
  }
  const tail = `${scope.sourceConnectionId}:${scope.entity}:${scope.field}`;
  return { key: bounded(`ferry:rs:${tail}`, 'ferry:'), legacy: bounded(`rs:${tail}`, 'rs:') };
}

function bounded(key: string, prefix: string): string {
  return key.length <= MAX_KEY ? key : `${prefix}${createHash('sha256').update(key).digest('hex')}`;
}

/**
 * Reads a checkpoint from a target: under its key, else (nothing there yet) under the key an
 * older Agent used. A value written under the key of today, `null` included, hides the old one.
 */
export async function readTargetCheckpoint(
  read: (key: string) => Promise<string | null>,
  key: CheckpointKey,
): Promise<string | null> {
  const value = await read(key.key);
  if (value !== null || key.legacy === undefined) return value;
  return read(key.legacy);
}

/**
 * A watermark as JSON text (a target's row, the Agent's file): null for nothing (`null`, an
 * object without a watermark such as a resume point); a value that does not read as one throws
 * RUN_CHECKPOINT_INVALID naming `what`.
 */
export function parseWatermark(text: string | null, what: string): WatermarkState | null {
  if (text === null) return null;
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch {
    throw invalid(what);
  }
  if (j === null) return null;
  if (typeof j !== 'object' || Array.isArray(j)) throw invalid(what);
  const { lastRunDate, processedAtLastRunDate: ids } = j as { lastRunDate?: unknown; processedAtLastRunDate?: unknown };
  if (lastRunDate === undefined || lastRunDate === null || lastRunDate === '') return null;
  if (
    typeof lastRunDate !== 'string' ||
    (ids !== undefined && !(Array.isArray(ids) && ids.every((x) => typeof x === 'string')))
  )
    throw invalid(what);
  return { lastRunDate, ...(Array.isArray(ids) && ids.length > 0 ? { processedAtLastRunDate: ids } : {}) };
}

function invalid(what: string): FerryError {
  return new FerryError(
    'RUN_CHECKPOINT_INVALID',
    `The checkpoint of ${what} is not a watermark. Delete it to copy everything again (empty a target without a primary key first).`,
    {
      details: { checkpoint: what },
    },
  );
}

/** The value a batch commits in a target: its watermark, with the counts of the run once it commits. */
export function watermarkValue(state: WatermarkState, counts: RunCounts | undefined): string {
  return JSON.stringify(counts ? withCounts(state, counts) : state);
}

/** A copy's checkpoint as loaded at the start of a run. */
export interface LoadedCheckpoint {
  /** The watermark the run continues from (see the module comment for which wins). */
  readonly saved: WatermarkState | null;
  /** The counts another run committed with the target's value (run-counts.ts), when it names one. */
  readonly earlier: RunCounts | null;
}

/**
 * Loads a copy's checkpoint: the watermark of the target's value (read by the caller with
 * {@link readTargetCheckpoint}; null when the target keeps none) else the Agent's file. `runId` is
 * this run: counts it committed itself are not an earlier run's.
 */
export async function loadCheckpoint(opts: {
  readonly local: WatermarkStore | undefined;
  readonly targetValue: string | null;
  readonly what: string;
  readonly runId?: string | undefined;
}): Promise<LoadedCheckpoint> {
  const inTarget = parseWatermark(opts.targetValue, `${opts.what} in the target`);
  const saved = inTarget ?? (opts.local ? await opts.local.load() : null);
  const counted = countsOf(opts.targetValue);
  return { saved, earlier: counted && counted.run !== opts.runId ? counted : null };
}
