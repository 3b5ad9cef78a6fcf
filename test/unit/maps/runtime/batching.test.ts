import { describe, expect, it } from 'vitest';
import type { Block } from '../../../../src/protocol/map.js';
import { batchSizes } from '../../../../src/maps/runtime/batching.js';

const block = (blockId: string, connectionId: string | undefined, bulkCountPerOperation?: number): Block => ({
  blockId,
  name: blockId,
  blockType: 'Create',
  action: 'Create',
  connectionId,
  bulkCountPerOperation,
});
const conns = (limits: Record<string, number>) =>
  new Map(Object.entries(limits).map(([id, bulkLimit]) => [id, { bulkLimit }]));

describe('batchSizes', () => {
  it('takes the asked size, else 2000, within the source Connector bulkLimit', () => {
    expect(batchSizes(undefined, undefined, [], new Map()).run).toBe(2000);
    expect(batchSizes(50, { bulkLimit: 10 }, [], new Map()).run).toBe(10);
    expect(batchSizes(undefined, { bulkLimit: 500 }, [], new Map()).run).toBe(500);
    expect(batchSizes(7, undefined, [], new Map()).run).toBe(7);
  });

  it('gives each write Block its bulkCountPerOperation, else the run size, within its own Connector bulkLimit', () => {
    const a = block('a', 'x');
    const b = block('b', 'y', 300);
    const c = block('c', 'x', 5);
    const d = block('d', 'gone');
    const s = batchSizes(200, { bulkLimit: 1000 }, [a, b, c, d], conns({ x: 100, y: 250 }));
    expect([s.run, s.bulk(a), s.bulk(b), s.bulk(c)]).toEqual([200, 100, 250, 5]);
    // Its Connection is not open: one record per call, each failing on its own.
    expect(s.bulk(d)).toBe(1);
  });
});
