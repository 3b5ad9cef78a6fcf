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
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { HostConnection, HostQueryOptions } from '../connectors/connection.js';
import { readAhead } from '../connectors/read-ahead.js';
import { CELL_NULL, CELL_TEXT, packedRecord, packedValue, unpackRecords, type Checkpoint, type ConnectorRecord, type EntityMetadata, type Filter, type PackedBatch, type Value, type WriteAction, type WriteResult } from '../connectors/sdk.js';
import { FerryError, isFerryError } from '../errors/ferry-error.js';
import { later, MarkTracker, recordIdentity, sameMark, type WatermarkState } from '../maps/runtime/watermark.js';
import type { RunRecordError } from '../protocol/solutions.js';
import { uuidV7 } from '../util/uuid-v7.js';
import { netChangeField } from './net-change-field.js';
import type { EntityCheckpoint, InitialCopyState, ReplicationStateStore } from './replication-state.js';
import { EntityStats } from './replication-stats.js';

/** What one entity's copy needs of the run. */
export interface EntityRun {
  source: HostConnection;
  target: HostConnection;
  checkForBulk: boolean;
  signal: AbortSignal;
  state: ReplicationStateStore;
  batchSize?: number | undefined;
  onProgress?: ((p: { entity: string; processed: number; failed: number }) => void) | undefined;
  onRecordError?: ((e: RunRecordError) => void) | undefined;
  log: Logger;
}

export interface EntityOutcome {
  stats: EntityStats;
  /** The signal stopped it; what was checkpointed stands. */
  cancelled: boolean;
}

/** Copies one entity; never throws (a failure of the entity as a whole is its `fatal`). */
export async function replicateEntity(name: string, run: EntityRun): Promise<EntityOutcome> {
  const stats = new EntityStats(name);
  const log = run.log.child({ entity: name });
  try {
    return { stats, cancelled: await copy(name, run, stats, log) };
  } catch (err) {
    if (run.signal.aborted) return { stats, cancelled: true };
    stats.fatal = err instanceof Error ? err.message : String(err);
    const kind = isFerryError(err) ? err.kind : 'system';
    const data = { err: isFerryError(err) ? { code: err.code, message: err.message, details: err.details } : err, processed: stats.processed };
    if (kind === 'system') log.error(data, 'entity replication failed');
    else log.warn(data, 'entity replication failed');
    return { stats, cancelled: false };
  }
}

/** The copy itself; true when the signal stopped it. */
async function copy(name: string, run: EntityRun, stats: EntityStats, log: Logger): Promise<boolean> {
  const { source, target, signal } = run;
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
  if (ensured.addedFields.length) log.info({ target: dest.fullName, fields: ensured.addedFields }, 'target entity gained fields');
  // Once per entity and run: the types are left as they are, values that do not fit fail alone.
  if (ensured.mismatchedFields.length) log.warn({ target: dest.fullName, fields: ensured.mismatchedFields }, 'target fields differ in type from the source');

  const keyFields = dest.fields.filter((f) => f.isPrimaryKey).map((f) => f.fullName);
  if (keyFields.length === 0 && field === undefined) throw unkeyed(name, dest.fullName);
  // A keyed target is written by key, so a record read twice (a re-copy, a batch re-read after a
  // crash) is written over, never doubled.
  const action: WriteAction = keyFields.length ? 'Upsert' : 'Create';
  stats.action(action);
  const bulk = run.checkForBulk && (dest.actions.find((a) => a.action === action)?.supportsBulk ?? false);
  const inTarget = action === 'Create' && field !== undefined && target.transactionalCheckpoints;
  const limit = Math.min(source.bulkLimit, target.bulkLimit);
  // Written one record at a time, a batch is read smaller: progress, checkpoints and a stop come every few hundred records, not every bulkLimit.
  const batchSize = Math.max(1, Math.min(run.batchSize ?? (bulk ? limit : NON_BULK_BATCH), limit));
  const store = field === undefined ? undefined : run.state.entity(name, field);
  const cpKey = field === undefined ? '' : checkpointKey(source.connectionId, name, field);

  let saved: WatermarkState | null = null;
  if (field !== undefined && store) {
    if (ensured.created) {
      // A target made anew gets everything: a checkpoint of an earlier target must not survive an
      // abort before this copy's first one.
      if (inTarget) await target.write('Create', dest.fullName, [], { checkpoint: { key: cpKey, value: 'null' } });
      await store.clear();
    } else if (inTarget) {
      // The file store holds one only if the target had a key before: better than a full Create.
      saved = parseCheckpoint(await target.readCheckpoint(cpKey, { signal }), name) ?? (await store.load());
    } else saved = await store.load();
  }
  const sourceKeys = src.fields.filter((f) => f.isPrimaryKey).map((f) => f.fullName);
  const tracker = new MarkTracker(saved?.lastRunDate ?? null, saved?.processedAtLastRunDate ?? [], field ?? '', sourceKeys);
  const since = tracker.value;
  const query: HostQueryOptions = { batchSize, signal };
  // A first copy into a keyed target from a source whose queries read one snapshot goes in key
  // order (no sort by the stamp); else it reads ascending by the field (nulls last), so that it
  // can checkpoint batch by batch.
  const byKey = field !== undefined && store && since === null && action === 'Upsert' ? keyOrder(src, source) : undefined;
  const initial = byKey && store ? await store.loadInitial() : null;
  let filter: Filter | undefined;
  if (byKey) {
    query.orderBy = [{ field: byKey, direction: 'asc' }];
    if (initial) filter = { op: '>', field: byKey, value: initial.afterKey };
  } else if (field !== undefined) Object.assign(query, since !== null ? { netChange: { field, since } } : { orderBy: [{ field, direction: 'asc' }] });
  const first = byKey && field !== undefined ? new FirstCopy(byKey, field, initial) : undefined;
  log.info(
    { target: dest.fullName, action, bulk, batchSize, netChangeField: field ?? null, since, checkpointInTarget: inTarget, ...(byKey ? { firstCopyByKey: byKey, resumedAfter: initial?.afterKey ?? null } : {}) },
    'entity replication started',
  );

  const reportKeys = keyFields.length ? keyFields : sourceKeys;
  /** Reports the refused records of a written batch; returns how many there were. */
  const refused = (results: readonly WriteResult[], recordAt: (k: number) => ConnectorRecord): number => {
    let failed = 0;
    for (let k = 0; k < results.length; k++) {
      const r = results[k];
      if (!r || r.ok) continue;
      failed++;
      const rec = recordAt(k);
      const key = reportKeys.length ? Object.fromEntries(reportKeys.map((f) => [f, rec[f] ?? null])) : undefined;
      run.onRecordError?.({
        // Time-ordered, like a Map's record errors (runtime/run.ts): appended to the Service's index.
        id: uuidV7(),
        mapName: name,
        sourceEntity: name,
        blockId: 'write',
        blockName: action,
        code: 'RUN_WRITE_FAILED',
        errorMessage: `${dest.fullName} refused the record: ${r.error.message}`.slice(0, 10_000),
        errorDetail: JSON.stringify({ target: dest.fullName, recordError: r.error, ...(key ? { key } : {}) }).slice(0, 20_000),
        canReprocess: false,
      });
    }
    return failed;
  };
  /** Writes records (with their checkpoint when it lives in the target); returns how many were refused. */
  const write = async (records: readonly ConnectorRecord[]): Promise<{ failed: number; moved: boolean }> => {
    const moved = field !== undefined && tracker.advance(atTop(records, field));
    const cp: Checkpoint | undefined = inTarget && moved ? { key: cpKey, value: JSON.stringify(tracker.state()) } : undefined;
    const t = performance.now();
    // No signal: a write is never cut short, so a stop never leaves half a batch written.
    const results = await target.write(action, dest.fullName, records, cp ? { checkpoint: cp } : {});
    const failed = refused(results, (k) => records[k] as ConnectorRecord);
    stats.write(performance.now() - t, records.length, failed);
    return { failed, moved };
  };

  // A bulk first copy in key order moves packed batches when the source reads this query packed
  // (src/connectors/packed.ts): no record is made unless the target refuses a row.
  const packed = first && store && bulk ? source.queryPacked(name, filter, query) : undefined;
  if (packed && first && store) {
    // A batch's progress is saved while the next one is written (each save after the one before):
    // a crash loses at most the last save, and what that batch wrote is written over by key.
    let saving: Promise<void> = Promise.resolve();
    try {
      for await (const b of readAhead(timed(packed, stats, (p) => p.rows))) {
        if (signal.aborted) {
          await saving;
          return true;
        }
        const t0 = performance.now();
        if (b.rows === 0) continue;
        // No signal, as above.
        const results = await target.writePacked(action, dest.fullName, b);
        const failed = refused(results, (k) => packedRecord(b, k));
        stats.write(performance.now() - t0, b.rows, failed);
        if (first.batchPacked(b)) {
          const state = first.state();
          await saving;
          saving = store.saveInitial(state);
          // Rethrown by the next await; until then a failed save must not be an unhandled rejection.
          saving.catch(() => undefined);
        }
        stats.batch(performance.now() - t0, b.rows, failed);
        run.onProgress?.({ entity: name, processed: stats.processed, failed: stats.failed });
      }
      await saving;
    } catch (err) {
      await saving.catch(() => undefined);
      if (signal.aborted) return true;
      throw err;
    }
    return finishFirst(first, store);
  }

  const batches = readAhead(timed(source.query(name, filter, query), stats, (r) => r.length));
  try {
    for await (const read of batches) {
      if (signal.aborted) return true;
      const t0 = performance.now();
      // Records at exactly the watermark that an earlier run already copied are read again: skip them.
      const batch = field !== undefined ? tracker.skip(read) : read;
      if (batch.length === 0) continue;
      let failed = 0;
      let moved = false;
      if (bulk) ({ failed, moved } = await write(batch));
      else {
        for (const rec of batch) {
          const r = await write([rec]);
          failed += r.failed;
          moved ||= r.moved;
        }
      }
      // A refused record counts as done: it is reported, and copied again when it changes again.
      if (first && store) {
        if (first.batch(batch)) await store.saveInitial(first.state());
      } else if (moved && !inTarget && store) await store.save(tracker.state() as WatermarkState);
      stats.batch(performance.now() - t0, batch.length, failed);
      run.onProgress?.({ entity: name, processed: stats.processed, failed: stats.failed });
    }
  } catch (err) {
    if (signal.aborted) return true;
    throw err;
  }
  if (first && store) return finishFirst(first, store);
  log.info({ target: dest.fullName, processed: stats.processed, failed: stats.failed, lastRunDate: tracker.value }, 'entity replicated');
  return false;

  async function finishFirst(copied: FirstCopy, into: EntityCheckpoint): Promise<false> {
    // The watermark first, then the progress goes: a crash between them leaves the watermark, which wins.
    const mark = copied.watermark();
    if (mark) await into.save(mark);
    await into.clearInitial();
    log.info({ target: dest.fullName, processed: stats.processed, failed: stats.failed, lastRunDate: copied.mark, packed: packed !== undefined }, 'entity replicated');
    return false;
  }
}

/** Key types whose order the datastore and a `>` filter agree on, and that a filter can carry. */
const ORDERED_KEY_TYPES: ReadonlySet<string> = new Set(['string', 'integer', 'guid']);

/** The key a first copy can read in, or undefined when it must read in stamp order. */
function keyOrder(src: EntityMetadata, source: HostConnection): string | undefined {
  if (!source.snapshotQueries) return undefined;
  const keys = src.fields.filter((f) => f.isPrimaryKey);
  const [key] = keys;
  return keys.length === 1 && key && ORDERED_KEY_TYPES.has(key.propertyType) ? key.fullName : undefined;
}

/**
 * A first copy read in key order. It needs no sort by the stamp: its watermark is the newest stamp
 * its first part read. That part reads one snapshot (the source's `snapshotQueries`), so a change
 * made after it began carries a later stamp — at or after that watermark, read by the next run —
 * and one made before it began was read in the snapshot. A copy stopped and resumed reads the rest
 * (keys after the last one written) in a later snapshot and keeps the first part's watermark: the
 * records changed between the two parts are at or after it too. The records copied at exactly the
 * watermark are remembered, as MarkTracker does, so the next run skips them; what else it reads
 * again is written over by key, never doubled.
 */
class FirstCopy {
  /** Set by the first part; a resumed copy keeps the one it found. */
  mark: string | null;
  private atMark: Set<string>;
  private afterKey: string | number | undefined;
  private readonly firstPart: boolean;

  constructor(
    private readonly key: string,
    private readonly field: string,
    initial: InitialCopyState | null,
  ) {
    this.firstPart = initial === null;
    this.mark = initial?.mark ?? null;
    this.atMark = new Set(initial?.atMark ?? []);
    this.afterKey = initial?.afterKey;
  }

  /** Folds in a written batch (in key order); true when there is progress to save. */
  batch(records: readonly ConnectorRecord[]): boolean {
    this.fold(records);
    for (let i = records.length - 1; i >= 0; i--) {
      const k = (records[i] as ConnectorRecord)[this.key];
      if (typeof k === 'string' || (typeof k === 'number' && Number.isFinite(k))) {
        this.afterKey = k;
        return true;
      }
    }
    return false;
  }

  /**
   * {@link batch} for a packed batch. Stamps that are ISO-8601 text in ASCII are compared by their
   * bytes, as {@link newer} compares their first 19 characters: only the rows whose stamp ties the
   * batch's newest there (or the mark) become strings. A batch with a stamp in another form is
   * folded as records.
   */
  batchPacked(b: PackedBatch): boolean {
    const keyCol = b.fields.indexOf(this.key);
    const stampCol = b.fields.indexOf(this.field);
    if (keyCol < 0 || stampCol < 0) return this.batch(unpackRecords(b));
    const width = b.fields.length;
    const { tags, nums, ends, text } = b;
    let best = -1;
    for (let r = 0, v = stampCol; r < b.rows; r++, v += width) {
      if (tags[v] === CELL_NULL) continue;
      // Shorter stamps compare by fewer characters (a date ties every time of its day): not by bytes.
      if (tags[v] !== CELL_TEXT || (ends[v] as number) - (nums[v] as number) < 19 || !isoBytes(text, nums[v] as number, ends[v] as number)) return this.batch(unpackRecords(b));
      if (best < 0 || comparePrefixBytes(text, nums[v] as number, ends[v] as number, nums[best] as number, ends[best] as number) > 0) best = v;
    }
    // The rows at the newest prefix, and those at the mark's, in order: the ones the fold reads.
    const mark = this.mark;
    // A mark in another form (or shorter) is compared with every row as the records' fold does.
    const markBytes = mark !== null && mark.length >= 19 && isoPrefix(mark) && isAscii(mark) ? Buffer.from(mark, 'latin1') : undefined;
    const rows: number[] = [];
    const stamps: Value[] = [];
    for (let r = 0, v = stampCol; r < b.rows; r++, v += width) {
      if (tags[v] === CELL_NULL) continue;
      const at = nums[v] as number;
      const end = ends[v] as number;
      const top = best >= 0 && samePrefixBytes(text, at, end, nums[best] as number, ends[best] as number);
      const marked = mark !== null && (!markBytes || samePrefixBytes(text, at, end, 0, markBytes.length, markBytes));
      if (top || marked) {
        rows.push(r);
        stamps.push(packedValue(b, v));
      }
    }
    this.foldStamps(stamps, (i) => packedRecord(b, rows[i] as number));
    for (let r = b.rows - 1; r >= 0; r--) {
      const k = packedValue(b, r * width + keyCol);
      if (typeof k === 'string' || (typeof k === 'number' && Number.isFinite(k))) {
        this.afterKey = k;
        return true;
      }
    }
    return false;
  }

  state(): InitialCopyState {
    return { afterKey: this.afterKey as string | number, mark: this.mark, atMark: [...this.atMark] };
  }

  /** The watermark the copy leaves when it ends. */
  watermark(): WatermarkState | null {
    return this.mark === null ? null : { lastRunDate: this.mark, processedAtLastRunDate: [...this.atMark] };
  }

  /**
   * Folds a batch's stamps in, in two passes: the newest stamp first (first part only), by
   * comparisons alone, then the identities of the records at the mark. A record costs a comparison
   * or two, and an identity only when it is at the mark — also when stamps rise with the key, so
   * that nearly every record is newer than the one before.
   */
  private fold(records: readonly ConnectorRecord[]): void {
    const field = this.field;
    this.foldStamps(
      records.map((rec) => rec[field] ?? null),
      (i) => records[i] as ConnectorRecord,
    );
  }

  /** The fold over a batch's stamps, in order; `keyOf(i)` is a record holding the key of the i-th. */
  private foldStamps(stamps: readonly Value[], keyOf: (i: number) => ConnectorRecord): void {
    if (this.firstPart) {
      let top = this.mark;
      for (const v of stamps) {
        if (v !== null && v !== undefined && (top === null || newer(v, top))) top = String(v);
      }
      if (top !== this.mark) {
        this.mark = top;
        this.atMark = new Set();
      }
    }
    const mark = this.mark;
    if (mark === null) return;
    for (let i = 0; i < stamps.length; i++) {
      const v = stamps[i];
      if (v !== null && v !== undefined && atStamp(v, mark)) this.atMark.add(recordIdentity(keyOf(i), [this.key]));
    }
  }
}

/**
 * Whether a stamp is newer than the mark. ISO-8601 stamps of one field compare as text in their
 * first 19 characters (to the second); only ties there, and values not in that form, are parsed.
 */
function newer(v: Value, mark: string): boolean {
  if (typeof v === 'string' && isoPrefix(v) && isoPrefix(mark)) {
    const c = comparePrefix(v, mark);
    if (c !== 0) return c > 0;
  }
  return !sameMark(mark, v) && later(mark, v) !== mark;
}

/** Whether a stamp is the mark itself (the same instant), as {@link newer} compares them. */
function atStamp(v: Value, mark: string): boolean {
  if (typeof v === 'string' && isoPrefix(v) && isoPrefix(mark) && comparePrefix(v, mark) !== 0) return false;
  return sameMark(mark, v);
}

/** {@link isoPrefix} of a text's UTF-8 bytes, with its first 19 bytes ASCII (so they are its first 19 characters). */
function isoBytes(b: Buffer, start: number, end: number): boolean {
  if (end - start < 10 || b[start + 4] !== 45 || b[start + 7] !== 45 || (b[start] as number) < 48 || (b[start] as number) > 57) return false;
  for (let i = start, n = Math.min(end, start + 19); i < n; i++) if ((b[i] as number) >= 0x80) return false;
  return true;
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** {@link comparePrefix} of two byte ranges (of `b`, the second of `o` when given) of ASCII stamps. */
function comparePrefixBytes(b: Buffer, a0: number, a1: number, b0: number, b1: number, o: Buffer = b): number {
  const n = Math.min(19, a1 - a0, b1 - b0);
  for (let i = 0; i < n; i++) {
    const d = (b[a0 + i] as number) - (o[b0 + i] as number);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * Whether {@link comparePrefixBytes} finds the two ranges equal, comparing from the last character
 * of the prefix back: stamps that differ mostly differ in their seconds, so a row not at the
 * newest stamp costs a comparison or two rather than the dozen of their common date and hour.
 */
function samePrefixBytes(b: Buffer, a0: number, a1: number, b0: number, b1: number, o: Buffer = b): boolean {
  for (let i = Math.min(19, a1 - a0, b1 - b0) - 1; i >= 0; i--) if (b[a0 + i] !== o[b0 + i]) return false;
  return true;
}

/** `YYYY-MM-DD` at least, digits where an ISO date has them. */
function isoPrefix(s: string): boolean {
  return s.length >= 10 && s.charCodeAt(4) === 45 && s.charCodeAt(7) === 45 && s.charCodeAt(0) >= 48 && s.charCodeAt(0) <= 57;
}

/** Compares the first 19 characters (a shorter text compares by what it has; equal lengths to there tie). */
function comparePrefix(a: string, b: string): number {
  const n = Math.min(19, a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a.charCodeAt(i) - b.charCodeAt(i);
    if (d !== 0) return d;
  }
  return 0;
}

/** Records read per batch when each is written alone (checkForBulk off, or the target's action is not bulk). */
const NON_BULK_BATCH = 200;

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
async function* timed<B>(source: AsyncIterable<B>, stats: EntityStats, rows: (b: B) => number): AsyncGenerator<B, void, undefined> {
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

/** The key of an entity's checkpoint in the target: readable, or a hash when too long. */
function checkpointKey(sourceConnectionId: string, entity: string, field: string): string {
  const key = `rs:${sourceConnectionId}:${entity}:${field}`;
  return key.length <= 500 ? key : `rs:${createHash('sha256').update(key).digest('hex')}`;
}

/** A checkpoint as the target keeps it (JSON of a WatermarkState, or null after a reset). */
function parseCheckpoint(value: string | null, entity: string): WatermarkState | null {
  if (value === null) return null;
  let o: { lastRunDate?: unknown; processedAtLastRunDate?: unknown } | null | undefined;
  try {
    o = JSON.parse(value) as typeof o;
  } catch {
    o = undefined;
  }
  if (o === null) return null;
  const ids = o?.processedAtLastRunDate;
  if (typeof o !== 'object' || typeof o.lastRunDate !== 'string' || (ids !== undefined && !(Array.isArray(ids) && ids.every((x) => typeof x === 'string')))) {
    throw new FerryError('RUN_CHECKPOINT_INVALID', `The replication checkpoint of ${entity} in the target is not a watermark.`, { details: { entity } });
  }
  return { lastRunDate: o.lastRunDate, ...(Array.isArray(ids) ? { processedAtLastRunDate: ids } : {}) };
}
