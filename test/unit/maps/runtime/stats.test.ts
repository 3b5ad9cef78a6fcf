import { describe, expect, it } from 'vitest';
import { RecordTiming, StatsCollector } from '../../../../src/maps/runtime/stats.js';
import type { Block } from '../../../../src/protocol/map.js';

const Q: Block = { blockId: 'q', name: 'Q', blockType: 'Query', action: 'Query' };

describe('statistics: every figure per record, and they add up', () => {
  it("a Map of 20,000 records in 10 batches over 2.7 s averages 0.135 ms a record, not a batch's 270 ms", () => {
    const stats = new StatsCollector([Q]);
    for (let i = 0; i < 10; i++) {
      stats.batch(2000, i === 0 ? 1 : 0, i === 9 ? 180 : 280);
      stats.block(Q, 2000, 20);
    }
    const r = stats.result({ mapName: 'People', cancelled: false });
    expect(r).toMatchObject({
      processed: 20_000,
      failed: 1,
      batches: 10,
      totalMs: 2700,
      avgMs: 0.135,
      minMs: 0.09,
      maxMs: 0.14,
      totalTime: '00:00:02',
    });
    expect(r.avgMs * r.processed).toBeCloseTo(r.totalMs);
    expect(r.blocks[0]).toMatchObject({ processed: 20_000, totalMs: 200, avgMs: 0.01, minMs: 0.01, maxMs: 0.01 });
  });

  it('weights the average by records: a small slow batch moves max, not the mean', () => {
    const t = new RecordTiming();
    t.add(100, 1000);
    t.add(50, 10);
    t.add(3, 0);
    expect(t.view()).toEqual({ minMs: 0.1, maxMs: 5, avgMs: 0.151, totalMs: 153 });
    expect(new RecordTiming().view()).toEqual({ minMs: 0, maxMs: 0, avgMs: 0, totalMs: 0 });
  });

  it('a replicated entity: total is the sum of its batches and average total / records, per pseudo-Block too', () => {
    const read: Block = { blockId: 'read', name: 'Read', blockType: 'Query', action: 'Query' };
    const write: Block = { blockId: 'write', name: 'Upsert', blockType: 'Upsert', action: 'InsertUpdate' };
    const e = new StatsCollector([read, write]);
    e.block(read, 500, 10);
    e.block(write, 500, 30);
    e.blockFailed(write);
    e.blockFailed(write);
    e.batch(500, 2, 50);
    e.block(read, 250, 5);
    e.block(write, 250, 20);
    e.batch(250, 0, 25);
    const r = e.result({ mapName: 'people', entity: 'people', cancelled: false });
    expect(r).toMatchObject({ processed: 750, failed: 2, totalMs: 75, avgMs: 0.1, minMs: 0.1, maxMs: 0.1 });
    expect(r.blocks).toEqual([
      expect.objectContaining({ name: 'Read', processed: 750, totalMs: 15, avgMs: 0.02, minMs: 0.02, maxMs: 0.02 }),
      expect.objectContaining({
        name: 'Upsert',
        processed: 750,
        failed: 2,
        totalMs: 50,
        avgMs: 0.067,
        minMs: 0.06,
        maxMs: 0.08,
      }),
    ]);
  });
});
