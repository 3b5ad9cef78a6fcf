/** Statistics per Map and per Block: processed, failed, and min/max/avg/total ms (per batch call). */
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

interface Acc {
  processed: number;
  failed: number;
  min: number;
  max: number;
  total: number;
  calls: number;
}

const acc = (): Acc => ({ processed: 0, failed: 0, min: Infinity, max: 0, total: 0, calls: 0 });
const round = (n: number): number => Math.round(n * 1000) / 1000;
const view = (a: Acc): TimingStats => ({
  processed: a.processed,
  failed: a.failed,
  minMs: a.calls ? round(a.min) : 0,
  maxMs: round(a.max),
  avgMs: a.calls ? round(a.total / a.calls) : 0,
  totalMs: round(a.total),
});

export function hms(ms: number): string {
  const s = Math.floor(ms / 1000);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${p(Math.floor(s / 3600))}:${p(Math.floor((s % 3600) / 60))}:${p(s % 60)}`;
}

export class StatsCollector {
  private readonly map = acc();
  private readonly blocks = new Map<string, { block: Block; a: Acc }>();
  batches = 0;

  constructor(allBlocks: Iterable<Block>) {
    for (const b of allBlocks) this.blocks.set(b.blockId, { block: b, a: acc() });
  }

  /** A Block handled `records` items in `ms`. */
  block(b: Block, records: number, ms: number): void {
    const e = this.blocks.get(b.blockId);
    if (!e) return;
    e.a.processed += records;
    e.a.calls++;
    e.a.total += ms;
    e.a.min = Math.min(e.a.min, ms);
    e.a.max = Math.max(e.a.max, ms);
  }

  blockFailed(b: Block): void {
    const e = this.blocks.get(b.blockId);
    if (e) e.a.failed++;
  }

  /** A starter batch went through the Map. */
  batch(records: number, failed: number, ms: number): void {
    this.batches++;
    const a = this.map;
    a.processed += records;
    a.failed += failed;
    a.calls++;
    a.total += ms;
    a.min = Math.min(a.min, ms);
    a.max = Math.max(a.max, ms);
  }

  get processed(): number {
    return this.map.processed;
  }

  get failed(): number {
    return this.map.failed;
  }

  result(extra: { mapId?: number; mapName: string; entity?: string; lastRunDate?: string | null; cancelled: boolean }): MapStats {
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
      blocks: [...this.blocks.values()].map(({ block, a }) => ({ blockId: block.blockId, name: block.name, blockType: block.blockType, ...view(a) })),
    };
  }
}
