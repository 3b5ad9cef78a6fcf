/**
 * The Replication (RS) engine: copies each selected entity of a source Connection to a target
 * Connection, creating or widening the target entity, and on later runs only what changed since
 * the entity's last checkpoint (docs/solutions.md "Replication"). A plain function of two open
 * Connections, so the Solution runner calls it and tests call it without an Agent.
 *
 *   for each entity, one after another:
 *     replicateEntity ─▶ RunMapStats (fatal when the entity failed as a whole: the others still run)
 *                     ─▶ onRecordError per refused record, onProgress per batch
 *   the signal stops the run between batches; entities not reached are not reported
 */
import type { Logger } from 'pino';
import type { RunCounts } from '../maps/runtime/run-counts.js';
import type { TargetRetry } from '../maps/runtime/target-retry.js';
import type { HostConnection } from '../connectors/connection.js';
import type { RunMapStats, RunRecordError } from '../protocol/solutions.js';
import { replicateEntity } from './replicate-entity.js';
import type { ReplicationStateStore } from './replication-state.js';

export type { ReplicationStateStore, EntityCheckpoint } from './replication-state.js';
export { FileReplicationState, MemoryReplicationState } from './replication-state.js';
export { netChangeField } from './net-change-field.js';

export interface ReplicateOptions {
  /** Open Connections; the caller closes them. */
  source: HostConnection;
  target: HostConnection;
  /** fullNames of source entities, copied in this order (a name given twice is copied once); empty = none. */
  entities: readonly string[];
  /** Write in bulk when the target's Action supports it; false: one record per write call. */
  checkForBulk: boolean;
  /** Stops the run between batches: a batch being written is finished and checkpointed, the one read ahead is dropped. */
  signal: AbortSignal;
  /** Each entity's checkpoint (watermark) between runs. */
  state: ReplicationStateStore;
  /** Records per batch; default (and at most) the smaller bulkLimit of the two Connectors. */
  batchSize?: number;
  /** After each batch: the entity's counts so far (`saving`: the Agent's own checkpoint is saved next). */
  onProgress?(p: { entity: string; processed: number; failed: number; saving?: boolean }): void;
  /** The run's ID, committed with its counts in a target's checkpoint (maps/runtime/run-counts.ts). */
  runId?: string;
  /** An entity's checkpoint in the target was committed by another run, with that run's counts. */
  onEarlierRun?(entity: string, counts: RunCounts): void;
  /** How long a write waits for a target that went away (maps/runtime/target-retry.ts); default 90 s. */
  targetRetry?: Partial<TargetRetry>;
  /** An entity's copy begins. */
  onEntityStart?(entity: string): void;
  /** An entity's copy ended (its statistics as they go into the result). */
  onEntityEnd?(stats: RunMapStats): void;
  /** Each record the target refused (it never stops the copy). */
  onRecordError?(e: RunRecordError): void;
  log: Logger;
}

export interface ReplicateResult {
  /** One per entity run (in order): mapName and entity are the entity's fullName. */
  statistics: RunMapStats[];
  processed: number;
  failed: number;
  /** Set when one or more entities failed as a whole: each one's name and error. */
  fatal?: string;
  /** The signal stopped the run before every entity was copied. */
  cancelled: boolean;
}

/** Runs one Replication: every entity in turn. Never throws for an entity's failure. */
export async function replicate(opts: ReplicateOptions): Promise<ReplicateResult> {
  const log = opts.log.child({ component: 'replication' });
  const statistics: RunMapStats[] = [];
  const fatals: string[] = [];
  let processed = 0;
  let failed = 0;
  let cancelled = false;
  const entities = [...new Set(opts.entities)];
  if (entities.length) {
    // The source as it is now (new columns), read once for every entity; should it fail, each
    // entity tries again and reports its own error.
    await opts.source
      .metadata({ reload: true, signal: opts.signal })
      .catch((err: unknown) => log.warn({ err }, 'source metadata reload failed'));
  }
  for (const name of entities) {
    if (opts.signal.aborted) {
      cancelled = true;
      break;
    }
    opts.onEntityStart?.(name);
    const { stats: s, cancelled: stopped, targetGone } = await replicateEntity(name, { ...opts, log });
    statistics.push(s);
    opts.onEntityEnd?.(s);
    processed += s.processed;
    failed += s.failed;
    if (s.fatal !== undefined) fatals.push(`${name}: ${s.fatal}`);
    if (stopped) {
      cancelled = true;
      break;
    }
    if (targetGone) {
      // The next entities would wait for the same target as long: they are copied by the next run.
      const rest = entities.slice(entities.indexOf(name) + 1);
      if (rest.length) fatals.push(`Not copied in this run, as the target was unavailable: ${rest.join(', ')}.`);
      break;
    }
  }
  log.info({ entities: statistics.length, processed, failed, fatal: fatals.length, cancelled }, 'replication finished');
  return {
    statistics,
    processed,
    failed,
    ...(fatals.length ? { fatal: fatals.join('\n').slice(0, 10_000) } : {}),
    cancelled,
  };
}
