/**
 * Runs a compiled Map plan as a stream.
 *
 *   starter (Query) ──batch──▶ items ──▶ step ──▶ step ──▶ … (If/Else, For Each: sub-sequences)
 *        ▲ pulled one batch at a time        │ failing record: record error (+ failed-record copy)
 *        │                                   ▼
 *        └──── next batch ◀── checkpoint watermark, stats, progress
 *
 * Back-pressure is by pulling: the next batch is read only when the previous one has gone
 * through every Block, so memory holds one batch whatever the row count. A failing record never
 * stops the run. The AbortSignal stops it between batches (and aborts Connector calls).
 */
import { randomUUID } from 'node:crypto';
import type { HostConnection } from '../../connectors/connection.js';
import type { ConnectorRecord, RecordBatch } from '../../connectors/sdk.js';
import type { ErrorData } from '../../errors/ferry-error.js';
import type { Block } from '../../protocol/map.js';
import { queryBatches } from '../blocks/query.block.js';
import type { MapPlan } from '../compiler/plan.js';
import { FormulaEngine, type LookupTables } from '../formula/evaluator.js';
import { clampBatch } from './batching.js';
import { runSequence, type FormulaEvaluator, type Item, type RunEnv, type SourceState } from './context.js';
import { StatsCollector, type MapStats } from './stats.js';
import { MarkTracker, type WatermarkStore } from './watermark.js';

/** A record error (SPEC.md "Error"): one per failing record and Block. */
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
}

/** What a failed-record sink receives: the source fields the Map references. */
export interface FailedRecordInput {
  executionId: string;
  mapId?: number;
  mapName: string;
  entity: string;
  blockId: string;
  blockName: string;
  error: ErrorData;
  source: ConnectorRecord;
}

/** Where failed source records go (the local store, or the outbox for the cloud store); returns the record's id. */
export interface FailedRecordSink {
  capture(rec: FailedRecordInput): Promise<string>;
}

export interface RunProgress {
  processed: number;
  failed: number;
  batches: number;
  lastRunDate: string | null;
}

export interface RunOptions {
  /** Open connections by connectionId. */
  connections: ReadonlyMap<string, HostConnection>;
  executionId?: string;
  signal?: AbortSignal;
  lookupTables?: LookupTables;
  /** Overrides the Map's batchSize. */
  batchSize?: number;
  /** Where the net-change watermark is read and checkpointed; default the Map's lastRunDate, in memory. */
  watermark?: WatermarkStore;
  onProgress?(p: RunProgress): void;
  onRecordError?(e: MapRecordError): void;
  failures?: FailedRecordSink;
  /** Reprocessing: these batches replace the starter's query (no watermark). */
  source?: AsyncIterable<RecordBatch>;
  /** Reprocessing: called with each source record's outcome, in order. */
  onSourceDone?(index: number, ok: boolean): void;
  /** The formula engine (its sandbox limits); the caller disposes it. Default: a FormulaEngine of the run. */
  engine?: FormulaEvaluator;
}

export interface RunResult {
  stats: MapStats;
  errors: number;
}

/** Runs the plan to the end of its starter's records, or until the signal aborts. */
export async function runMap(plan: MapPlan, opts: RunOptions): Promise<RunResult> {
  const { model, starter } = plan;
  const executionId = opts.executionId ?? randomUUID();
  const signal = opts.signal ?? new AbortController().signal;
  const stats = new StatsCollector(plan.blocks);
  const sourceConn = opts.connections.get(starter.connectionId ?? '');
  if (!sourceConn && !opts.source) throw new Error(`The connection ${starter.connectionId ?? ''} of ${starter.name} is not open.`);
  const batchSize = clampBatch(opts.batchSize ?? model.batchSize, sourceConn?.bulkLimit ?? Number.MAX_SAFE_INTEGER);
  const owned = opts.engine ? null : await FormulaEngine.create(opts.lookupTables ? { lookupTables: opts.lookupTables } : {});
  const engine: FormulaEvaluator = opts.engine ?? (owned as FormulaEngine);
  const entity = starter.entity ?? '';
  let errors = 0;
  const captures: Promise<void>[] = [];

  const env: RunEnv = {
    connections: opts.connections,
    engine,
    signal,
    stats,
    batchSize,
    fail(item: Item, block: Block, error: ErrorData) {
      errors++;
      stats.blockFailed(block);
      const st = item.state;
      const first = !st.failed;
      st.failed = true;
      const rec: MapRecordError = {
        id: randomUUID(),
        mapName: model.name,
        sourceEntity: entity,
        blockId: block.blockId,
        blockName: block.name,
        code: error.code,
        errorMessage: error.message,
        errorDetail: JSON.stringify(error.details ?? {}),
        canReprocess: false,
      };
      if (first && opts.failures) {
        st.firstError = { blockId: block.blockId, blockName: block.name, error };
        const copy: ConnectorRecord = {};
        for (const f of plan.sourceFields) copy[f] = st.source[f] ?? null;
        captures.push(
          opts.failures
            .capture({ executionId, ...(model.mapId !== undefined ? { mapId: model.mapId } : {}), mapName: model.name, entity, blockId: block.blockId, blockName: block.name, error, source: copy })
            .then((id) => opts.onRecordError?.({ ...rec, failedRecordId: id, canReprocess: true })),
        );
        return;
      }
      opts.onRecordError?.(rec);
    },
  };

  const wm = opts.watermark;
  // The checkpointed watermark wins; without one, the Map's lastRunDate.
  const saved = opts.source || !wm ? null : await wm.load();
  const since = opts.source ? null : (saved?.lastRunDate ?? model.lastRunDate ?? null);
  const netField = starter.netChange?.fieldName;
  const tracker = new MarkTracker(since, saved?.lastRunDate ? (saved.processedAtLastRunDate ?? []) : [], netField ?? '', plan.sourceKeyFields);
  let cancelled = false;
  let index = 0;
  try {
    const batches = opts.source ?? queryBatches(starter, sourceConn as HostConnection, { since, batchSize, signal });
    for await (const read of batches) {
      if (signal.aborted) break;
      // Records at exactly the watermark that an earlier run (or batch) already processed are read again: skip them.
      const batch = netField && !opts.source ? tracker.skip(read) : read;
      if (batch.length === 0) continue;
      const t0 = performance.now();
      const states: SourceState[] = batch.map((source) => ({ source, failed: false }));
      const items: Item[] = states.map((state) => ({ ctx: { [starter.name]: state.source }, results: new Map(), state }));
      stats.block(starter, batch.length, 0);
      await runSequence(plan.steps, items, env);
      await Promise.all(captures.splice(0));
      if (signal.aborted) break; // the batch did not finish: no checkpoint
      let failed = 0;
      const done: ConnectorRecord[] = [];
      for (const st of states) {
        if (st.failed) failed++;
        else done.push(st.source);
        opts.onSourceDone?.(index++, !st.failed);
      }
      if (netField && !opts.source && tracker.advance(done)) {
        const state = tracker.state();
        if (wm && state) await wm.save(state);
      }
      stats.batch(batch.length, failed, performance.now() - t0);
      opts.onProgress?.({ processed: stats.processed, failed: stats.failed, batches: stats.batches, lastRunDate: tracker.value });
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  } finally {
    cancelled = signal.aborted;
    await Promise.allSettled(captures);
    owned?.dispose();
  }
  return {
    stats: stats.result({ ...(model.mapId !== undefined ? { mapId: model.mapId } : {}), mapName: model.name, entity, ...(starter.netChange ? { lastRunDate: tracker.value } : {}), cancelled }),
    errors,
  };
}
