/**
 * The net-change watermark ("most recent record processed"). The Query reads records whose
 * net-change field is at or after it, ascending. After each batch the watermark moves to the
 * newest value among the batch's records that are done — those whose writes all succeeded, and
 * those that failed and were stored in the failed-record store — and is checkpointed, so a run
 * that crashes resumes from its last finished batch. A stored failed record is reprocessed from
 * its entry, never re-read by the next run. A failed record that could not be stored (the run has
 * no store) does not move the watermark: when nothing after it is done, the next run reads it again.
 *
 * Reading at or after the watermark re-reads the records whose value equals it (several records
 * can share an instant, and a batch can end in the middle of them). So the watermark keeps, with
 * its value, the identities of the records at exactly that value that are done; the next read
 * skips those, and only those (`MarkTracker.skip`).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import type { ConnectorRecord } from '../../connectors/sdk.js';
import { later, sameMark } from './stamps.js';
import { parseWatermark, type WatermarkState, type WatermarkStore } from './checkpoint.js';

/** The checkpoint and where it is kept are the checkpoint module's (checkpoint.ts). */
export type { WatermarkState, WatermarkStore } from './checkpoint.js';

/** Net-change values are ordered by the one order of stamps (stamps.ts). */
export { later, sameMark } from './stamps.js';

/**
 * A source record's identity: its primary-key values when the entity has a primary key and the
 * record holds it, else a hash of the whole record (fields in name order).
 */
export function recordIdentity(rec: ConnectorRecord, keyFields: readonly string[]): string {
  if (keyFields.length > 0 && keyFields.every((f) => rec[f] !== undefined && rec[f] !== null)) {
    return `k:${JSON.stringify(keyFields.map((f) => rec[f] ?? null))}`;
  }
  const h = createHash('sha256');
  for (const k of Object.keys(rec).sort()) h.update(JSON.stringify([k, rec[k] ?? null]));
  return `h:${h.digest('base64url')}`;
}

/**
 * The watermark of a run in memory: its value and the identities processed at exactly it.
 * `skip` drops re-read records already processed; `advance` folds in a finished batch's
 * successful records and says whether there is something new to checkpoint.
 */
export class MarkTracker {
  private atMark: Set<string>;
  /** Set once the read has gone past the watermark: records come ascending, nothing more to skip. */
  private past = false;

  constructor(
    private mark: string | null,
    processed: readonly string[],
    private readonly field: string,
    private readonly keyFields: readonly string[],
  ) {
    this.atMark = new Set(mark === null ? [] : processed);
  }

  get value(): string | null {
    return this.mark;
  }

  state(): WatermarkState | null {
    return this.mark === null ? null : { lastRunDate: this.mark, processedAtLastRunDate: [...this.atMark] };
  }

  /** The records of a batch read from the source that were not processed already. */
  skip(batch: ConnectorRecord[]): ConnectorRecord[] {
    const mark = this.mark;
    if (this.past || mark === null || this.atMark.size === 0) return batch;
    const out: ConnectorRecord[] = [];
    for (const rec of batch) {
      if (!this.past && sameMark(mark, rec[this.field])) {
        if (this.atMark.has(recordIdentity(rec, this.keyFields))) continue;
      } else {
        this.past = true;
      }
      out.push(rec);
    }
    return out;
  }

  /** The state {@link advance} would give with these records done, without changing the tracker. */
  peek(done: readonly ConnectorRecord[]): WatermarkState | null {
    let top = this.mark;
    for (const rec of done) top = later(top, rec[this.field]);
    if (top === null) return null;
    const ids = top === this.mark ? new Set(this.atMark) : new Set<string>();
    for (const rec of done) if (sameMark(top, rec[this.field])) ids.add(recordIdentity(rec, this.keyFields));
    return { lastRunDate: top, processedAtLastRunDate: [...ids] };
  }

  /**
   * {@link advance} for done records read ascending by the field (nulls last), as a net-change
   * query reads them: only the records at the batch's newest value count, found from the end, so
   * that a batch costs a few comparisons rather than two date parses per record.
   */
  advanceAscending(done: readonly ConnectorRecord[]): boolean {
    const field = this.field;
    let i = done.length - 1;
    while (i >= 0 && (done[i]?.[field] ?? null) === null) i--;
    if (i < 0) return false;
    const top = (done[i] as ConnectorRecord)[field];
    const mark = String(top);
    let j = i;
    while (j > 0) {
      const v = (done[j - 1] as ConnectorRecord)[field];
      if (v !== top && !sameMark(mark, v)) break;
      j--;
    }
    return this.advance(done.slice(j, i + 1));
  }

  /** Folds in a finished batch's done records (written, or failed and stored); true when the checkpoint changed. */
  advance(done: readonly ConnectorRecord[]): boolean {
    let top = this.mark;
    for (const rec of done) top = later(top, rec[this.field]);
    if (top === null) return false;
    const moved = top !== this.mark;
    if (moved) {
      this.mark = top;
      this.atMark = new Set();
      this.past = true;
    }
    const before = this.atMark.size;
    for (const rec of done) if (sameMark(top, rec[this.field])) this.atMark.add(recordIdentity(rec, this.keyFields));
    return moved || this.atMark.size !== before;
  }
}

/** A watermark in memory (tests, and runs the caller checkpoints itself through onCheckpoint). */
export class MemoryWatermark implements WatermarkStore {
  private value: WatermarkState | null;
  constructor(value: string | WatermarkState | null = null) {
    this.value = typeof value === 'string' ? { lastRunDate: value } : value;
  }
  load(): Promise<WatermarkState | null> {
    return Promise.resolve(this.value);
  }
  save(state: WatermarkState): Promise<void> {
    this.value = { ...state };
    return Promise.resolve();
  }
}

/**
 * A watermark in a JSON file, written atomically (rename) at each checkpoint:
 * `{ lastRunDate, processedAtLastRunDate? }`. Files holding only `{ lastRunDate }` still load.
 */
export class FileWatermark implements WatermarkStore {
  constructor(private readonly file: string) {}
  async load(): Promise<WatermarkState | null> {
    let text: string;
    try {
      text = await fs.readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    return parseWatermark(text, this.file);
  }
  async save(state: WatermarkState): Promise<void> {
    const tmp = `${this.file}.${process.pid}.tmp`;
    const ids = state.processedAtLastRunDate ?? [];
    await fs.writeFile(
      tmp,
      JSON.stringify({ lastRunDate: state.lastRunDate, ...(ids.length ? { processedAtLastRunDate: ids } : {}) }) + '\n',
    );
    await fs.rename(tmp, this.file);
  }
}
