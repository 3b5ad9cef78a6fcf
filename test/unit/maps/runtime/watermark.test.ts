import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  FileWatermark,
  MarkTracker,
  MemoryWatermark,
  recordIdentity,
  sameMark,
} from '../../../../src/maps/runtime/watermark.js';

const T1 = '2024-01-01T00:00:00Z';
const T2 = '2024-01-02T00:00:00Z';
const rec = (id: number, at: string, name = `n${id}`): { id: number; at: string; name: string } => ({ id, at, name });

describe('net-change watermark ties', () => {
  it('compares marks by instant', () => {
    expect(sameMark(T1, '2024-01-01T00:00:00.000Z')).toBe(true);
    expect(sameMark(T1, T2)).toBe(false);
    expect(sameMark(T1, null)).toBe(false);
  });

  it('identifies a record by its primary key, else by a hash of the whole record', () => {
    expect(recordIdentity(rec(5, T1), ['id'])).toBe('k:[5]');
    expect(recordIdentity(rec(5, T1), ['id'])).toBe(recordIdentity(rec(5, T2, 'other'), ['id']));
    const a = recordIdentity({ b: 1, a: 'x' }, []);
    expect(a).toBe(recordIdentity({ a: 'x', b: 1 }, []));
    expect(a).not.toBe(recordIdentity({ a: 'x', b: 2 }, []));
    // a record without its key value falls back to the hash
    expect(recordIdentity({ id: null, a: 'x' }, ['id'])).toMatch(/^h:/);
  });

  it('keeps the identities processed at exactly the watermark and skips only those', () => {
    const t = new MarkTracker(null, [], 'at', ['id']);
    expect(t.advance([rec(1, T1), rec(2, T2)])).toBe(true);
    expect(t.state()).toEqual({ lastRunDate: T2, processedAtLastRunDate: ['k:[2]'] });
    // the same value again in a later batch: the set grows, the value stays
    expect(t.advance([rec(3, T2)])).toBe(true);
    expect(t.state()).toEqual({ lastRunDate: T2, processedAtLastRunDate: ['k:[2]', 'k:[3]'] });
    expect(t.advance([])).toBe(false);

    // next run: re-read from T2; 2 and 3 are skipped, 4 (same instant, not processed) and 5 are not
    const next = new MarkTracker(T2, ['k:[2]', 'k:[3]'], 'at', ['id']);
    expect(next.skip([rec(2, T2), rec(4, T2), rec(3, T2)]).map((r) => r.id)).toEqual([4]);
    expect(next.skip([rec(5, '2024-01-03T00:00:00Z')]).map((r) => r.id)).toEqual([5]);
    // a record whose value moved on is read again whatever its identity
    const again = new MarkTracker(T2, ['k:[2]'], 'at', ['id']);
    expect(again.skip([rec(2, '2024-01-03T00:00:00Z')]).map((r) => r.id)).toEqual([2]);
  });

  it('moves the mark and resets the set when a later value is processed', () => {
    const t = new MarkTracker(T1, ['k:[1]'], 'at', ['id']);
    expect(t.advance([rec(7, T2)])).toBe(true);
    expect(t.state()).toEqual({ lastRunDate: T2, processedAtLastRunDate: ['k:[7]'] });
  });

  it('loads a saved watermark without identities (older state files) and round-trips the new one', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-wm-'));
    try {
      const file = path.join(dir, 'state.json');
      fs.writeFileSync(file, JSON.stringify({ lastRunDate: T1 }));
      const wm = new FileWatermark(file);
      expect(await wm.load()).toEqual({ lastRunDate: T1 });
      await wm.save({ lastRunDate: T2, processedAtLastRunDate: ['k:[1]'] });
      expect(await wm.load()).toEqual({ lastRunDate: T2, processedAtLastRunDate: ['k:[1]'] });
      expect(await new FileWatermark(path.join(dir, 'none.json')).load()).toBeNull();
      expect(await new MemoryWatermark(T1).load()).toEqual({ lastRunDate: T1 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
