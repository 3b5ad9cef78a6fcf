/**
 * The copy of one entity in a Replication run (docs/solutions.md "Replication"): its target
 * ensured and its plan made (replication-plan.ts), then run by the Map runtime as any Map is
 * (maps/runtime/run.ts), with the entity's checkpoint:
 *
 *   ensureReplica ─▶ runMap(plan) ─▶ the entity's statistics (RunMapStats), record errors, progress
 *
 * The checkpoint is the runtime's watermark. It lives in the Solution's state store (a file per
 * entity), or — for a Create into a target whose Connector keeps transactional checkpoints — in
 * the target itself, saved in the same transaction as the batch, so that a crash can never leave a
 * batch written without its checkpoint (which a re-read would write twice). A first copy into a
 * keyed target may read in key order instead, saving its progress part by part, and leave its
 * watermark when it ends (maps/runtime/first-copy.ts). A refused record counts as done: it is
 * reported, and copied again when it changes again.
 */
import type { Logger } from 'pino';
import type { HostConnection } from '../connectors/connection.js';
import { isFerryError } from '../errors/ferry-error.js';
import { partialResult, runMap, type RunOptions, type RunResult } from '../maps/runtime/run.js';
import type { RunCounts } from '../maps/runtime/run-counts.js';
import type { MapStats } from '../maps/runtime/stats.js';
import type { TargetRetry } from '../maps/runtime/target-retry.js';
import type { RunMapStats, RunRecordError } from '../protocol/solutions.js';
import type { ReplicationStateStore } from './replication-state.js';
import { ensureReplica, SOURCE_ID, TARGET_ID, type ReplicaPlan } from './replication-plan.js';

/** What one entity's copy needs of the run. */
export interface EntityRun {
  source: HostConnection;
  target: HostConnection;
  checkForBulk: boolean;
  /** Stops the copy between batches: the batch being written finishes and is checkpointed (cut short 2.5 s on). */
  signal: AbortSignal;
  state: ReplicationStateStore;
  batchSize?: number | undefined;
  onProgress?: ((p: { entity: string; processed: number; failed: number; saving?: boolean }) => void) | undefined;
  onRecordError?: ((e: RunRecordError) => void) | undefined;
  /** The run's ID, committed with its counts in a target's checkpoint (maps/runtime/run-counts.ts). */
  runId?: string | undefined;
  /** The entity's checkpoint in the target was committed by another run, with that run's counts. */
  onEarlierRun?: ((entity: string, counts: RunCounts) => void) | undefined;
  /** How long a write waits for a target that went away (maps/runtime/target-retry.ts); default 90 s. */
  targetRetry?: Partial<TargetRetry> | undefined;
  log: Logger;
}

export interface EntityOutcome {
  stats: RunMapStats;
  /** The signal stopped it; what was checkpointed stands. */
  cancelled: boolean;
  /** Its target stayed away past the retry budget (RUN_TARGET_UNAVAILABLE): the next entities would wait for it too. */
  targetGone?: boolean;
}

/** Copies one entity; never throws (a failure of the entity as a whole is its `fatal`). */
export async function replicateEntity(name: string, run: EntityRun): Promise<EntityOutcome> {
  const log = run.log.child({ entity: name });
  let replica: ReplicaPlan | undefined;
  try {
    replica = await ensureReplica(name, run, log);
    const r = await runMap(replica.plan, await runOptions(name, run, replica, log));
    const s = r.stats;
    log.info(
      {
        target: replica.dest.fullName,
        processed: s.processed,
        failed: s.failed,
        lastRunDate: s.lastRunDate ?? null,
        cancelled: s.cancelled,
      },
      s.cancelled ? 'entity replication stopped' : 'entity replicated',
    );
    return { stats: entityStats(name, s), cancelled: s.cancelled };
  } catch (err) {
    const partial: RunResult | undefined = partialResult(err);
    const stats = partial ? entityStats(name, partial.stats) : emptyStats(name, replica?.action);
    if (run.signal.aborted) return { stats, cancelled: true };
    stats.fatal = (err instanceof Error ? err.message : String(err)).slice(0, 10_000);
    const targetGone = isFerryError(err) && err.code === 'RUN_TARGET_UNAVAILABLE';
    const kind = isFerryError(err) ? err.kind : 'system';
    const data = {
      err: isFerryError(err) ? { code: err.code, message: err.message, details: err.details } : err,
      processed: stats.processed,
    };
    if (kind === 'system') log.error(data, 'entity replication failed');
    else log.warn(data, 'entity replication failed');
    return { stats, cancelled: false, ...(targetGone ? { targetGone } : {}) };
  }
}

/** How the runtime runs the entity's plan: its checkpoint, its first copy, its callbacks. */
async function runOptions(name: string, run: EntityRun, replica: ReplicaPlan, log: Logger): Promise<RunOptions> {
  const { field, created, key, dest, action, bulk, batchSize } = replica;
  const store = field === undefined ? undefined : run.state.entity(name, field);
  // A target made anew gets everything: the Agent's checkpoint of an earlier target goes too.
  if (created) await store?.clear();
  return {
    connections: new Map([
      [SOURCE_ID, run.source],
      [TARGET_ID, run.target],
    ]),
    ...(run.runId !== undefined ? { executionId: run.runId } : {}),
    stop: run.signal,
    batchSize,
    failedDone: true,
    ...(run.targetRetry ? { targetRetry: run.targetRetry } : {}),
    ...(store ? { watermark: store } : {}),
    ...(key ? { checkpoint: key } : {}),
    ...(store && replica.firstCopyKey !== undefined ? { firstCopy: { key: replica.firstCopyKey, store } } : {}),
    ...(created ? { fresh: true } : {}),
    onStart: (s) =>
      log.info(
        {
          target: dest.fullName,
          action,
          bulk,
          batchSize,
          netChangeField: field ?? null,
          since: s.since,
          checkpointInTarget: s.checkpointInTarget,
          packed: s.packed,
          ...(s.firstCopy ? { firstCopyByKey: s.firstCopy.byKey, resumedAfter: s.firstCopy.resumedAfter } : {}),
        },
        'entity replication started',
      ),
    onProgress: (p) =>
      run.onProgress?.({
        entity: name,
        processed: p.processed,
        failed: p.failed,
        ...(p.saving ? { saving: true } : {}),
      }),
    onRecordError: (e) => run.onRecordError?.(e),
    onEarlierRun: (counts) => run.onEarlierRun?.(name, counts),
    onRetry: (n) =>
      log.warn(
        { attempt: n.attempt, waitMs: n.waitMs, code: n.error.code, err: { message: n.error.message } },
        'write failed as a whole: the datastore is tried again',
      ),
  };
}

/** The entity's statistics as a run reports them: counts, time per record, and its Read and write pseudo-Blocks. */
function entityStats(name: string, s: MapStats): RunMapStats {
  return {
    mapName: name,
    entity: name,
    processed: s.processed,
    failed: s.failed,
    minMs: s.minMs,
    maxMs: s.maxMs,
    avgMs: s.avgMs,
    totalMs: s.totalMs,
    totalTime: s.totalTime,
    blocks: s.blocks,
  };
}

/** The statistics of an entity that failed before its copy began (its write action named once known). */
function emptyStats(name: string, action = 'Write'): RunMapStats {
  const zero = { processed: 0, failed: 0, minMs: 0, maxMs: 0, avgMs: 0, totalMs: 0 };
  return {
    mapName: name,
    entity: name,
    ...zero,
    totalTime: '00:00:00',
    blocks: [
      { blockId: 'read', name: 'Read', blockType: 'Query', ...zero },
      { blockId: 'write', name: action, blockType: action, ...zero },
    ],
  };
}
