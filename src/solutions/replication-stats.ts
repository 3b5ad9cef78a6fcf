/**
 * Statistics of one replicated entity as a run reports them (RunMapStats): counts, the time per
 * batch (from the batch read to its checkpoint), the entity's wall time, and two pseudo-Blocks
 * that time the reads and the writes.
 */
import { hms } from '../maps/runtime/stats.js';
import type { RunMapStats } from '../protocol/solutions.js';

interface Timing {
  calls: number;
  records: number;
  failed: number;
  min: number;
  max: number;
  total: number;
}

const timing = (): Timing => ({ calls: 0, records: 0, failed: 0, min: Infinity, max: 0, total: 0 });
const round = (n: number): number => Math.round(n * 1000) / 1000;

function add(t: Timing, ms: number, records: number, failed = 0): void {
  t.calls++;
  t.records += records;
  t.failed += failed;
  t.total += ms;
  if (ms < t.min) t.min = ms;
  if (ms > t.max) t.max = ms;
}

function view(t: Timing): { minMs: number; maxMs: number; avgMs: number; totalMs: number } {
  return { minMs: t.calls ? round(t.min) : 0, maxMs: round(t.max), avgMs: t.calls ? round(t.total / t.calls) : 0, totalMs: round(t.total) };
}

export class EntityStats {
  private readonly started = performance.now();
  private readonly batches = timing();
  private readonly reads = timing();
  private readonly writes = timing();
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
    add(this.reads, ms, records);
  }

  /** A write call of `records` took `ms`, `failed` of them refused. */
  write(ms: number, records: number, failed: number): void {
    add(this.writes, ms, records, failed);
  }

  /** A batch went from read to checkpoint in `ms`. */
  batch(ms: number, records: number, failed: number): void {
    add(this.batches, ms, records, failed);
  }

  result(): RunMapStats {
    const wall = performance.now() - this.started;
    const b = view(this.batches);
    return {
      mapName: this.entity,
      entity: this.entity,
      processed: this.batches.records,
      failed: this.batches.failed,
      minMs: b.minMs,
      maxMs: b.maxMs,
      avgMs: b.avgMs,
      // The entity's whole time (metadata, ensureEntity, reads and writes), not the sum of its batches.
      totalMs: round(wall),
      totalTime: hms(wall),
      ...(this.fatal !== undefined ? { fatal: this.fatal.slice(0, 10_000) } : {}),
      blocks: [
        { blockId: 'read', name: 'Read', blockType: 'Query', processed: this.reads.records, failed: 0, ...view(this.reads) },
        { blockId: 'write', name: this.writeAction, blockType: this.writeAction, processed: this.writes.records, failed: this.writes.failed, ...view(this.writes) },
      ],
    };
  }
}
