/**
 * A Replication's first copy in key order (docs/solutions.md "Replication"; the rule and its
 * argument: docs/decisions.md "A resumed first copy reads what changed"). It needs no sort by the
 * stamp: each part of the copy (the stretch between a start and a stop, a kill or the end) is one
 * query in key order, which the source reads from one snapshot (`snapshotQueries`). Like every
 * net-change read, it relies on the stamps:
 *
 *   (A) a change carries a stamp, and one committed after a snapshot began carries a stamp at or
 *       after every stamp that snapshot holds.
 *
 * A part that wrote records up to key P (in key order) and had read stamps up to M — M counts the
 * stamps of the parts before it too — leaves the part {upTo: P, since: M}, which stands for
 *
 *   (J) every record with a key up to P that the target does not hold as the source has it now
 *       carries a stamp at or after M (a stamp at all, while no part has read one: M null).
 *
 * Why (J) holds. Take such a record. If its version now was committed after the part's snapshot S
 * began, (A) puts its stamp at or after every stamp S holds and every stamp an earlier part's
 * snapshot held: at or after M. Otherwise S holds that version, and the target lacked it when S
 * began too; by the (J) of every earlier part whose range covers its key, its stamp is at or after
 * each of their `since`s, so every term of the part's query (below) is true of it: the part read
 * it and wrote it (its key is up to P, and a part writes its batches in key order before it saves
 * their progress) — the record is not one the target lacks after all. A (J) stays true afterwards:
 * the target gains only newer versions, and every later change obeys (A). A save lost to a kill
 * leaves earlier parts, whose (J)s are still true: the next part reads more, never less.
 *
 * So a part reads, in key order, the records that for every earlier part have a key after its
 * `upTo` or a stamp at or after its `since`:
 *
 *   AND over the parts (key > upTo OR stamp >= since)
 *
 * — every record after the furthest key, and of those before it only the ones that changed since
 * the part that copied them: never all the records an earlier part read after the first part's
 * newest stamp. Only the datastore compares keys (text keys sort by its collation); a part that
 * another covers (a larger integer `upTo` and a `since` no older) adds nothing to the filter and
 * is dropped, so a copy with integer keys keeps one part (more only while parts stop inside the
 * range they read again), and one with text keys one per stop.
 *
 * The part that reads to the end leaves the watermark: its M, with the identities of the records
 * it copied at exactly M (and those earlier parts copied there, when M is theirs). By (J) the
 * target then holds every record as the last snapshot had it, and every later change is at or
 * after M. A record an earlier part copied at exactly the copy's mark is read again (its stamp is
 * at or after every `since`) and not written again, as MarkTracker skips such records; a stamp equal to the
 * mark is the one instant where a change after a copy can go unseen until the record changes
 * again (docs/solutions.md "Limits").
 */
import {
  atStamp,
  compareShapedBytes,
  newer,
  OTHER_SHAPE,
  samePrefixBytes,
  stampBytes,
  stampShape,
  stampShapeBytes,
} from './stamps.js';
import { recordIdentity, type WatermarkState } from './watermark.js';
import { and, cmp, isNull, not, or } from '../../protocol/filter.js';
import type { HostConnection } from '../../connectors/connection.js';
import {
  CELL_NULL,
  CELL_TEXT,
  packedRecord,
  packedValue,
  unpackRecords,
  type ConnectorRecord,
  type EntityMetadata,
  type Filter,
  type OrderBy,
  type PackedBatch,
  type Value,
} from '../../connectors/sdk.js';

/** A key a first copy reads in: a one-field primary key of type string, integer or guid. */
export type CopyKey = string | number;

/**
 * What one part of a first copy in key order left: the last key it wrote, and the newest stamp it
 * had read, counting those of the parts before it (null: none yet). It stands for: every record
 * with a key up to `upTo` that the target does not hold as the source has it now carries a stamp
 * at or after `since` (a stamp at all, when `since` is null).
 */
export interface CopiedPart {
  upTo: CopyKey;
  since: string | null;
}

/**
 * How far a first copy read in key order has got: what each of its parts that wrote records left
 * (oldest first; a part another one covers is dropped), and the watermark the copy will leave when
 * it ends.
 */
export interface InitialCopyState {
  parts: CopiedPart[];
  /** The newest stamp the copy has read, in any part. */
  mark: string | null;
  /** Identities of the records copied at exactly `mark` (as WatermarkState.processedAtLastRunDate). */
  atMark: string[];
}

/** Where a first copy keeps its progress between its parts (a Replication entity's checkpoint). */
export interface FirstCopyStore {
  /** The progress of a first copy in key order that was stopped, or null. */
  loadInitial(): Promise<InitialCopyState | null>;
  saveInitial(state: InitialCopyState): Promise<void>;
  /** The first copy ended (its watermark is saved): its progress is forgotten. */
  clearInitial(): Promise<void>;
  /** The watermark the copy leaves when it ends. */
  save(state: WatermarkState): Promise<void>;
}

/** Key types whose order the datastore and a `>` filter agree on, and that a filter can carry. */
const ORDERED_KEY_TYPES: ReadonlySet<string> = new Set(['string', 'integer', 'guid']);

/** The key a first copy can read in, or undefined when it must read in stamp order. */
export function firstCopyKey(src: EntityMetadata, source: HostConnection): string | undefined {
  if (!source.snapshotQueries) return undefined;
  const keys = src.fields.filter((f) => f.isPrimaryKey);
  const [key] = keys;
  return keys.length === 1 && key && ORDERED_KEY_TYPES.has(key.propertyType) ? key.fullName : undefined;
}

/** One part of a first copy in key order: what it reads, what it skips, the progress it saves. */
export class FirstCopy {
  /** The newest stamp read by this part or an earlier one. */
  mark: string | null;
  private atMark: Set<string>;
  /** The last key this part wrote. */
  private upTo: CopyKey | undefined;
  private readonly before: readonly CopiedPart[];
  /** The records earlier parts copied at exactly the mark they left: read again, not written again. */
  private readonly done:
    { mark: string; ids: ReadonlySet<string>; bytes: Buffer | undefined; shape: number } | undefined;

  constructor(
    private readonly key: string,
    private readonly field: string,
    initial: InitialCopyState | null,
  ) {
    this.before = initial?.parts ?? [];
    this.mark = initial?.mark ?? null;
    this.atMark = new Set(initial?.atMark ?? []);
    const mark = this.mark;
    this.done =
      mark !== null && this.atMark.size > 0
        ? { mark, ids: new Set(this.atMark), bytes: stampBytes(mark), shape: stampShape(mark) }
        : undefined;
  }

  /** The filter of this part's query (with the order by key); undefined for the first part: everything. */
  filter(): Filter | undefined {
    const { key, field } = this;
    const terms = this.before.map((p) =>
      or(cmp(key, '>', p.upTo), p.since === null ? not(isNull(field)) : cmp(field, '>=', p.since)),
    );
    return terms.length > 1 ? and(...terms) : terms[0];
  }

  /** The records of a batch to write: not those an earlier part copied at exactly its mark. */
  toWrite(records: ConnectorRecord[]): ConnectorRecord[] {
    const done = this.done;
    if (!done) return records;
    return records.filter((r) => !this.copied(done, r[this.field], () => r[this.key]));
  }

  /** {@link toWrite} for a packed batch: undefined when every row is to be written, else the records to write. */
  toWritePacked(b: PackedBatch): ConnectorRecord[] | undefined {
    const done = this.done;
    if (!done) return undefined;
    const keyCol = b.fields.indexOf(this.key);
    const stampCol = b.fields.indexOf(this.field);
    const width = b.fields.length;
    if (keyCol < 0 || stampCol < 0) {
      const all = unpackRecords(b);
      const some = this.toWrite(all);
      return some.length === all.length ? undefined : some;
    }
    const { tags, nums, ends, text } = b;
    const markBytes = done.bytes;
    let skip: Set<number> | undefined;
    for (let r = 0, v = stampCol; r < b.rows; r++, v += width) {
      if (tags[v] === CELL_NULL) continue;
      // A stamp of the mark's shape whose bytes differ from the mark's to the second is not at it:
      // no string made.
      if (markBytes !== undefined && tags[v] === CELL_TEXT) {
        const at = nums[v] as number;
        const c = compareShapedBytes(text, at, ends[v] as number, done.shape, markBytes, 0, markBytes.length);
        if (c !== 0 && c !== OTHER_SHAPE) continue;
      }
      if (this.copied(done, packedValue(b, v), () => packedValue(b, r * width + keyCol))) (skip ??= new Set()).add(r);
    }
    if (!skip) return undefined;
    const drop = skip;
    return unpackRecords(b).filter((_, r) => !drop.has(r));
  }

  /** Folds in a batch this part read and wrote (in key order); true when there is progress to save. */
  batch(records: readonly ConnectorRecord[]): boolean {
    this.fold(records);
    for (let i = records.length - 1; i >= 0; i--) {
      const k = (records[i] as ConnectorRecord)[this.key];
      if (typeof k === 'string' || (typeof k === 'number' && Number.isFinite(k))) {
        this.upTo = k;
        return true;
      }
    }
    return false;
  }

  /**
   * {@link batch} for a packed batch. When every stamp has the shape of the first (stamps.ts: ISO
   * 8601, one separator, one zone designator), their bytes order them to the second as
   * {@link newer} does, and only the rows whose stamp ties the batch's newest there (or the mark)
   * become strings. A batch with a stamp of another shape is folded as records.
   */
  batchPacked(b: PackedBatch): boolean {
    const keyCol = b.fields.indexOf(this.key);
    const stampCol = b.fields.indexOf(this.field);
    if (keyCol < 0 || stampCol < 0) return this.batch(unpackRecords(b));
    const width = b.fields.length;
    const { tags, nums, ends, text } = b;
    let shape = -1;
    let best = -1;
    for (let r = 0, v = stampCol; r < b.rows; r++, v += width) {
      if (tags[v] === CELL_NULL) continue;
      if (tags[v] !== CELL_TEXT) return this.batch(unpackRecords(b));
      const at = nums[v] as number;
      const end = ends[v] as number;
      if (best < 0) {
        shape = stampShapeBytes(text, at, end);
        if (shape < 0) return this.batch(unpackRecords(b));
        best = v;
        continue;
      }
      const c = compareShapedBytes(text, at, end, shape, text, nums[best] as number, ends[best] as number);
      if (c === OTHER_SHAPE) return this.batch(unpackRecords(b));
      if (c > 0) best = v;
    }
    // The rows at the newest prefix, and those at the mark's, in order: the ones the fold reads.
    const mark = this.mark;
    const bestAt = nums[best] as number;
    const bestEnd = ends[best] as number;
    // A mark of another shape is compared with every row as the records' fold does.
    const markBytes = mark === null || best < 0 ? undefined : stampBytes(mark);
    const markVsNewest = markBytes && compareShapedBytes(markBytes, 0, markBytes.length, shape, text, bestAt, bestEnd);
    const byBytes = markBytes !== undefined && markVsNewest !== OTHER_SHAPE;
    const rows: number[] = [];
    const stamps: Value[] = [];
    for (let r = 0, v = stampCol; r < b.rows; r++, v += width) {
      if (tags[v] === CELL_NULL) continue;
      const at = nums[v] as number;
      const end = ends[v] as number;
      const top = best >= 0 && samePrefixBytes(text, at, end, bestAt, bestEnd);
      const marked = mark !== null && (!byBytes || samePrefixBytes(text, at, end, 0, markBytes.length, markBytes));
      if (top || marked) {
        rows.push(r);
        stamps.push(packedValue(b, v));
      }
    }
    this.foldStamps(stamps, (i) => packedRecord(b, rows[i] as number));
    for (let r = b.rows - 1; r >= 0; r--) {
      const k = packedValue(b, r * width + keyCol);
      if (typeof k === 'string' || (typeof k === 'number' && Number.isFinite(k))) {
        this.upTo = k;
        return true;
      }
    }
    return false;
  }

  /** The progress to save: the earlier parts and this one (while it has written nothing, what it found). */
  state(): InitialCopyState {
    const mine: CopiedPart | undefined = this.upTo === undefined ? undefined : { upTo: this.upTo, since: this.mark };
    const parts = mine ? [...this.before.filter((p) => !covers(mine, p)), mine] : [...this.before];
    return { parts, mark: this.mark, atMark: [...this.atMark] };
  }

  /** The watermark the copy leaves when this part has read to the end. */
  watermark(): WatermarkState | null {
    return this.mark === null ? null : { lastRunDate: this.mark, processedAtLastRunDate: [...this.atMark] };
  }

  /** Whether a record read again is one an earlier part copied at exactly its mark. */
  private copied(
    done: NonNullable<FirstCopy['done']>,
    stamp: Value | undefined,
    keyOf: () => Value | undefined,
  ): boolean {
    if (stamp === null || stamp === undefined || !atStamp(stamp, done.mark)) return false;
    return done.ids.has(recordIdentity({ [this.key]: keyOf() ?? null }, [this.key]));
  }

  /**
   * Folds a batch's stamps in, in two passes: the newest stamp first, by comparisons alone, then the
   * identities of the records at the mark. A record costs a comparison or two, and an identity only
   * when it is at the mark — also when stamps rise with the key, so that nearly every record is
   * newer than the one before.
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
    let top = this.mark;
    for (const v of stamps) {
      if (v !== null && v !== undefined && (top === null || newer(v, top))) top = String(v);
    }
    if (top !== this.mark) {
      this.mark = top;
      this.atMark = new Set();
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
 * Whether part `a` says all that `b` does: its range holds b's and its `since` is no older, so b's
 * term of the filter selects nothing a's does not. Only integer keys are compared here; text keys
 * are ordered by the datastore's collation, which JavaScript does not know.
 */
function covers(a: CopiedPart, b: CopiedPart): boolean {
  if (typeof a.upTo !== 'number' || typeof b.upTo !== 'number' || a.upTo < b.upTo) return false;
  if (b.since === null) return true;
  return a.since !== null && !newer(b.since, a.since);
}

/**
 * A first copy's part within a run (run.ts): its {@link FirstCopy}, the order and filter it reads
 * with, and its progress saved in the store one save after the other.
 */
export class FirstCopyPart {
  #saving: Promise<void> = Promise.resolve();

  private constructor(
    readonly copy: FirstCopy,
    readonly key: string,
    private readonly store: FirstCopyStore,
    /** The keys the earlier parts had written up to (null: this is the first part). */
    readonly resumedAfter: CopyKey[] | null,
  ) {}

  static async open(key: string, field: string, store: FirstCopyStore): Promise<FirstCopyPart> {
    const initial = await store.loadInitial();
    return new FirstCopyPart(new FirstCopy(key, field, initial), key, store, initial?.parts.map((p) => p.upTo) ?? null);
  }

  orderBy(): OrderBy[] {
    return [{ field: this.key, direction: 'asc' }];
  }

  /** Saves the progress so far, after the save before it. */
  async save(): Promise<void> {
    const state = this.copy.state();
    await this.#saving;
    await this.store.saveInitial(state);
  }

  /**
   * Starts saving the progress so far once the save before it is done, without waiting for it (a
   * packed batch's progress is saved while the next batch is written): a crash loses at most the
   * last save, and what that batch wrote is written over by key. A failed save is thrown by the
   * next call, or by {@link settle}.
   */
  async saveBehind(): Promise<void> {
    const state = this.copy.state();
    await this.#saving;
    this.#saving = this.store.saveInitial(state);
    // Rethrown by the next await; until then a failed save must not be an unhandled rejection.
    this.#saving.catch(() => undefined);
  }

  /** Waits for the save under way. */
  settle(): Promise<void> {
    return this.#saving;
  }

  /** The part read to the end: the copy leaves its watermark, then its progress goes (a crash between them leaves the watermark, which wins). */
  async finish(): Promise<void> {
    await this.#saving;
    const mark = this.copy.watermark();
    if (mark) await this.store.save(mark);
    await this.store.clearInitial();
  }
}
