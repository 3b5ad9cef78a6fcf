import { describe, expect, it } from 'vitest';
import { transfer } from '../../../src/connectors/transfer.js';
import type { RecordBatch, WriteResult } from '../../../src/connectors/sdk.js';

describe('transfer', () => {
  it('reads the next batch while the current one is written, and counts results', async () => {
    const events: string[] = [];
    let released = false;
    async function* source(): AsyncGenerator<RecordBatch> {
      try {
        for (let b = 0; b < 3; b++) {
          events.push(`read ${b}`);
          yield [
            { b, i: 0 },
            { b, i: 1 },
          ];
        }
      } finally {
        released = true;
      }
    }
    const stats = await transfer(source(), async (batch) => {
      events.push(`write ${String(batch[0]?.['b'])} start`);
      await new Promise((r) => setTimeout(r, 10));
      events.push(`write ${String(batch[0]?.['b'])} end`);
      return batch.map((r): WriteResult =>
        r['i'] === 1 ? { ok: false, error: { code: 'InvalidValue', message: 'x' } } : { ok: true, affected: 1 },
      );
    });
    expect(stats).toEqual({ read: 6, written: 3, failed: 3, batches: 3 });
    // Batch 1 is read after the write of batch 0 started and before it ended.
    expect(events.slice(0, 4)).toEqual(['read 0', 'write 0 start', 'read 1', 'write 0 end']);
    expect(released).toBe(true);
  });

  it('stops at a failing write and releases the source', async () => {
    let released = false;
    async function* source(): AsyncGenerator<RecordBatch> {
      try {
        for (let b = 0; b < 100; b++) yield [{ b }];
      } finally {
        released = true;
      }
    }
    await expect(transfer(source(), async () => Promise.reject(new Error('target down')))).rejects.toThrow(
      'target down',
    );
    await expect.poll(() => released).toBe(true);
  });
});
