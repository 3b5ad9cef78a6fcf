/**
 * The copy of one entity in a Replication run (docs/solutions.md "Replication"):
 *
 *   source.entity ─▶ target.ensureEntity (create / add fields) ─▶ choose net-change field,
 *   write action and where the checkpoint lives ─▶ load the checkpoint
 *        │
 *        ▼
 *   query (net change since the watermark, or everything ascending by the field) ─ read ahead ─┐
 *        ┌──────────────────────────────────────────────────────────────────────────────────┘
 *        ▼
 *   skip records at the watermark already copied ─▶ write (Upsert by key | Create) ─▶ checkpoint
 *        ▲                                                                              │
 *        └─────────────────────────── next batch (read while this one was written) ◀────┘
 *
 * The checkpoint is the Map runtime's watermark (MarkTracker). It lives in the Solution's state
 * store (a file per entity), or — for a Create into a target whose Connector keeps transactional
 * checkpoints — in the target itself, saved in the same transaction as the batch, so that a crash
 * can never leave a batch written without its checkpoint (which a re-read would write twice).
 * A first copy into a keyed target may read in key order instead, saving its progress part by
 * part, and leave its watermark when it ends (first-copy.ts).
 */
import type { Logger } from 'pino';
import type { HostConnection, HostQueryOptions } from '../connectors/connection.js';
import { readAhead } from '../connectors/read-ahead.js';
import {
  packedRecord,
  type Checkpoint,
  type ConnectorRecord,
  type EntityMetadata,
  type Filter,
  type PackedBatch,
  type WriteAction,
  type WriteResult,
} from '../connectors/sdk.js';
import { FerryError, isFerryError } from '../errors/ferry-error.js';
import {
  checkpointKeyOf,
  loadCheckpoint,
  readTargetCheckpoint,
  watermarkValue,
  type CheckpointKey,
} from '../maps/runtime/checkpoint.js';
import { recordError } from '../maps/runtime/record-error.js';
import { MarkTracker, sameMark, type WatermarkState } from '../maps/runtime/watermark.js';
import type { RunCounts } from '../maps/runtime/run-counts.js';
import { DEFAULT_TARGET_RETRY, withTargetRetry, type TargetRetry } from '../maps/runtime/target-retry.js';
import { DEFAULT_MAP_BATCH_SIZE } from '../protocol/map.js';
import type { RunRecordError } from '../protocol/solutions.js';
import { FirstCopy, firstCopyKey } from './first-copy.js';
import { netChangeField } from './net-change-field.js';
import type { EntityCheckpoint, ReplicationStateStore } from './replication-state.js';
import { EntityStats } from './replication-stats.js';

/** What one entity's copy needs of the run. */
export interface EntityRun {
  source: HostConnection;
  target: HostConnection;
  checkForBulk: boolean;
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
  stats: EntityStats;
  /** The signal stopped it; what was checkpointed stands. */
  cancelled: boolean;
  /** Its target stayed away past the retry budget (RUN_TARGET_UNAVAILABLE): the next entities would wait for it too. */
  targetGone?: boolean;
}

/** Copies one entity; never throws (a failure of the entity as a whole is its `fatal`). */
export async function replicateEntity(name: string, run: EntityRun): Promise<EntityOutcome> {
  const stats = new EntityStats(name);
  const log = run.log.child({ entity: name });
  try {
    return { stats, cancelled: await new EntityCopy(name, run, stats, log).copy() };
  } catch (err) {
    if (run.signal.aborted) return { stats, cancelled: true };
    stats.fatal = err instanceof Error ? err.message : String(err);
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

/** How the entity is written, decided once its target is ensured. */
interface Plan {
  /** The source entity and its target. */
  src: EntityMetadata;
  dest: EntityMetadata;
  created: boolean;
  /** The net-change field (net-change-field.ts); undefined when the source has none. */
  field: string | undefined;
  action: WriteAction;
  bulk: boolean;
  batchSize: number;
  /** The checkpoint commits with each batch in the target (a Create with net change into a transactional target). */
  inTarget: boolean;
  store: EntityCheckpoint | undefined;
  key: CheckpointKey | undefined;
  sourceKeys: string[];
  /** The fields a record error names its record by: the target's key, else the source's. */
  reportKeys: string[];
}

/** One entity's copy (see the module comment); {@link copy} returns true when the signal stopped it. */
class EntityCopy {
  readonly #source: HostConnection;
  readonly #target: HostConnection;
  readonly #signal: AbortSignal;
  readonly #writeSignal: AbortSignal;
  readonly #retry: TargetRetry;
  #plan!: Plan;
  #tracker!: MarkTracker;
  #first: FirstCopy | undefined;

  constructor(
    readonly name: string,
    readonly run: EntityRun,
    readonly stats: EntityStats,
    readonly log: Logger,
  ) {
    this.#source = run.source;
    this.#target = run.target;
    this.#signal = run.signal;
    this.#retry = { ...DEFAULT_TARGET_RETRY, ...run.targetRetry };
    // A stop lets the write in progress finish; one still going after the grace (a lock it waits
    // on) is cancelled on the server: an Upsert is written again whole, a Create with its
    // checkpoint commits with it or not at all.
    this.#writeSignal = afterGrace(run.signal, WRITE_STOP_GRACE_MS);
  }

  async copy(): Promise<boolean> {
    this.#plan = await this.#ensure();
    const { field, store, action, dest, bulk, batchSize, inTarget } = this.#plan;
    const saved = await this.#load();
    this.#tracker = new MarkTracker(
      saved?.lastRunDate ?? null,
      saved?.processedAtLastRunDate ?? [],
      field ?? '',
      this.#plan.sourceKeys,
    );
    const since = this.#tracker.value;
    const query: HostQueryOptions = { batchSize, signal: this.#signal };
    // A first copy into a keyed target from a source whose queries read one snapshot goes in key
    // order (no sort by the stamp; first-copy.ts): a part that resumes it reads what its earlier
    // parts did not copy and what changed since they did. Else it reads ascending by the field
    // (nulls last), so that it can checkpoint batch by batch.
    const byKey =
      field !== undefined && store && since === null && action === 'Upsert'
        ? firstCopyKey(this.#plan.src, this.#source)
        : undefined;
    const initial = byKey && store ? await store.loadInitial() : null;
    this.#first = byKey && field !== undefined ? new FirstCopy(byKey, field, initial) : undefined;
    let filter: Filter | undefined;
    if (byKey) {
      query.orderBy = [{ field: byKey, direction: 'asc' }];
      filter = this.#first?.filter();
    } else if (field !== undefined)
      Object.assign(
        query,
        since !== null ? { netChange: { field, since } } : { orderBy: [{ field, direction: 'asc' }] },
      );
    const byKeyLog = byKey
      ? { firstCopyByKey: byKey, resumedAfter: initial ? initial.parts.map((p) => p.upTo) : null }
      : {};
    this.log.info(
      {
        target: dest.fullName,
        action,
        bulk,
        batchSize,
        netChangeField: field ?? null,
        since,
        checkpointInTarget: inTarget,
        ...byKeyLog,
      },
      'entity replication started',
    );
    // A bulk first copy in key order moves packed batches when the source reads this query packed
    // (src/connectors/packed.ts): no record is made unless the target refuses a row.
    const packed = this.#first && store && bulk ? this.#source.queryPacked(this.name, filter, query) : undefined;
    if (packed && this.#first && store) return this.#copyPacked(packed, this.#first, store);
    return this.#copyRecords(this.#source.query(this.name, filter, query));
  }

  /** The target entity made to hold the source's (created, fields added), and how it is written. */
  async #ensure(): Promise<Plan> {
    const { name, run, log } = this;
    const source = this.#source;
    const target = this.#target;
    const signal = this.#signal;
    const src = await source.entity(name, { signal });
    const field = netChangeField(src);
    if (field === undefined) {
      // Refused before the target is created: the key it would have is the existing target's, else the source's.
      const existing = await target.entity(name, { signal }).catch((err: unknown) => {
        if (isFerryError(err) && err.code === 'CON_ENTITY_NOT_FOUND') return undefined;
        throw err;
      });
      if (!(existing ?? src).fields.some((f) => f.isPrimaryKey)) throw unkeyed(name, existing?.fullName ?? name);
    }
    const ensured = await target.ensureEntity(src, { signal });
    const dest = ensured.entity;
    if (ensured.created) log.info({ target: dest.fullName }, 'target entity created');
    if (ensured.addedFields.length)
      log.info({ target: dest.fullName, fields: ensured.addedFields }, 'target entity gained fields');
    // Once per entity and run: the types are left as they are, values that do not fit fail alone.
    if (ensured.mismatchedFields.length)
      log.warn(
        { target: dest.fullName, fields: ensured.mismatchedFields },
        'target fields differ in type from the source',
      );
    const keyFields = dest.fields.filter((f) => f.isPrimaryKey).map((f) => f.fullName);
    if (keyFields.length === 0 && field === undefined) throw unkeyed(name, dest.fullName);
    // A keyed target is written by key, so a record read twice (a re-copy, a batch re-read after a
    // crash) is written over, never doubled.
    const action: WriteAction = keyFields.length ? 'Upsert' : 'Create';
    this.stats.action(action);
    const bulk = run.checkForBulk && (dest.actions.find((a) => a.action === action)?.supportsBulk ?? false);
    const limit = Math.min(source.bulkLimit, target.bulkLimit);
    const sourceKeys = src.fields.filter((f) => f.isPrimaryKey).map((f) => f.fullName);
    return {
      src,
      dest,
      created: ensured.created,
      field,
      action,
      bulk,
      // Not bulk, a batch goes the records way (no packed COPY) in calls of a Map's default batch.
      batchSize: Math.max(1, Math.min(run.batchSize ?? (bulk ? limit : NON_BULK_BATCH), limit)),
      inTarget: action === 'Create' && field !== undefined && target.transactionalCheckpoints,
      store: field === undefined ? undefined : run.state.entity(name, field),
      key:
        field === undefined
          ? undefined
          : checkpointKeyOf({ kind: 'entity', sourceConnectionId: source.connectionId, entity: name, field }),
      sourceKeys,
      reportKeys: keyFields.length ? keyFields : sourceKeys,
    };
  }

  /** The entity's checkpoint: the target's when it keeps it (checkpoint.ts), else the Agent's file. */
  async #load(): Promise<WatermarkState | null> {
    const { field, store, key, inTarget, created } = this.#plan;
    const target = this.#target;
    const signal = this.#signal;
    if (field === undefined || !store || !key) return null;
    if (created) {
      // A target made anew gets everything: a checkpoint of an earlier target must not survive an
      // abort before this copy's first one.
      if (inTarget)
        await this.#retrying(() =>
          target.write('Create', this.#plan.dest.fullName, [], { checkpoint: { key: key.key, value: 'null' }, signal }),
        );
      await store.clear();
      return null;
    }
    // The file store holds one only if the target had a key before: better than a full Create.
    const targetValue = inTarget
      ? await this.#retrying(() => readTargetCheckpoint((k) => target.readCheckpoint(k, { signal }), key))
      : null;
    const { saved, earlier } = await loadCheckpoint({
      local: store,
      targetValue,
      what: `the entity ${this.name}`,
      runId: this.run.runId,
    });
    if (earlier) this.run.onEarlierRun?.(this.name, earlier);
    return saved;
  }

  /** A call to the target, tried again while the target is away (maps/runtime/target-retry.ts). */
  #retrying<T>(call: () => Promise<T>, settled?: () => Promise<T | undefined>): Promise<T> {
    const { action, dest } = this.#plan;
    return withTargetRetry(`${this.name}: ${action} in ${dest.fullName}`, this.#retry, this.#signal, call, {
      ...(settled ? { settled } : {}),
      onRetry: (n) =>
        this.log.warn(
          { attempt: n.attempt, waitMs: n.waitMs, code: n.error.code, err: { message: n.error.message } },
          'write failed as a whole: the datastore is tried again',
        ),
    });
  }

  /** Reports the refused records of a written batch; returns how many there were. */
  #refused(results: readonly WriteResult[], recordAt: (k: number) => ConnectorRecord): number {
    const { dest, action, reportKeys } = this.#plan;
    let failed = 0;
    for (let k = 0; k < results.length; k++) {
      const r = results[k];
      if (!r || r.ok) continue;
      failed++;
      const rec = recordAt(k);
      const key = reportKeys.length ? Object.fromEntries(reportKeys.map((f) => [f, rec[f] ?? null])) : undefined;
      this.run.onRecordError?.(
        recordError({
          mapName: this.name,
          sourceEntity: this.name,
          blockId: 'write',
          blockName: action,
          code: 'RUN_WRITE_FAILED',
          errorMessage: `${dest.fullName} refused the record: ${r.error.message}`,
          errorDetail: JSON.stringify({ target: dest.fullName, recordError: r.error, ...(key ? { key } : {}) }),
          key: { fields: reportKeys, record: rec },
        }),
      );
    }
    return failed;
  }

  /** Writes records (with their checkpoint when it lives in the target); returns how many were refused. */
  async #write(records: readonly ConnectorRecord[]): Promise<{ failed: number; moved: boolean }> {
    const { field, inTarget, key, action, dest } = this.#plan;
    const target = this.#target;
    const writeSignal = this.#writeSignal;
    const moved = field !== undefined && this.#tracker.advance(atTop(records, field));
    const state = inTarget && moved ? this.#tracker.state() : null;
    // What the run has written once this batch commits, committed with it (run-counts.ts).
    const runId = this.run.runId;
    const counted =
      runId !== undefined
        ? {
            run: runId,
            processed: this.stats.processed + records.length,
            failed: this.stats.failed,
            at: new Date().toISOString(),
          }
        : undefined;
    const cp: Checkpoint | undefined =
      state && key ? { key: key.key, value: watermarkValue(state, counted) } : undefined;
    const t = performance.now();
    const call = (): Promise<WriteResult[]> =>
      target.write(
        action,
        dest.fullName,
        records,
        cp ? { checkpoint: cp, signal: writeSignal } : { signal: writeSignal },
      );
    // A try that failed after its commit is known by the checkpoint it committed.
    const settled = cp
      ? async (): Promise<WriteResult[] | undefined> =>
          (await target.readCheckpoint(cp.key, { signal: writeSignal })) === cp.value
            ? records.map(() => ({ ok: true, affected: 1 }))
            : undefined
      : undefined;
    // Not tried again once the run is stopped: the batch is the next run's.
    const results = await this.#retrying(call, settled);
    const failed = this.#refused(results, (k) => records[k] as ConnectorRecord);
    this.stats.write(performance.now() - t, records.length, failed);
    return { failed, moved };
  }

  /** A bulk first copy in key order, in packed batches; true when the signal stopped it. */
  async #copyPacked(packed: AsyncIterable<PackedBatch>, first: FirstCopy, store: EntityCheckpoint): Promise<boolean> {
    const { action, dest } = this.#plan;
    const { stats, name } = this;
    const target = this.#target;
    const writeSignal = this.#writeSignal;
    // A batch's progress is saved while the next one is written (each save after the one before):
    // a crash loses at most the last save, and what that batch wrote is written over by key.
    let saving: Promise<void> = Promise.resolve();
    try {
      for await (const b of readAhead(timed(packed, stats, (p) => p.rows))) {
        if (this.#signal.aborted) {
          await saving;
          return true;
        }
        const t0 = performance.now();
        if (b.rows === 0) continue;
        // A resumed part writes records when the batch holds some an earlier part copied at its mark.
        const some = first.toWritePacked(b);
        const rows = some ? some.length : b.rows;
        let failed = 0;
        if (rows > 0) {
          // Cancelled only past the stop's grace, as above.
          // Written by key: a try that failed after its commit is written over by the next.
          const results = await this.#retrying(() =>
            some
              ? target.write(action, dest.fullName, some, { signal: writeSignal })
              : target.writePacked(action, dest.fullName, b, { signal: writeSignal }),
          );
          failed = this.#refused(results, some ? (k) => some[k] as ConnectorRecord : (k) => packedRecord(b, k));
          stats.write(performance.now() - t0, rows, failed);
        }
        const saves = first.batchPacked(b);
        if (rows > 0) {
          // Counted before the progress is saved (as below).
          stats.batch(performance.now() - t0, rows, failed);
          this.run.onProgress?.({
            entity: name,
            processed: stats.processed,
            failed: stats.failed,
            ...(saves ? { saving: true } : {}),
          });
        }
        if (saves) {
          const state = first.state();
          await saving;
          saving = store.saveInitial(state);
          // Rethrown by the next await; until then a failed save must not be an unhandled rejection.
          saving.catch(() => undefined);
        }
      }
      await saving;
    } catch (err) {
      await saving.catch(() => undefined);
      if (this.#signal.aborted) return true;
      throw err;
    }
    return this.#finishFirst(first, store, true);
  }

  /** The records way: batch after batch, each checkpointed; true when the signal stopped it. */
  async #copyRecords(records: AsyncIterable<ConnectorRecord[]>): Promise<boolean> {
    const { field, store, inTarget, dest } = this.#plan;
    const { stats, name } = this;
    const first = this.#first;
    const tracker = this.#tracker;
    try {
      for await (const read of readAhead(timed(records, stats, (r) => r.length))) {
        if (this.#signal.aborted) return true;
        const t0 = performance.now();
        // Records at exactly the watermark that an earlier run (or part) already copied are read again: skip them.
        const batch = first ? first.toWrite(read) : field !== undefined ? tracker.skip(read) : read;
        if (batch.length === 0) {
          // All skipped; a part's position still moves past them.
          if (first && store && first.batch(read)) await store.saveInitial(first.state());
          continue;
        }
        // Bulk or not, a call carries the batch: one result per record, in order, a refused record failing alone.
        const { failed, moved } = await this.#write(batch);
        // A refused record counts as done: it is reported, and copied again when it changes again.
        // Counted before the Agent's checkpoint moves past the batch: a kill between the two counts
        // it here and again in the next run (it is written twice), never in neither.
        const saves = first && store ? first.batch(read) : moved && !inTarget && store !== undefined;
        stats.batch(performance.now() - t0, batch.length, failed);
        this.run.onProgress?.({
          entity: name,
          processed: stats.processed,
          failed: stats.failed,
          ...(saves ? { saving: true } : {}),
        });
        if (first && store) {
          if (saves) await store.saveInitial(first.state());
        } else if (saves && store) await store.save(tracker.state() as WatermarkState);
      }
    } catch (err) {
      if (this.#signal.aborted) return true;
      throw err;
    }
    if (first && store) return this.#finishFirst(first, store, false);
    this.log.info(
      { target: dest.fullName, processed: stats.processed, failed: stats.failed, lastRunDate: tracker.value },
      'entity replicated',
    );
    return false;
  }

  async #finishFirst(copied: FirstCopy, into: EntityCheckpoint, packed: boolean): Promise<false> {
    // The watermark first, then the progress goes: a crash between them leaves the watermark, which wins.
    const mark = copied.watermark();
    if (mark) await into.save(mark);
    await into.clearInitial();
    this.log.info(
      {
        target: this.#plan.dest.fullName,
        processed: this.stats.processed,
        failed: this.stats.failed,
        lastRunDate: copied.mark,
        packed,
      },
      'entity replicated',
    );
    return false;
  }
}

/** How long a write in progress may go on after the run's signal fired (a stop, a restart) before it is cancelled. */
const WRITE_STOP_GRACE_MS = 2_500;

/** A signal that fires `ms` after `signal` does, with its reason (`ms` after now when it has fired already). */
function afterGrace(signal: AbortSignal, ms: number): AbortSignal {
  const later = new AbortController();
  const fire = (): void => {
    setTimeout(() => later.abort(signal.reason), ms).unref();
  };
  if (signal.aborted) fire();
  else signal.addEventListener('abort', fire, { once: true });
  return later.signal;
}

/** Records read and written per call when the copy is not bulk (checkForBulk off, or the target's action is not bulk). */
const NON_BULK_BATCH = DEFAULT_MAP_BATCH_SIZE;

function unkeyed(name: string, target: string): FerryError {
  return new FerryError(
    'RUN_REPLICATION_UNKEYED',
    `${name} cannot be replicated: its target ${target} has no primary key and the source has no modification-stamp field, so every run would copy all its records again and double them. Give the table a primary key or a datetime field such as modified_at.`,
    { details: { entity: name, target } },
  );
}

/**
 * The records of an ascending batch at its newest net-change value: all that MarkTracker.advance
 * needs (the newest value and the identities at it), found from the end so that a batch costs a
 * few comparisons rather than two date parses per record. Records without a value come last
 * (nulls last) and move nothing.
 */
function atTop(records: readonly ConnectorRecord[], field: string): ConnectorRecord[] {
  let i = records.length - 1;
  while (i >= 0 && (records[i]?.[field] ?? null) === null) i--;
  if (i < 0) return [];
  const top = (records[i] as ConnectorRecord)[field];
  const mark = String(top);
  let j = i;
  while (j > 0) {
    const v = (records[j - 1] as ConnectorRecord)[field];
    if (v !== top && !sameMark(mark, v)) break;
    j--;
  }
  return records.slice(j, i + 1);
}

/** The source's batches, timing each pull (with read-ahead: the read itself, beside the write). */
async function* timed<B>(
  source: AsyncIterable<B>,
  stats: EntityStats,
  rows: (b: B) => number,
): AsyncGenerator<B, void, undefined> {
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
      stats.read(performance.now() - t, rows(r.value));
      yield r.value;
    }
  } finally {
    if (!done) await it.return?.();
  }
}
