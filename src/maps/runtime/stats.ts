/**
 * Statistics per Map and per Block: processed, failed, and the time per record (ms).
 *
 * Every figure is what its name says: `totalMs` is the sum of the timed calls (a Map's batches, a
 * Block's calls), `avgMs` is `totalMs / processed` (the mean time of one record), and `minMs` /
 * `maxMs` are the shortest and longest time of one record in a call (the call's time divided by its
 * records). So `avgMs × processed = totalMs`, and `minMs ≤ avgMs ≤ maxMs`.
 */
import type { Block } from '../../protocol/map.js';

export interface TimingStats {
  processed: number;
  failed: number;
  minMs: number;
  maxMs: number;
  avgMs: number;
  totalMs: number;
}

export interface BlockStats extends TimingStats {
  blockId: string;
  name: string;
  blockType: string;
}

export interface MapStats extends TimingStats {
  mapId?: number;
  mapName: string;
  entity?: string;
  /** totalMs as hours:minutes:seconds. */
  totalTime: string;
  batches: number;
  /** The net-change watermark after the run (ISO-8601), when the Map uses net change. */
  lastRunDate?: string | null;
  cancelled: boolean;
  blocks: BlockStats[];
}

const round = (n: number): number => Math.round(n * 1000) / 1000;

/** Timed calls of records, summed; read as time per record (see the module's comment). */
export class RecordTiming {
  records = 0;
  failed = 0;
  calls = 0;
  #total = 0;
  #min = Infinity;
  #max = 0;

  /** A call of `records` records took `ms`, `failed` of them refused. A call of none adds only its time. */
  add(ms: number, records: number, failed = 0): void {
    this.calls++;
    this.records += records;
    this.failed += failed;
    this.#total += ms;
    if (records > 0) {
      const each = ms / records;
      if (each < this.#min) this.#min = each;
      if (each > this.#max) this.#max = each;
    }
  }

  /** min, max and average time of one record, and the total (ms, to the microsecond). */
  view(): Pick<TimingStats, 'minMs' | 'maxMs' | 'avgMs' | 'totalMs'> {
    const some = this.records > 0;
    return {
      minMs: some ? round(this.#min) : 0,
      maxMs: some ? round(this.#max) : 0,
      avgMs: some ? round(this.#total / this.records) : 0,
      totalMs: round(this.#total),
    };
  }
}

const view = (t: RecordTiming): TimingStats => ({ processed: t.records, failed: t.failed, ...t.view() });

export function hms(ms: number): string {
  const s = Math.floor(ms / 1000);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${p(Math.floor(s / 3600))}:${p(Math.floor((s % 3600) / 60))}:${p(s % 60)}`;
}

export class StatsCollector {
  private readonly map = new RecordTiming();
  private readonly blocks = new Map<string, { block: Block; a: RecordTiming }>();

  constructor(allBlocks: Iterable<Block>) {
    for (const b of allBlocks) this.blocks.set(b.blockId, { block: b, a: new RecordTiming() });
  }

  /** Starter batches that went through the Map. */
  get batches(): number {
    return this.map.calls;
  }

  /** A Block handled `records` items in `ms`. */
  block(b: Block, records: number, ms: number): void {
    this.blocks.get(b.blockId)?.a.add(ms, records);
  }

  blockFailed(b: Block): void {
    const e = this.blocks.get(b.blockId);
    if (e) e.a.failed++;
  }

  /** A starter batch went through the Map. */
  batch(records: number, failed: number, ms: number): void {
    this.map.add(ms, records, failed);
  }

  get processed(): number {
    return this.map.records;
  }

  get failed(): number {
    return this.map.failed;
  }

  result(extra: {
    mapId?: number;
    mapName: string;
    entity?: string;
    lastRunDate?: string | null;
    cancelled: boolean;
  }): MapStats {
    const m = view(this.map);
    return {
      ...(extra.mapId !== undefined ? { mapId: extra.mapId } : {}),
      mapName: extra.mapName,
      ...(extra.entity ? { entity: extra.entity } : {}),
      ...m,
      totalTime: hms(m.totalMs),
      batches: this.batches,
      ...(extra.lastRunDate !== undefined ? { lastRunDate: extra.lastRunDate } : {}),
      cancelled: extra.cancelled,
      blocks: [...this.blocks.values()].map(({ block, a }) => ({
        blockId: block.blockId,
        name: block.name,
        blockType: block.blockType,
        ...view(a),
      })),
    };
  }
}
