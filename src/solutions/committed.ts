/**
 * What a run has committed, Map by Map (IS, MS) or entity by entity (RS), kept in the run's
 * open-run record (SolutionStore) as it goes, so that a run whose Agent process is killed is
 * reported with what it really wrote and when it last did (SolutionRunner.recover()):
 *
 *   begin(Map or entity) ──▶ its row: nothing yet, at now
 *   batch(counts so far) ──▶ its row: the counts, the time per record, at now
 *        (once the Map runtime or the entity has written and checkpointed a batch; at most one
 *         write every MIN_GAP_MS, a count held back is written when the gap ends, or at flush())
 *   end(statistics) ──────▶ its row: the Map's or entity's own statistics, Blocks included
 *
 * A batch is counted once it is written, and before the Agent's own checkpoint moves past it
 * (`batch(…, now)`), so the rows never count less than that checkpoint: a batch the checkpoint
 * missed is read and counted again by the next run, as it is written again. A batch that committed
 * with its checkpoint in the target and was not counted yet is found by the next run in that
 * checkpoint (maps/runtime/run-counts.ts), which reports it (runCommitted).
 */
import type { Logger } from 'pino';
import { hms, RecordTiming } from '../maps/runtime/stats.js';
import type { RunMapStats } from '../protocol/solutions.js';
import type { SolutionStore } from './solution-store.js';

/**
 * Least time between two writes of counts: at most 200 small SQLite writes a second (about 30 µs
 * each, under 1% of the run's thread), whatever the batch size; a run of 2,000-record batches at
 * 300,000 records a second writes after every batch.
 */
export const MIN_GAP_MS = 5;

/** The Map or entity in progress. */
interface Current {
  readonly seq: number;
  readonly mapId: number | undefined;
  readonly mapName: string;
  readonly entity: string | undefined;
  /** performance.now() of the last batch (or the beginning). */
  last: number;
  /** Date.now() of the last batch (or the beginning). */
  at: number;
  processed: number;
  failed: number;
  /** Each batch timed from the one before (the first from the beginning): the sum is the time since the beginning. */
  readonly timing: RecordTiming;
}

export class CommittedCounts {
  #seq = 0;
  #current: Current | undefined;
  /** Counts newer than the last write. */
  #dirty = false;
  #lastWrite = -Infinity;
  #timer: NodeJS.Timeout | undefined;
  #warned = false;

  constructor(
    private readonly store: Pick<SolutionStore, 'saveCommitted'>,
    private readonly runId: string,
    private readonly log: Logger,
    private readonly minGapMs = MIN_GAP_MS,
  ) {}

  /** A Map or entity begins. */
  begin(what: { mapId?: number | undefined; mapName: string; entity?: string | undefined }): void {
    this.flush();
    const t = performance.now();
    this.#current = {
      seq: this.#seq++,
      mapId: what.mapId,
      mapName: what.mapName,
      entity: what.entity,
      last: t,
      at: Date.now(),
      processed: 0,
      failed: 0,
      timing: new RecordTiming(),
    };
    this.#write();
  }

  /**
   * A batch of the Map or entity in progress was written: its counts so far. `now`: a checkpoint of
   * the Agent's own follows, so they are written at once (never after the checkpoint).
   */
  batch(processed: number, failed: number, now = false): void {
    const c = this.#current;
    if (!c) return;
    const t = performance.now();
    c.timing.add(t - c.last, processed - c.processed);
    c.last = t;
    c.at = Date.now();
    c.processed = processed;
    c.failed = failed;
    this.#dirty = true;
    const wait = this.#lastWrite + this.minGapMs - t;
    if (wait <= 0 || now) this.#write();
    else if (!this.#timer) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.flush();
      }, wait);
      this.#timer.unref();
    }
  }

  /** The counts so far of the Map or entity in progress, and the time per record of its counted batches. */
  get current():
    { processed: number; failed: number; minMs: number; maxMs: number; avgMs: number; totalMs: number } | undefined {
    const c = this.#current;
    return c ? { processed: c.processed, failed: c.failed, ...c.timing.view() } : undefined;
  }

  /** The Map or entity in progress ended with these statistics (or one that never began, a row of its own). */
  end(stats: RunMapStats): void {
    this.#cancel();
    const seq = this.#current?.seq ?? this.#seq++;
    this.#current = undefined;
    this.#dirty = false;
    this.#save(seq, Date.now(), stats);
  }

  /** Writes counts held back by the gap, now. */
  flush(): void {
    if (this.#dirty) this.#write();
  }

  /** Stops the timer; counts held back are written first. */
  close(): void {
    this.flush();
    this.#cancel();
  }

  #cancel(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #write(): void {
    const c = this.#current;
    this.#dirty = false;
    if (!c) return;
    this.#cancel();
    const time = c.timing.view();
    this.#save(c.seq, c.at, {
      ...(c.mapId !== undefined ? { mapId: c.mapId } : {}),
      mapName: c.mapName,
      ...(c.entity ? { entity: c.entity } : {}),
      processed: c.processed,
      failed: c.failed,
      ...time,
      totalTime: hms(time.totalMs),
      blocks: [],
    });
  }

  #save(seq: number, at: number, stats: RunMapStats): void {
    this.#lastWrite = performance.now();
    try {
      this.store.saveCommitted(this.runId, seq, new Date(at).toISOString(), JSON.stringify(stats));
    } catch (err) {
      // Bookkeeping for a kill must never fail the run itself.
      if (!this.#warned)
        this.log.warn({ err }, 'committed counts not recorded; a kill of the Agent would report fewer');
      this.#warned = true;
    }
  }
}
