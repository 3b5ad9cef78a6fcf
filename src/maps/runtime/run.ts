/**
 * Runs a compiled Map plan as a stream.
 *
 *   starter ──batch──▶ items ──▶ step ──▶ step ──▶ … (If/Else, Loop, For Each: sub-sequences)
 *   (Query, Fetch, Native Query: pulled from the Connection; with the Query's relationships'
 *    children; Wait For Message / Request: the one message handed to the run)
 *        ▲ pulled one batch at a time        │ failing record: record error (+ failed-record copy)
 *        │                                   ▼
 *        └──── next batch ◀── checkpoint watermark, stats, progress
 *
 * The plan arrives bound (compiler/plan.ts): the starter as a {@link Source}, every other Block as
 * a Step, so the run knows no Block kind. Batch sizes are decided once, here (batching.ts).
 *
 * Back-pressure is by pulling: one batch goes through every Block while the next is read
 * (read-ahead.ts), and no more, so memory holds two batches whatever the row count (three for a
 * packed copy, packed-copy.ts, which writes a batch while it reports the one before). As soon as the
 * next batch is read, the first Block's leading formulas (a write's mappings) start evaluating for
 * it in the sandbox's thread, so they overlap the current batch's writes on the main thread:
 *
 *   main thread     … read N+1   │ write N, checkpoint N │ read N+2     │ write N+1 …
 *   sandbox thread  … formulas N │ formulas N+1                         │ formulas N+2 …
 *
 * Formulas are pure, so evaluating them early changes nothing else: record errors, writes,
 * statistics and checkpoints still happen batch by batch, in order. A failing record never stops
 * the run. The AbortSignal stops it between batches (and aborts Connector calls); a batch whose
 * Blocks all finished before the abort is checkpointed, a batch cut short is not.
 */
import { randomUUID } from 'node:crypto';
import type { HostConnection } from '../../connectors/connection.js';
import type { Checkpoint, ConnectorRecord, OrderBy, RecordBatch } from '../../connectors/sdk.js';
import { isFerryError, toErrorData, type ErrorData } from '../../errors/ferry-error.js';
import { isWriteType, type Block } from '../../protocol/map.js';
import { FormulaEngine } from '../formula/evaluator.js';
import { batchSizes } from './batching.js';
import { readAhead } from '../../connectors/read-ahead.js';
import { connectionNotOpen, runSequence, type AheadValues, type FormulaEvaluator, type Item, type RunEnv } from './context.js';
import { evaluateAhead } from './formulas.js';
import { DEFAULT_FORMULA_BUDGET } from './formula-budget.js';
import { StatsCollector } from './stats.js';
import { laterState, MarkTracker, parseWatermarkState } from './watermark.js';
import { uuidV7 } from '../../util/uuid-v7.js';
import { recordMaker } from '../../connectors/sdk.js';
import { unpackRecords, type PackedBatch } from '../../connectors/packed.js';
import { fitsCopy, packedCopyOf, packedItem, type PackedCopy } from './packed-copy.js';
import { fingerprint, parseResumePoint, pastPoint, resumeValue } from './resume-point.js';
import { countsOf, withCounts, type RunCounts } from './run-counts.js';
import { DEFAULT_TARGET_RETRY, withTargetRetry, type TargetRetry } from './target-retry.js';
import type { MapRecordError, RunOptions, RunPlan, RunResult } from './run-types.js';

export type { FailedRecordInput, FailedRecordSink, MapRecordError, RunOptions, RunPlan, RunProgress, RunResult } from './run-types.js';

/** A batch as the starter read it, with its items and the first step's formulas evaluating ahead. */
interface Prepared {
  read: RecordBatch;
  items: Item[];
  ahead: AheadValues | undefined;
}

/** What a run that threw had done before: its statistics, the batches counted until the error. */
const partials = new WeakMap<object, RunResult>();

/** The statistics of the run that ended with `err` (thrown by {@link runMap}), when it had started. */
export function partialResult(err: unknown): RunResult | undefined {
  return typeof err === 'object' && err !== null ? partials.get(err) : undefined;
}

/** Runs the plan to the end of its starter's records, or until the signal aborts. */
export async function runMap(plan: RunPlan, opts: RunOptions): Promise<RunResult> {
  const { model, starter, source } = plan;
  const executionId = opts.executionId ?? randomUUID();
  // A stop past its grace cuts the batch in progress short, as the caller's signal does.
  const cut = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, cut.signal]) : cut.signal;
  let graceTimer: NodeJS.Timeout | undefined;
  const onStop = (): void => {
    graceTimer = setTimeout(() => cut.abort(opts.stop?.reason ?? new Error('stopped')), opts.stopGraceMs ?? 2_500);
  };
  if (opts.stop?.aborted) onStop();
  else opts.stop?.addEventListener('abort', onStop, { once: true });
  const retry: TargetRetry = { ...DEFAULT_TARGET_RETRY, ...opts.targetRetry };
  const stats = new StatsCollector(plan.blocks);
  const sourceConn = opts.connections.get(starter.connectionId ?? '');
  if (!sourceConn && !opts.source && source.readsConnection) throw connectionNotOpen(starter);
  const sizes = batchSizes(opts.batchSize ?? model.batchSize, sourceConn, plan.blocks, opts.connections);
  const createIn = opts.checkpointKey !== undefined && !opts.source ? transactionalCreate(plan, opts.connections) : undefined;
  // Without net change, a Create into a table without a key resumes a run cut short at its resume point (resume-point.ts).
  const byPosition = !starter.netChange && starter.blockType === 'Query' && createIn && (await resumesByPosition(plan, createIn, signal)) ? createIn : undefined;
  // Each batch must be one write call to commit its point with it.
  const batchSize = byPosition ? Math.min(sizes.run, sizes.bulk(byPosition.block)) : sizes.run;
  const owned = opts.engine ? null : await FormulaEngine.create(opts.lookupTables ? { lookupTables: opts.lookupTables } : {});
  const engine: FormulaEvaluator = opts.engine ?? (owned as FormulaEngine);
  const entity = starter.entity ?? '';
  let errors = 0;
  const captures: Promise<void>[] = [];
  let reply: ConnectorRecord | null = null;

  let lastFailed: { error: ErrorData | undefined; detail: string } = { error: undefined, detail: '' };
  const env: RunEnv = {
    connections: opts.connections,
    engine,
    signal,
    stats,
    batchSize,
    bulkSize: sizes.bulk,
    formulaBudget: { ...DEFAULT_FORMULA_BUDGET, ...opts.formulaBudget },
    fail(item: Item, block: Block, error: ErrorData) {
      errors++;
      stats.blockFailed(block);
      const st = item.state;
      const first = !st.failed;
      st.failed = true;
      // Records refused alike share one ErrorData (writeCopies): its detail is serialized once.
      if (error !== lastFailed.error) lastFailed = { error, detail: JSON.stringify(error.details ?? {}) };
      const errorDetail = lastFailed.detail;
      const rec: MapRecordError = {
        // Time-ordered: the Service's primary-key index of errors grows at its right edge instead of splitting pages at random.
        id: uuidV7(),
        mapName: model.name,
        sourceEntity: entity,
        blockId: block.blockId,
        blockName: block.name,
        code: error.code,
        errorMessage: error.message,
        errorDetail,
        canReprocess: false,
      };
      if (st.row !== undefined) rec.sourceRow = st.row;
      if (plan.sourceKeyFields.length > 0) {
        const key: Record<string, unknown> = {};
        for (const f of plan.sourceKeyFields) key[f] = st.source[f] ?? null;
        rec.sourceKey = key;
      }
      if (first && opts.failures) {
        st.firstError = { blockId: block.blockId, blockName: block.name, error };
        const copy: ConnectorRecord = {};
        for (const f of plan.sourceFields) copy[f] = st.source[f] ?? null;
        captures.push(
          opts.failures
            .capture({ executionId, ...(model.mapId !== undefined ? { mapId: model.mapId } : {}), mapName: model.name, entity, blockId: block.blockId, blockName: block.name, error, errorDetail, source: copy })
            .then((id) => {
              // The error is not out yet: complete it in place rather than copy it for every refused record.
              rec.failedRecordId = id;
              rec.canReprocess = true;
              opts.onRecordError?.(rec);
            }),
        );
        return;
      }
      opts.onRecordError?.(rec);
    },
    retrying(block, call, settled) {
      return withTargetRetry(`${block.name}: ${block.blockType} in ${block.entity ?? ''}`, retry, signal, call, {
        ...(settled ? { settled } : {}),
        onRetry: (n) => opts.onRetry?.({ ...n, blockName: block.name }),
      });
    },
    async reply(r: ConnectorRecord) {
      if (reply) return false;
      reply = r;
      await opts.onReply?.(r);
      return true;
    },
  };

  const wm = opts.watermark;
  const inTarget = starter.netChange ? createIn : undefined;
  const checkpointKey = opts.checkpointKey ?? '';
  /** The target's checkpoint, waited for while the target is away (target-retry.ts). */
  const readCheckpoint = (t: { block: Block; conn: HostConnection }): Promise<string | null> => env.retrying(t.block, () => t.conn.readCheckpoint(checkpointKey, { signal }));
  // The checkpointed watermark wins (the later of the Agent's and the target's); without one, the Map's lastRunDate.
  const local = opts.source || !wm ? null : await wm.load();
  const targetValue = inTarget ? await readCheckpoint(inTarget) : null;
  const saved = inTarget ? laterState(local, parseWatermarkState(targetValue)) : local;
  const positionValue = byPosition ? await readCheckpoint(byPosition) : null;
  const resumeFrom = parseResumePoint(positionValue);
  const earlier = countsOf(targetValue ?? positionValue);
  if (earlier && earlier.run !== executionId) opts.onEarlierRun?.(earlier);
  let notice: string | undefined;
  const since = opts.source ? null : (saved?.lastRunDate ?? model.lastRunDate ?? null);
  const netField = starter.netChange?.fieldName;
  const tracker = new MarkTracker(since, saved?.lastRunDate ? (saved.processedAtLastRunDate ?? []) : [], netField ?? '', plan.sourceKeyFields);
  let cancelled = false;
  let index = 0;
  let rowsRead = 0;
  /** The checkpoint the current batch's Create commits with (exactly-once writes). */
  let batchCheckpoint: Checkpoint | undefined;
  const committing = inTarget ?? byPosition;
  if (committing) env.checkpointFor = (block) => (block === committing.block ? batchCheckpoint : undefined);
  const first = plan.steps[0];
  let stopped = false;
  let lastAhead: Promise<unknown> | undefined;
  /** A batch as read, its items, and the first step's leading formulas started for them. */
  const prepare = (read: RecordBatch): Prepared => {
    const items: Item[] = read.map((source) => ({ ctx: { [starter.name]: source }, results: undefined, state: { source, failed: false, row: ++rowsRead } }));
    let ahead: AheadValues | undefined;
    if (first?.leading && items.length > 0 && !stopped && !signal.aborted) {
      ahead = evaluateAhead(first.leading, items, env);
      lastAhead = ahead.values;
    }
    return { read, items, ahead };
  };
  async function* prepared(batches: AsyncIterable<RecordBatch>): AsyncGenerator<Prepared, void, undefined> {
    for await (const read of batches) yield prepare(read);
  }
  /** Runs one batch read as records through the Blocks; false when the run ends here. */
  const runBatch = async (next: Prepared): Promise<boolean> => {
    const { read } = next;
    // Records at exactly the watermark that an earlier run (or batch) already processed are read again: skip them.
    const batch = netField && !opts.source ? tracker.skip(read) : read;
    if (batch.length === 0) return true;
    const t0 = performance.now();
    let items = next.items;
    if (batch.length !== read.length) {
      const kept = new Set(batch);
      items = items.filter((i) => kept.has(i.state.source));
    }
    const tc = performance.now();
    if (source.children) {
      try {
        await source.children(sourceConn as HostConnection, items, signal);
      } catch (e) {
        if (signal.aborted) return false;
        const cause = isFerryError(e) ? toErrorData(e) : { message: e instanceof Error ? e.message : String(e) };
        for (const item of items) env.fail(item, starter, { code: 'RUN_CHILDREN_READ_FAILED', kind: 'transient', message: `${starter.name}: the child records could not be read: ${cause.message}`, details: { blockId: starter.blockId, cause } });
      }
    }
    stats.block(starter, batch.length, performance.now() - tc);
    // What the run has written once this batch commits, committed with it (run-counts.ts).
    const counts: RunCounts = { run: executionId, processed: stats.processed + batch.length, failed: stats.failed, at: new Date().toISOString() };
    if (inTarget) {
      // As if every record of the batch is done: a record the target refuses is reported, and not read again.
      const state = tracker.peek(items.map((i) => i.state.source));
      batchCheckpoint = state ? { key: checkpointKey, value: JSON.stringify(withCounts(state, counts)) } : undefined;
    } else if (byPosition) {
      // Every record read through this batch is done once it commits: written, or reported refused.
      const last = next.items[next.items.length - 1]?.state;
      batchCheckpoint = last?.row !== undefined ? { key: checkpointKey, value: resumeValue({ run: executionId, read: last.row, last: fingerprint(last.source) }, counts) } : undefined;
    }
    await runSequence(
      plan.steps,
      items.filter((i) => !i.state.failed),
      env,
      next.ahead,
    );
    // Every Block ran to its end unless the signal fired first (it stays set once fired).
    const finished = !signal.aborted;
    await Promise.all(captures.splice(0));
    if (!finished) return false; // the batch was cut short: no checkpoint
    let failed = 0;
    const done: ConnectorRecord[] = [];
    for (const { state: st } of items) {
      if (st.failed) failed++;
      // A failed record with its failed-record entry is done too: it is reprocessed from there, not re-read.
      if (!st.failed || st.firstError) done.push(st.source);
      opts.onSourceDone?.(index++, !st.failed);
    }
    const state = netField && !opts.source && tracker.advance(done) ? tracker.state() : null;
    stats.batch(batch.length, failed, performance.now() - t0);
    // Counted before the Agent's checkpoint moves past the batch: a kill between the two counts the
    // batch in this run and again in the next (it is written twice), never in neither.
    const saving = wm !== undefined && Boolean(state);
    opts.onProgress?.({ processed: stats.processed, failed: stats.failed, batches: stats.batches, lastRunDate: tracker.value, ...(saving ? { saving } : {}) });
    if (wm && state) await wm.save(state);
    return true;
  };
  /** A packed batch written (packed-copy.ts) whose failed rows are not reported yet. */
  interface Written {
    b: PackedBatch;
    firstRow: number;
    failures: Array<[number, ErrorData]>;
    t0: number;
    /** The signal fired while it was written: its refused rows are reported, the batch is not counted. */
    cut: boolean;
  }
  const writePacked = async (b: PackedBatch, copy: PackedCopy): Promise<Written> => {
    const t0 = performance.now();
    const firstRow = rowsRead;
    rowsRead += b.rows;
    stats.block(starter, b.rows, 0);
    const failures = await copy.copies.write(b, env);
    return { b, firstRow, failures, t0, cut: signal.aborted };
  };
  /**
   * Reports a written batch: its failed rows' record errors and failed-record copies, then (unless
   * it was cut short, as runBatch does) its statistics and progress.
   */
  const reportPacked = async (w: Written, copy: PackedCopy): Promise<void> => {
    for (const [row, error] of w.failures) env.fail(packedItem(w.b, row, starter.name, w.firstRow + row + 1), copy.block, error);
    await Promise.all(captures.splice(0));
    if (w.cut) return;
    stats.batch(w.b.rows, w.failures.length, performance.now() - w.t0);
    opts.onProgress?.({ processed: stats.processed, failed: stats.failed, batches: stats.batches, lastRunDate: tracker.value });
  };
  /**
   * A packed copy's batches: each batch is written while the one before it is reported (its
   * refused rows made into record errors and failed-record copies on the Agent's thread while the
   * target works on the next batch); statistics and progress still come batch by batch, in order.
   * A batch with a value the copy would write otherwise than the formula, or whose fields are not
   * the ones asked for in that order, goes the records way. Memory holds three batches: the one
   * reported, the one written and the one read ahead.
   */
  const runPacked = async (batches: AsyncIterable<PackedBatch>, copy: PackedCopy): Promise<void> => {
    const asked = copy.copies.sourceFields;
    let pending: Written | undefined;
    let writing: Promise<Written> | undefined;
    const flush = async (): Promise<void> => {
      const w = pending;
      pending = undefined;
      if (w) await reportPacked(w, copy);
    };
    try {
      for await (const b of readAhead(batches)) {
        if (halted()) break;
        if (b.rows === 0) continue;
        if (!fitsCopy(b, copy.maxText) || b.fields.length !== asked.length || !b.fields.every((f, j) => f === asked[j])) {
          await flush();
          if (!(await runBatch(prepare(unpackRecords(b, recordMaker(b.fields)))))) break;
          continue;
        }
        writing = writePacked(b, copy);
        // Awaited below, after the report: a failure must not go unhandled meanwhile.
        writing.catch(() => undefined);
        if (pending) {
          // The write goes out first; the report runs while the target works on it.
          await new Promise<void>((resolve) => setImmediate(resolve));
          await flush();
        }
        const w = await writing;
        writing = undefined;
        pending = w;
        if (w.cut) break;
      }
    } finally {
      // A write still out when the loop failed ends before the run does (its batch is not reported).
      if (writing) await writing.catch(() => undefined);
      // Written before the run ended: reported, and counted unless cut short.
      await flush();
    }
  };
  /** Whether the run ends before the next batch: aborted, or stopped (cancelled). */
  const halted = (): boolean => {
    if (signal.aborted) return true;
    if (!opts.stop?.aborted) return false;
    cancelled = true;
    return true;
  };
  try {
    // A packed copy commits no resume point with its batches: a run that resumes by one goes the records way.
    const copy = sourceConn && !byPosition ? packedCopyOf(plan, opts, engine) : undefined;
    const packed = copy && sourceConn ? sourceConn.queryPacked(entity, starter.filter, { batchSize, signal, fields: [...copy.copies.sourceFields] }) : undefined;
    if (copy && packed) {
      await runPacked(packed, copy);
    } else {
      const open = (): AsyncIterable<RecordBatch> => source.batches(sourceConn, { since, batchSize, signal, message: opts.message, ...(byPosition ? { orderBy: positionOrder(plan, sourceConn) } : {}) });
      let batches = opts.source ?? open();
      if (resumeFrom) {
        batches = pastPoint(open, resumeFrom, () => {
          rowsRead = 0;
          notice = `The run ${resumeFrom.run} that was cut short had written the first ${resumeFrom.read} records of ${entity}; the source no longer reads the same records in that order (changed or replaced), so this run wrote every record.`;
        });
        rowsRead = resumeFrom.read;
      }
      let completed = true;
      for await (const next of readAhead(prepared(batches))) {
        if (halted() || !(await runBatch(next))) {
          completed = false;
          break;
        }
      }
      // Read to its end: the next run reads everything again, as a Map without net change does.
      if (byPosition && completed && !signal.aborted && (resumeFrom || rowsRead > 0)) {
        // With the run's final counts: a kill after this commit and before the last batch was counted is still told (run-counts.ts).
        const clear: Checkpoint = { key: checkpointKey, value: resumeValue(null, { run: executionId, processed: stats.processed, failed: stats.failed, at: new Date().toISOString() }) };
        await env.retrying(byPosition.block, () => byPosition.conn.write('Create', byPosition.block.entity ?? '', [], { checkpoint: clear, signal }));
      }
    }
  } catch (err) {
    if (!signal.aborted) {
      if (typeof err === 'object' && err !== null) partials.set(err, result());
      throw err;
    }
  } finally {
    stopped = true;
    cancelled ||= signal.aborted;
    clearTimeout(graceTimer);
    opts.stop?.removeEventListener('abort', onStop);
    await Promise.allSettled(captures);
    // A batch read ahead but not run: its formulas settle before the engine is freed.
    await lastAhead?.catch(() => undefined);
    await owned?.close();
  }
  return result();
  function result(): RunResult {
    return {
      stats: stats.result({ ...(model.mapId !== undefined ? { mapId: model.mapId } : {}), mapName: model.name, entity, ...(starter.netChange ? { lastRunDate: tracker.value } : {}), cancelled }),
      errors,
      ...(source.answersRequest ? { reply } : {}),
      ...(notice ? { notice } : {}),
    };
  }
}

/**
 * Whether a run resumes by position (resume-point.ts): its one Create, in bulk calls as large as
 * the batches it could read, writes into an entity without a primary key, whose records nothing
 * else tells apart.
 */
async function resumesByPosition(plan: RunPlan, target: { block: Block; conn: HostConnection }, signal: AbortSignal): Promise<boolean> {
  const step = plan.steps.find((s) => s.block === target.block);
  if (!step?.bulkWrite) return false;
  const md = await target.conn.metadata({ signal });
  const entity = md.entities.find((e) => e.fullName === target.block.entity);
  return entity !== undefined && !entity.fields.some((f) => f.isPrimaryKey);
}

/** The order a resumable run reads its source in: by the source's key on a SQL datastore; a file in its own order. */
function positionOrder(plan: RunPlan, conn: HostConnection | undefined): OrderBy[] | undefined {
  if (!conn?.snapshotQueries || plan.sourceKeyFields.length === 0) return undefined;
  return plan.sourceKeyFields.map((field) => ({ field, direction: 'asc' as const }));
}

/**
 * The Map's one write Block when it is a Create into a Connection that keeps transactional
 * checkpoints: then a batch and its checkpoint commit together. With any other write in the Map
 * (a second target, an Update, a child write, a Native Query) a batch is not one transaction, and the Agent's own
 * checkpoint file is all there is.
 */
function transactionalCreate(plan: RunPlan, connections: ReadonlyMap<string, HostConnection>): { block: Block; conn: HostConnection } | undefined {
  const writes = plan.blocks.filter((b) => isWriteType(b.blockType) || (b.children?.length ?? 0) > 0 || (b.blockType === 'NativeQuery' && b !== plan.starter));
  const [only] = writes;
  if (writes.length !== 1 || !only || only.blockType !== 'Create' || only.action !== 'Create') return undefined;
  const conn = connections.get(only.connectionId ?? '');
  return conn?.transactionalCheckpoints ? { block: only, conn } : undefined;
}
