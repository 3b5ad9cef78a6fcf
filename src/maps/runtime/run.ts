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
import type { Checkpoint, ConnectorRecord, Filter, OrderBy, RecordBatch } from '../../connectors/sdk.js';
import { isFerryError, toErrorData, type ErrorData } from '../../errors/ferry-error.js';
import { isWriteType, type Block } from '../../protocol/map.js';
import { FormulaEngine } from '../formula/evaluator.js';
import { batchSizes } from './batching.js';
import { readAhead } from '../../connectors/read-ahead.js';
import {
  connectionNotOpen,
  runSequence,
  type AheadValues,
  type FormulaEvaluator,
  type Item,
  type RunEnv,
} from './context.js';
import { evaluateAhead } from './formulas.js';
import { DEFAULT_FORMULA_BUDGET } from './formula-budget.js';
import { StatsCollector } from './stats.js';
import { MarkTracker } from './watermark.js';
import { FirstCopyPart } from './first-copy.js';
import { and } from '../../protocol/filter.js';
import { loadCheckpoint, readTargetCheckpoint, watermarkValue } from './checkpoint.js';
import { recordError } from './record-error.js';
import { recordMaker } from '../../connectors/sdk.js';
import { unpackRecords, type PackedBatch } from '../../connectors/packed.js';
import { fitsCopy, packedCopyOf, packedItem, type PackedCopy } from './packed-copy.js';
import { fingerprint, parseResumePoint, pastPoint, resumeValue, type ResumePoint } from './resume-point.js';
import { countsOf, type RunCounts } from './run-counts.js';
import { DEFAULT_TARGET_RETRY, isTargetFailure, withTargetRetry, type TargetRetry } from './target-retry.js';
import type { MapRecordError, RunOptions, RunPlan, RunResult } from './run-types.js';

export type {
  FailedRecordInput,
  FailedRecordSink,
  MapRecordError,
  RunOptions,
  RunPlan,
  RunProgress,
  RunResult,
} from './run-types.js';

/** A batch as the starter read it, with its items and the first step's formulas evaluating ahead. */
interface Prepared {
  read: RecordBatch;
  items: Item[];
  ahead: AheadValues | undefined;
}

/** A packed batch written (packed-copy.ts) whose failed rows are not reported yet. */
interface Written {
  b: PackedBatch;
  firstRow: number;
  failures: Array<[number, ErrorData]>;
  t0: number;
  /** The signal fired while it was written: its refused rows are reported, the batch is not counted. */
  cut: boolean;
}

/** A Create whose batches commit with a checkpoint in its target's transaction. */
interface Committing {
  block: Block;
  conn: HostConnection;
}

/** What a run that threw had done before: its statistics, the batches counted until the error. */
const partials = new WeakMap<object, RunResult>();

/** The statistics of the run that ended with `err` (thrown by {@link runMap}), when it had started. */
export function partialResult(err: unknown): RunResult | undefined {
  return typeof err === 'object' && err !== null ? partials.get(err) : undefined;
}

/** Runs the plan to the end of its starter's records, or until the signal aborts. */
export async function runMap(plan: RunPlan, opts: RunOptions): Promise<RunResult> {
  const run = new MapRun(plan, opts);
  try {
    await run.open();
  } catch (err) {
    await run.close();
    throw err;
  }
  return run.run();
}

/** One run of a plan: its state from the first batch to the last (see the module comment). */
class MapRun {
  readonly executionId: string;
  readonly stats: StatsCollector;
  readonly signal: AbortSignal;
  readonly #cut = new AbortController();
  #graceTimer: NodeJS.Timeout | undefined;
  readonly #onStop = (): void => {
    this.#graceTimer = setTimeout(
      () => this.#cut.abort(this.opts.stop?.reason ?? new Error('stopped')),
      this.opts.stopGraceMs ?? 2_500,
    );
  };
  readonly #retry: TargetRetry;
  readonly #sourceConn: HostConnection | undefined;
  readonly #entity: string;
  #owned: FormulaEngine | null = null;
  #env!: RunEnv;
  /** Set when batches commit a resume point (resume-point.ts): a Create into a table without a key, no net change. */
  #byPosition: Committing | undefined;
  /** Set when batches commit their watermark in the target: net change and a transactional Create. */
  #inTarget: Committing | undefined;
  #resumeFrom: ResumePoint | null = null;
  /** Set when the run is a part of a first copy in key order (first-copy.ts). */
  #first: FirstCopyPart | undefined;
  #since: string | null = null;
  #netField: string | undefined;
  #tracker!: MarkTracker;
  #errors = 0;
  readonly #captures: Promise<void>[] = [];
  #reply: ConnectorRecord | null = null;
  #lastFailed: { error: ErrorData | undefined; detail: string } = { error: undefined, detail: '' };
  #notice: string | undefined;
  #cancelled = false;
  #index = 0;
  #rowsRead = 0;
  /** The checkpoint the current batch's Create commits with (exactly-once writes). */
  #batchCheckpoint: Checkpoint | undefined;
  #stopped = false;
  #lastAhead: Promise<unknown> | undefined;

  constructor(
    readonly plan: RunPlan,
    readonly opts: RunOptions,
  ) {
    this.executionId = opts.executionId ?? randomUUID();
    // A stop past its grace cuts the batch in progress short, as the caller's signal does.
    this.signal = opts.signal ? AbortSignal.any([opts.signal, this.#cut.signal]) : this.#cut.signal;
    if (opts.stop?.aborted) this.#onStop();
    else opts.stop?.addEventListener('abort', this.#onStop, { once: true });
    this.#retry = { ...DEFAULT_TARGET_RETRY, ...opts.targetRetry };
    this.stats = new StatsCollector(plan.blocks);
    this.#sourceConn = opts.connections.get(plan.starter.connectionId ?? '');
    this.#entity = plan.starter.entity ?? '';
  }

  /** Decides the batch size and the checkpoint, and loads it. */
  async open(): Promise<void> {
    const { plan, opts, signal } = this;
    const { model, starter, source } = plan;
    if (!this.#sourceConn && !opts.source && source.readsConnection) throw connectionNotOpen(starter);
    const sizes = batchSizes(opts.batchSize ?? model.batchSize, this.#sourceConn, plan.blocks, opts.connections);
    const key = opts.source ? undefined : opts.checkpoint;
    const createIn = key !== undefined ? transactionalCreate(plan, opts.connections) : undefined;
    // Without net change, a Create into a table without a key resumes a run cut short at its resume point (resume-point.ts).
    this.#byPosition =
      !starter.netChange &&
      starter.blockType === 'Query' &&
      createIn &&
      (await resumesByPosition(plan, createIn, signal))
        ? createIn
        : undefined;
    this.#inTarget = starter.netChange ? createIn : undefined;
    // Each batch must be one write call to commit its point with it.
    const batchSize = this.#byPosition ? Math.min(sizes.run, sizes.bulk(this.#byPosition.block)) : sizes.run;
    this.#owned =
      opts.engine || plan.noFormulas
        ? null
        : await FormulaEngine.create(opts.lookupTables ? { lookupTables: opts.lookupTables } : {});
    this.#env = this.#makeEnv(opts.engine ?? this.#owned ?? NO_FORMULAS, batchSize, sizes.bulk);
    const committing = this.#inTarget ?? this.#byPosition;
    if (opts.fresh && committing && key) {
      // A target made anew gets everything: a checkpoint of an earlier target must not survive an
      // abort before this run's first one.
      const clear: Checkpoint = { key: key.key, value: 'null' };
      await this.#env.retrying(committing.block, () =>
        committing.conn.write('Create', committing.block.entity ?? '', [], { checkpoint: clear, signal }),
      );
    }
    // The target's checkpoint (waited for while the target is away: target-retry.ts) wins over the Agent's file (checkpoint.ts).
    const targetValue =
      committing && key && !opts.fresh
        ? await readTargetCheckpoint(
            (k) => this.#env.retrying(committing.block, () => committing.conn.readCheckpoint(k, { signal })),
            key,
          )
        : null;
    const wm = opts.source ? undefined : opts.watermark;
    const { saved, earlier } = await loadCheckpoint({
      local: opts.fresh ? undefined : wm,
      targetValue: this.#inTarget ? targetValue : null,
      what: model.mapType === 'ReplicationServicesMap' ? `the entity ${this.#entity}` : `the Map ${model.name}`,
      runId: this.executionId,
    });
    if (this.#byPosition) this.#resumeFrom = parseResumePoint(targetValue);
    const counted = this.#byPosition ? countsOf(targetValue) : earlier;
    if (counted && counted.run !== this.executionId) opts.onEarlierRun?.(counted);
    // Without a checkpoint, the Map's lastRunDate.
    this.#since = opts.source ? null : (saved?.lastRunDate ?? model.lastRunDate ?? null);
    this.#netField = starter.netChange?.fieldName;
    this.#tracker = new MarkTracker(
      this.#since,
      saved?.lastRunDate ? (saved.processedAtLastRunDate ?? []) : [],
      this.#netField ?? '',
      plan.sourceKeyFields,
    );
    // No watermark yet: a first copy reads in key order, in parts (first-copy.ts).
    if (opts.firstCopy && this.#netField !== undefined && this.#since === null && !opts.source)
      this.#first = await FirstCopyPart.open(opts.firstCopy.key, this.#netField, opts.firstCopy.store);
    if (committing)
      this.#env.checkpointFor = (block) => (block === committing.block ? this.#batchCheckpoint : undefined);
  }

  #makeEnv(engine: FormulaEvaluator, batchSize: number, bulkSize: (block: Block) => number): RunEnv {
    const stop = this.opts.stop;
    const retrySignal = stop ? AbortSignal.any([this.signal, stop]) : this.signal;
    return {
      connections: this.opts.connections,
      engine,
      signal: this.signal,
      stats: this.stats,
      batchSize,
      bulkSize,
      formulaBudget: { ...DEFAULT_FORMULA_BUDGET, ...this.opts.formulaBudget },
      fail: (item, block, error) => this.#fail(item, block, error),
      retrying: (block, call, settled) =>
        withTargetRetry(`${block.name}: ${block.blockType} in ${block.entity ?? ''}`, this.#retry, retrySignal, call, {
          ...(settled ? { settled } : {}),
          onRetry: (n) => this.opts.onRetry?.({ ...n, blockName: block.name }),
        }).catch((e: unknown) => {
          // Stopped, a call that failed as a whole is not tried again: the run is cut here, and its
          // batch is the next run's (not a record's failure).
          if (stop?.aborted && isTargetFailure(e)) this.#cut.abort(stop.reason);
          throw e;
        }),
      reply: async (r) => {
        if (this.#reply) return false;
        this.#reply = r;
        await this.opts.onReply?.(r);
        return true;
      },
    };
  }

  /** RunEnv.fail: the record error, and the failed record's copy for its first failure. */
  #fail(item: Item, block: Block, error: ErrorData): void {
    const { plan, opts } = this;
    this.#errors++;
    this.stats.blockFailed(block);
    const st = item.state;
    const first = !st.failed;
    st.failed = true;
    // Records refused alike share one ErrorData (writeCopies): its detail is serialized once.
    if (error !== this.#lastFailed.error) this.#lastFailed = { error, detail: JSON.stringify(error.details ?? {}) };
    const errorDetail = this.#lastFailed.detail;
    const rec: MapRecordError = recordError({
      mapName: plan.model.name,
      sourceEntity: this.#entity,
      blockId: block.blockId,
      blockName: block.name,
      code: error.code,
      errorMessage: error.message,
      errorDetail,
      key: { fields: plan.errorKeyFields ?? plan.sourceKeyFields, record: st.source },
      sourceRow: st.row,
    });
    if (first && opts.failures) {
      st.firstError = { blockId: block.blockId, blockName: block.name, error };
      const copy: ConnectorRecord = {};
      for (const f of plan.sourceFields) copy[f] = st.source[f] ?? null;
      const { mapId, name } = plan.model;
      this.#captures.push(
        opts.failures
          .capture({
            executionId: this.executionId,
            ...(mapId !== undefined ? { mapId } : {}),
            mapName: name,
            entity: this.#entity,
            blockId: block.blockId,
            blockName: block.name,
            error,
            errorDetail,
            source: copy,
          })
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
  }

  /** A batch as read, its items, and the first step's leading formulas started for them. */
  #prepare(read: RecordBatch): Prepared {
    const starter = this.plan.starter.name;
    // A plan without formulas reads no item's context: its items share an empty one.
    const items: Item[] = this.plan.noFormulas
      ? read.map((source) => ({
          ctx: NO_CONTEXT,
          results: undefined,
          state: { source, failed: false, row: ++this.#rowsRead },
        }))
      : read.map((source) => ({
          ctx: { [starter]: source },
          results: undefined,
          state: { source, failed: false, row: ++this.#rowsRead },
        }));
    let ahead: AheadValues | undefined;
    const first = this.plan.steps[0];
    if (first?.leading && items.length > 0 && !this.#stopped && !this.signal.aborted) {
      ahead = evaluateAhead(first.leading, items, this.#env);
      this.#lastAhead = ahead.values;
    }
    return { read, items, ahead };
  }

  async *#prepared(batches: AsyncIterable<RecordBatch>): AsyncGenerator<Prepared, void, undefined> {
    for await (const read of batches) yield this.#prepare(read);
  }

  /** What the run has written once this batch commits, committed with it (run-counts.ts). */
  #counts(processed: number): RunCounts {
    return { run: this.executionId, processed, failed: this.stats.failed, at: new Date().toISOString() };
  }

  /** The checkpoint the batch's Create commits with, when the target keeps it. */
  #commitWith(next: Prepared, items: readonly Item[], size: number): Checkpoint | undefined {
    const key = this.opts.checkpoint?.key ?? '';
    if (this.#inTarget) {
      // As if every record of the batch is done: a record the target refuses is reported, and not read again.
      const state = this.#tracker.peek(items.map((i) => i.state.source));
      return state ? { key, value: watermarkValue(state, this.#counts(this.stats.processed + size)) } : undefined;
    }
    if (this.#byPosition) {
      // Every record read through this batch is done once it commits: written, or reported refused.
      const last = next.items[next.items.length - 1]?.state;
      return last?.row !== undefined
        ? {
            key,
            value: resumeValue(
              { run: this.executionId, read: last.row, last: fingerprint(last.source) },
              this.#counts(this.stats.processed + size),
            ),
          }
        : undefined;
    }
    return undefined;
  }

  /** Runs one batch read as records through the Blocks; false when the run ends here. */
  async #runBatch(next: Prepared): Promise<boolean> {
    const { plan, opts, signal, stats } = this;
    const { read } = next;
    const first = this.#first;
    // Records at exactly the watermark that an earlier run (or batch, or part) already processed are read again: skip them.
    const batch = first ? first.copy.toWrite(read) : this.#netField && !opts.source ? this.#tracker.skip(read) : read;
    if (batch.length === 0) {
      // All skipped; a part's position still moves past them.
      if (first?.copy.batch(read)) await first.save();
      return true;
    }
    const t0 = performance.now();
    let items = next.items;
    if (batch.length !== read.length) {
      const kept = new Set(batch);
      items = items.filter((i) => kept.has(i.state.source));
    }
    const errorsBefore = this.#errors;
    if (!(await this.#readChildren(items))) return false;
    this.#batchCheckpoint = this.#commitWith(next, items, batch.length);
    await runSequence(
      plan.steps,
      this.#errors === errorsBefore ? items : items.filter((i) => !i.state.failed),
      this.#env,
      next.ahead,
    );
    // Every Block ran to its end unless the signal fired first (it stays set once fired).
    const finished = !signal.aborted;
    await Promise.all(this.#captures.splice(0));
    if (!finished) return false; // the batch was cut short: no checkpoint
    let failed = 0;
    // No record of the batch failed (the common case): every one is done, in the order read.
    let done: readonly ConnectorRecord[] = batch;
    if (this.#errors !== errorsBefore || opts.onSourceDone) {
      const some: ConnectorRecord[] = [];
      for (const { state: st } of items) {
        if (st.failed) failed++;
        // A failed record with its failed-record entry is done too: it is reprocessed from there, not re-read.
        if (!st.failed || st.firstError || opts.failedDone) some.push(st.source);
        opts.onSourceDone?.(this.#index++, !st.failed);
      }
      done = some;
    }
    const state =
      !first && this.#netField && !opts.source && this.#tracker.advanceAscending(done) ? this.#tracker.state() : null;
    stats.batch(batch.length, failed, performance.now() - t0);
    // Counted before the Agent's checkpoint moves past the batch: a kill between the two counts the
    // batch in this run and again in the next (it is written twice), never in neither.
    const wm = opts.watermark;
    const saving = first ? first.copy.batch(read) : wm !== undefined && Boolean(state);
    opts.onProgress?.({
      processed: stats.processed,
      failed: stats.failed,
      batches: stats.batches,
      lastRunDate: this.#lastRunDate(),
      ...(saving ? { saving } : {}),
    });
    if (first) {
      if (saving) await first.save();
    } else if (wm && state) await wm.save(state);
    return true;
  }

  /** The starter's child records for the batch (Query relationships); false when the signal stopped the read. */
  async #readChildren(items: Item[]): Promise<boolean> {
    const { starter, source } = this.plan;
    const tc = performance.now();
    if (source.children) {
      try {
        await source.children(this.#sourceConn as HostConnection, items, this.signal);
      } catch (e) {
        if (this.signal.aborted) return false;
        const cause = isFerryError(e) ? toErrorData(e) : { message: e instanceof Error ? e.message : String(e) };
        for (const item of items)
          this.#fail(item, starter, {
            code: 'RUN_CHILDREN_READ_FAILED',
            kind: 'transient',
            message: `${starter.name}: the child records could not be read: ${cause.message}`,
            details: { blockId: starter.blockId, cause },
          });
      }
    }
    // The starter's records were counted as read (#timed): this is the time of their children.
    this.stats.block(starter, 0, performance.now() - tc);
    return true;
  }

  /** The net-change watermark so far: a first copy's mark, else the tracker's. */
  #lastRunDate(): string | null {
    return this.#first ? this.#first.copy.mark : this.#tracker.value;
  }

  /** The starter's batches, each pull timed as the starter's (with read-ahead: the read itself, beside the Blocks). */
  async *#timed<B>(source: AsyncIterable<B>, rows: (b: B) => number): AsyncGenerator<B, void, undefined> {
    const it = source[Symbol.asyncIterator]();
    let done = false;
    try {
      for (;;) {
        const t = performance.now();
        const r = await it.next();
        if (r.done) {
          done = true;
          return;
        }
        this.stats.block(this.plan.starter, rows(r.value), performance.now() - t);
        yield r.value;
      }
    } finally {
      if (!done) await it.return?.();
    }
  }

  async #writePacked(b: PackedBatch, copy: PackedCopy): Promise<Written> {
    const t0 = performance.now();
    const firstRow = this.#rowsRead;
    this.#rowsRead += b.rows;
    const failures = await copy.copies.write(b, this.#env);
    return { b, firstRow, failures, t0, cut: this.signal.aborted };
  }

  /**
   * Reports a written batch: its failed rows' record errors and failed-record copies, then (unless
   * it was cut short, as runBatch does) its statistics and progress.
   */
  async #reportPacked(w: Written, copy: PackedCopy): Promise<void> {
    const { stats } = this;
    for (const [row, error] of w.failures)
      this.#fail(packedItem(w.b, row, this.plan.starter.name, w.firstRow + row + 1), copy.block, error);
    await Promise.all(this.#captures.splice(0));
    if (w.cut) return;
    stats.batch(w.b.rows, w.failures.length, performance.now() - w.t0);
    const first = this.#first;
    const saving = first?.copy.batchPacked(w.b) ?? false;
    this.opts.onProgress?.({
      processed: stats.processed,
      failed: stats.failed,
      batches: stats.batches,
      lastRunDate: this.#lastRunDate(),
      ...(saving ? { saving } : {}),
    });
    // A first copy's progress is saved while the next batch is written (first-copy.ts).
    if (saving) await first?.saveBehind();
  }

  /**
   * A packed copy's batches: a batch with refused rows is reported while the next one is written
   * (its record errors and failed-record copies made on the Agent's thread while the target works
   * on the next batch); a batch taken whole is counted before the next is written; statistics and
   * progress come batch by batch, in order.
   * A batch with a value the copy would write otherwise than the formula, or whose fields are not
   * the ones asked for in that order, goes the records way, and so does a first copy's batch that
   * holds records an earlier part copied at its mark (first-copy.ts). Memory holds three batches:
   * the one reported, the one written and the one read ahead. True when it read to the end.
   */
  async #runPacked(batches: AsyncIterable<PackedBatch>, copy: PackedCopy): Promise<boolean> {
    const asked = copy.copies.sourceFields;
    let pending: Written | undefined;
    let writing: Promise<Written> | undefined;
    const flush = async (): Promise<void> => {
      const w = pending;
      pending = undefined;
      if (w) await this.#reportPacked(w, copy);
    };
    const maxText = copy.maxText;
    let completed = false;
    try {
      for await (const b of readAhead(this.#timed(batches, (p) => p.rows))) {
        if (this.#halted()) return false;
        if (b.rows === 0) continue;
        if (
          (maxText !== undefined && !fitsCopy(b, maxText)) ||
          b.fields.length !== asked.length ||
          !b.fields.every((f, j) => f === asked[j]) ||
          this.#first?.copy.toWritePacked(b)
        ) {
          await flush();
          if (!(await this.#runBatch(this.#prepare(unpackRecords(b, recordMaker(b.fields)))))) return false;
          continue;
        }
        writing = this.#writePacked(b, copy);
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
        if (w.cut) return false;
        // A batch the target took whole is counted at once, before the next one is written: a kill
        // never finds the target holding a batch that History does not count. Refused rows are
        // reported while the next batch is written.
        if (w.failures.length === 0) await flush();
      }
      completed = true;
    } finally {
      // A write still out when the loop failed ends before the run does (its batch is not reported).
      if (writing) await writing.catch(() => undefined);
      // Written before the run ended: reported, and counted unless cut short.
      await flush();
    }
    return completed;
  }

  /** The records way: batch after batch through the Blocks, and a resume point cleared at the end; true when it read to the end. */
  async #runRecords(): Promise<boolean> {
    const { plan, opts, signal } = this;
    const byPosition = this.#byPosition;
    const resumeFrom = this.#resumeFrom;
    const first = this.#first;
    const open = (): AsyncIterable<RecordBatch> =>
      this.#timed(
        plan.source.batches(this.#sourceConn, {
          since: this.#since,
          batchSize: this.#env.batchSize,
          signal,
          message: opts.message,
          ...(byPosition ? { orderBy: positionOrder(plan, this.#sourceConn) } : {}),
          ...(first ? { orderBy: first.orderBy(), ...filterOf(first) } : {}),
        }),
        (b) => b.length,
      );
    let batches = opts.source ? this.#timed(opts.source, (b) => b.length) : open();
    if (resumeFrom) {
      batches = pastPoint(open, resumeFrom, () => {
        this.#rowsRead = 0;
        this.#notice = `The run ${resumeFrom.run} that was cut short had written the first ${resumeFrom.read} records of ${this.#entity}; the source no longer reads the same records in that order (changed or replaced), so this run wrote every record.`;
      });
      this.#rowsRead = resumeFrom.read;
    }
    let completed = true;
    for await (const next of readAhead(this.#prepared(batches))) {
      if (this.#halted() || !(await this.#runBatch(next))) {
        completed = false;
        break;
      }
    }
    // Read to its end: the next run reads everything again, as a Map without net change does.
    if (byPosition && completed && !signal.aborted && (resumeFrom || this.#rowsRead > 0)) {
      // With the run's final counts: a kill after this commit and before the last batch was counted is still told (run-counts.ts).
      const clear: Checkpoint = {
        key: opts.checkpoint?.key ?? '',
        value: resumeValue(null, this.#counts(this.stats.processed)),
      };
      await this.#env.retrying(byPosition.block, () =>
        byPosition.conn.write('Create', byPosition.block.entity ?? '', [], { checkpoint: clear, signal }),
      );
    }
    return completed;
  }

  /** Whether the run ends before the next batch: aborted, or stopped (cancelled). */
  #halted(): boolean {
    if (this.signal.aborted) return true;
    if (!this.opts.stop?.aborted) return false;
    this.#cancelled = true;
    return true;
  }

  async run(): Promise<RunResult> {
    const { opts, signal, plan } = this;
    const first = this.#first;
    try {
      // A packed copy commits no resume point with its batches: a run that resumes by one goes the records way.
      const copy =
        this.#sourceConn && !this.#byPosition ? packedCopyOf(plan, opts, this.#env.engine, Boolean(first)) : undefined;
      const filter = first?.copy.filter();
      const packed =
        copy && this.#sourceConn
          ? this.#sourceConn.queryPacked(
              this.#entity,
              filter && plan.starter.filter ? and(plan.starter.filter, filter) : (filter ?? plan.starter.filter),
              {
                batchSize: this.#env.batchSize,
                signal,
                fields: [...copy.copies.sourceFields],
                ...(first ? { orderBy: first.orderBy() } : {}),
              },
            )
          : undefined;
      opts.onStart?.({
        since: this.#since,
        checkpointInTarget: this.#inTarget !== undefined,
        ...(first ? { firstCopy: { byKey: first.key, resumedAfter: first.resumedAfter } } : {}),
        packed: packed !== undefined,
      });
      const completed = copy && packed ? await this.#runPacked(packed, copy) : await this.#runRecords();
      // The part read to the end: the copy leaves its watermark; else its last save is waited for.
      if (first && completed && !signal.aborted) await first.finish();
      else await first?.settle();
    } catch (err) {
      await first?.settle().catch(() => undefined);
      if (!signal.aborted) {
        if (typeof err === 'object' && err !== null) partials.set(err, this.#result());
        throw err;
      }
    } finally {
      await this.close();
    }
    return this.#result();
  }

  /** Ends the run: no more formulas start, its timers and listeners go, its captures settle and its engine is freed. */
  async close(): Promise<void> {
    this.#stopped = true;
    this.#cancelled ||= this.signal.aborted;
    clearTimeout(this.#graceTimer);
    this.opts.stop?.removeEventListener('abort', this.#onStop);
    await Promise.allSettled(this.#captures);
    // A batch read ahead but not run: its formulas settle before the engine is freed.
    await this.#lastAhead?.catch(() => undefined);
    await this.#owned?.close();
  }

  #result(): RunResult {
    const { model, starter, source } = this.plan;
    return {
      stats: this.stats.result({
        ...(model.mapId !== undefined ? { mapId: model.mapId } : {}),
        mapName: model.name,
        entity: this.#entity,
        ...(starter.netChange ? { lastRunDate: this.#lastRunDate() } : {}),
        cancelled: this.#cancelled,
      }),
      errors: this.#errors,
      ...(source.answersRequest ? { reply: this.#reply } : {}),
      ...(this.#notice ? { notice: this.#notice } : {}),
    };
  }
}

/** A first copy part's filter, as SourceOptions take it (none for the first part). */
function filterOf(first: FirstCopyPart): { filter?: Filter } {
  const filter = first.copy.filter();
  return filter ? { filter } : {};
}

/** The context of every item of a plan that evaluates no formula (RunPlan.noFormulas). */
const NO_CONTEXT: Item['ctx'] = Object.freeze({});

/** The formula engine of a plan that evaluates none (RunPlan.noFormulas). */
const NO_FORMULAS: FormulaEvaluator = {
  evaluate: () => Promise.reject(new Error('this plan evaluates no formulas')),
};

/**
 * Whether a run resumes by position (resume-point.ts): its one Create, in bulk calls as large as
 * the batches it could read, writes into an entity without a primary key, whose records nothing
 * else tells apart.
 */
async function resumesByPosition(plan: RunPlan, target: Committing, signal: AbortSignal): Promise<boolean> {
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
function transactionalCreate(plan: RunPlan, connections: ReadonlyMap<string, HostConnection>): Committing | undefined {
  const writes = plan.blocks.filter(
    (b) =>
      isWriteType(b.blockType) ||
      (b.children?.length ?? 0) > 0 ||
      (b.blockType === 'NativeQuery' && b !== plan.starter),
  );
  const [only] = writes;
  if (writes.length !== 1 || !only || only.blockType !== 'Create' || only.action !== 'Create') return undefined;
  const conn = connections.get(only.connectionId ?? '');
  return conn?.transactionalCheckpoints ? { block: only, conn } : undefined;
}
