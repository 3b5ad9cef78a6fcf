/**
 * What a Map run takes and gives (run.ts runs it): the compiled plan, the options, the result, and
 * the record errors and failed-record copies it reports. Their own module, so that what makes a
 * plan (compiler/), what stores failed records (failures/) and the run's own helpers
 * (packed-copy.ts) read these types without importing the run.
 */
export type { FailedRecordInput, FailedRecordSink } from '../../failures/sink.js';
import type { HostConnection } from '../../connectors/connection.js';
import type { ConnectorRecord, RecordBatch } from '../../connectors/sdk.js';
import type { Block, MapModel } from '../../protocol/map.js';
import type { SourceKey } from '../../protocol/solutions.js';
import type { LookupTables } from '../formula/evaluator.js';
import type { FailedRecordSink } from '../../failures/sink.js';
import type { CheckpointKey } from './checkpoint.js';
import type { CopyKey, FirstCopyStore } from './first-copy.js';
import type { FormulaEvaluator, Source, Step } from './context.js';
import type { FormulaBudget } from './formula-budget.js';
import type { RunCounts } from './run-counts.js';
import type { MapStats } from './stats.js';
import type { RetryNotice, TargetRetry } from './target-retry.js';
import type { WatermarkStore } from './watermark.js';

/** What a run needs of a compiled plan (compiler/plan.ts makes it): the Map with its starter and Blocks bound. */
export interface RunPlan {
  readonly model: MapModel;
  readonly starter: Block;
  /** Where the records come from: the starter bound to its kind's Source. */
  readonly source: Source;
  readonly steps: readonly Step[];
  readonly blocks: readonly Block[];
  /** Fields of the starter's records that the Map reads: what a failed-record copy keeps. */
  readonly sourceFields: readonly string[];
  /** The starter entity's primary-key fields (Connection metadata): a source record's identity; empty = none. */
  readonly sourceKeyFields: readonly string[];
  /** The fields a record error names its record by (default: sourceKeyFields). */
  readonly errorKeyFields?: readonly string[];
  /** It evaluates no formula (a generated copy: blocks/copy-step.ts): the run starts no formula engine. */
  readonly noFormulas?: boolean;
}

/** How a run reads, decided when it opened (RunOptions.onStart). */
export interface RunStart {
  /** The net-change watermark it reads from (null: everything). */
  since: string | null;
  /** Its batches commit their checkpoint in the target's transaction. */
  checkpointInTarget: boolean;
  /** A first copy in key order: the key, and where its earlier parts had got (null: it is the first). */
  firstCopy?: { byKey: string; resumedAfter: CopyKey[] | null };
  /** It moves packed batches (packed-copy.ts). */
  packed: boolean;
}

/** A record error (SPEC.md "Error"): one per failing record and Block; record-error.ts makes them. */
export interface MapRecordError {
  id: string;
  mapName: string;
  sourceEntity: string;
  blockId: string;
  blockName: string;
  code: string;
  errorMessage: string;
  errorDetail: string;
  /** Set when a failed source record was captured for reprocessing. */
  failedRecordId?: string;
  canReprocess: boolean;
  /** The source record's key fields and values (the starter entity's primary key, protocol bounds), when it has one. */
  sourceKey?: SourceKey;
  /** The source record's position in the records this run read, from 1. */
  sourceRow?: number;
}

export interface RunProgress {
  processed: number;
  failed: number;
  batches: number;
  lastRunDate: string | null;
  /**
   * A checkpoint of the Agent's own (the watermark file) is saved right after this report: counts
   * kept for a kill must be kept first, so that History never counts less than the checkpoint holds.
   */
  saving?: boolean;
}

export interface RunOptions {
  /** Open connections by connectionId. */
  connections: ReadonlyMap<string, HostConnection>;
  executionId?: string;
  signal?: AbortSignal;
  /**
   * A stop between batches (a user's stop of a Solution): checked before each batch, so the batch
   * in progress finishes, is checkpointed and counted, and nothing is written that the next run
   * writes again (a packed copy's batch in progress may be the one written while the one before it,
   * which had refused rows, is reported). A batch still in progress {@link stopGraceMs} after the
   * stop (a write waiting on a lock, a target that went away) is cut short as `signal` cuts it: its
   * calls are cancelled on the datastore and it is not checkpointed; a write that fails as a whole
   * after the stop is not tried again and cuts it at once. `signal` instead aborts at once
   * (Connector calls included).
   */
  stop?: AbortSignal;
  /** How long a stopped run's batch in progress may take before it is cancelled (default 2,500 ms). */
  stopGraceMs?: number;
  /** How long a write waits for its datastore to come back before the run ends (target-retry.ts). */
  targetRetry?: Partial<TargetRetry>;
  /** Each failed try of a write whose datastore went away, before the wait for the next. */
  onRetry?(n: RetryNotice & { blockName: string }): void;
  lookupTables?: LookupTables;
  /** Overrides the Map's batchSize. */
  batchSize?: number;
  /** Where the net-change watermark is read and checkpointed; default the Map's lastRunDate, in memory. */
  watermark?: WatermarkStore;
  /**
   * The key of this Map's checkpoint in a transactional target (checkpoint.ts) (a Solution's Map: stable across
   * runs). With net change, when the Map's only write is a Create into a Connection that keeps
   * checkpoints (SQLite, PostgreSQL), each batch commits with its checkpoint in one transaction,
   * so a run killed between the write and the watermark's save never writes the batch again.
   */
  checkpoint?: CheckpointKey;
  /**
   * A first copy in key order (first-copy.ts): a run of a net-change Query with no watermark yet
   * reads in the order of this key field, in parts whose progress `store` keeps, and leaves its
   * watermark in `store` when it reads to the end. The caller offers it only for an Upsert by key
   * from a source that reads one snapshot per query (firstCopyKey).
   */
  firstCopy?: { key: string; store: FirstCopyStore };
  /** Its target was made anew: a checkpoint an earlier target kept there is forgotten, and so is `watermark`'s. */
  fresh?: boolean;
  /**
   * A failed record is done once reported: the watermark moves past it, and it is read again when it
   * changes again (a Replication's rule). Default: only a failed record stored for reprocessing is.
   */
  failedDone?: boolean;
  /** Once the run has opened: how it reads. */
  onStart?(s: RunStart): void;
  onProgress?(p: RunProgress): void;
  /**
   * The target's checkpoint was committed by another run, with that run's counts (run-counts.ts):
   * a run killed with its Agent may have written more than it had counted.
   */
  onEarlierRun?(counts: RunCounts): void;
  onRecordError?(e: MapRecordError): void;
  failures?: FailedRecordSink;
  /** Reprocessing: these batches replace the starter's query (no watermark). */
  source?: AsyncIterable<RecordBatch>;
  /** Reprocessing: called with each source record's outcome, in order. */
  onSourceDone?(index: number, ok: boolean): void;
  /** The formula engine (its sandbox limits); the caller disposes it. Default: a FormulaEngine of the run. */
  engine?: FormulaEvaluator;
  /** Wait For Message / Wait For Request: the message (a JSON object), the Map's single record. */
  message?: unknown;
  /** The formula time a source record may use per Block and per run (default 10 s and 60 s; 0 turns one off). */
  formulaBudget?: Partial<FormulaBudget>;
  /** Send Reply: receives the reply of a request Map as soon as it is sent (once per run); a throw fails the record with RUN_REPLY_FAILED. */
  onReply?(reply: ConnectorRecord): void | Promise<void>;
}

export interface RunResult {
  stats: MapStats;
  errors: number;
  /** What the run did otherwise than asked, for its History (a resume point it could not use). */
  notice?: string;
  /** A Map that begins with Wait For Request: the reply sent, or null when none was. */
  reply?: ConnectorRecord | null;
}
