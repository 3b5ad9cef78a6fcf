/**
 * Statistics of one replicated entity as a run reports them (RunMapStats): counts, the time per
 * record of its batches (each timed from the batch read to its checkpoint; total = their sum,
 * average = total / records, as a Map's), and two pseudo-Blocks that time the reads and the writes.
 */
import { hms, RecordTiming } from '../maps/runtime/stats.js';
import type { RunMapStats } from '../protocol/solutions.js';

export class EntityStats {
  private readonly batches = new RecordTiming();
  private readonly reads = new RecordTiming();
  private readonly writes = new RecordTiming();
  fatal: string | undefined;

  constructor(
    readonly entity: string,
    private writeAction = 'Write',
  ) {}

  get processed(): number {
    return this.batches.records;
  }

  get failed(): number {
    return this.batches.failed;
  }

  /** The write action, once known (Upsert or Create). */
  action(name: string): void {
    this.writeAction = name;
  }

  /** A source batch arrived after `ms` of reading. */
  read(ms: number, records: number): void {
    this.reads.add(ms, records);
  }

  /** A write call of `records` took `ms`, `failed` of them refused. */
  write(ms: number, records: number, failed: number): void {
    this.writes.add(ms, records, failed);
  }

  /** A batch went from read to checkpoint in `ms`. */
  batch(ms: number, records: number, failed: number): void {
    this.batches.add(ms, records, failed);
  }

  result(): RunMapStats {
    const b = this.batches.view();
    return {
      mapName: this.entity,
      entity: this.entity,
      processed: this.batches.records,
      failed: this.batches.failed,
      ...b,
      totalTime: hms(b.totalMs),
      ...(this.fatal !== undefined ? { fatal: this.fatal.slice(0, 10_000) } : {}),
      blocks: [
        {
          blockId: 'read',
          name: 'Read',
          blockType: 'Query',
          processed: this.reads.records,
          failed: 0,
          ...this.reads.view(),
        },
        {
          blockId: 'write',
          name: this.writeAction,
          blockType: this.writeAction,
          processed: this.writes.records,
          failed: this.writes.failed,
          ...this.writes.view(),
        },
      ],
    };
  }
}
