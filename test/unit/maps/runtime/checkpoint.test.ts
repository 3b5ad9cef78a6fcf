import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  checkpointKeyOf,
  loadCheckpoint,
  parseWatermark,
  readTargetCheckpoint,
  watermarkValue,
} from '../../../../src/maps/runtime/checkpoint.js';
import { resumeValue } from '../../../../src/maps/runtime/resume-point.js';
import { FileWatermark, MemoryWatermark } from '../../../../src/maps/runtime/watermark.js';
import { isFerryError } from '../../../../src/errors/ferry-error.js';

const COUNTS = {
  run: 'b0000000-0000-4000-8000-000000000001',
  processed: 700,
  failed: 0,
  at: '2024-05-01T10:00:04.000Z',
};

describe('one checkpoint module for Maps and Replications', () => {
  it('keys both alike, with the key an older Agent used beside it, and hashes keys past 500 characters', () => {
    expect(checkpointKeyOf({ kind: 'map', solutionId: 's1', mapId: 3 })).toEqual({
      key: 'ferry:map:s1:3',
      legacy: 'ferry-map-s1-3',
    });
    expect(
      checkpointKeyOf({ kind: 'entity', sourceConnectionId: 'c1', entity: 'orders', field: 'modified_at' }),
    ).toEqual({ key: 'ferry:rs:c1:orders:modified_at', legacy: 'rs:c1:orders:modified_at' });
    const long = checkpointKeyOf({ kind: 'entity', sourceConnectionId: 'c1', entity: 'e'.repeat(600), field: 'f' });
    expect(long.key).toMatch(/^ferry:[0-9a-f]{64}$/);
    expect(long.legacy).toMatch(/^rs:[0-9a-f]{64}$/);
  });

  it('reads the old key only when the key of today holds nothing (a cleared one hides it)', async () => {
    const rows = new Map<string, string>([['rs:c1:orders:m', '{"lastRunDate":"2024-01-01T00:00:00Z"}']]);
    const read = (k: string): Promise<string | null> => Promise.resolve(rows.get(k) ?? null);
    const key = { key: 'ferry:rs:c1:orders:m', legacy: 'rs:c1:orders:m' };
    expect(await readTargetCheckpoint(read, key)).toBe('{"lastRunDate":"2024-01-01T00:00:00Z"}');
    rows.set(key.key, 'null');
    expect(await readTargetCheckpoint(read, key)).toBe('null');
    expect(await readTargetCheckpoint(read, { key: 'other' })).toBeNull();
  });

  it('parses one way: nothing for null and for a resume point, a watermark, and a refusal for anything else', () => {
    expect(parseWatermark(null, 'x')).toBeNull();
    expect(parseWatermark('null', 'x')).toBeNull();
    expect(parseWatermark(resumeValue({ run: 'r', read: 5, last: 'f' }, COUNTS), 'x')).toBeNull();
    expect(
      parseWatermark(
        watermarkValue({ lastRunDate: '2024-01-02T00:00:00Z', processedAtLastRunDate: ['k:[1]'] }, COUNTS),
        'x',
      ),
    ).toEqual({ lastRunDate: '2024-01-02T00:00:00Z', processedAtLastRunDate: ['k:[1]'] });
    for (const bad of [
      'not json',
      '[1]',
      '"text"',
      '{"lastRunDate":5}',
      '{"lastRunDate":"2024-01-01","processedAtLastRunDate":[1]}',
    ]) {
      let caught: unknown;
      try {
        parseWatermark(bad, 'the entity orders in the target');
      } catch (err) {
        caught = err;
      }
      expect(isFerryError(caught) && caught.code).toBe('RUN_CHECKPOINT_INVALID');
      expect((caught as Error).message).toContain('the entity orders in the target');
    }
  });

  it('the target wins over the Agent file, even an older one; the file serves when the target keeps none', async () => {
    const file = new MemoryWatermark({ lastRunDate: '2024-03-01T00:00:00Z' });
    const target = watermarkValue({ lastRunDate: '2024-02-01T00:00:00Z' }, COUNTS);
    const a = await loadCheckpoint({ local: file, targetValue: target, what: 'm', runId: 'this-run' });
    expect(a.saved).toEqual({ lastRunDate: '2024-02-01T00:00:00Z' });
    expect(a.earlier).toEqual(COUNTS);
    const b = await loadCheckpoint({ local: file, targetValue: null, what: 'm' });
    expect(b.saved).toEqual({ lastRunDate: '2024-03-01T00:00:00Z' });
    expect(b.earlier).toBeNull();
    // Counts this run committed itself are not an earlier run's.
    expect(
      (await loadCheckpoint({ local: undefined, targetValue: target, what: 'm', runId: COUNTS.run })).earlier,
    ).toBeNull();
  });

  it('reads the Agent file with the same parser: a damaged file is refused, not taken for nothing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-cp-'));
    try {
      const f = path.join(dir, 'wm.json');
      const wm = new FileWatermark(f);
      expect(await wm.load()).toBeNull();
      await wm.save({ lastRunDate: '2024-01-01T00:00:00Z', processedAtLastRunDate: ['k:[2]'] });
      expect(await wm.load()).toEqual({ lastRunDate: '2024-01-01T00:00:00Z', processedAtLastRunDate: ['k:[2]'] });
      fs.writeFileSync(f, '{"lastRunDate":');
      await expect(wm.load()).rejects.toMatchObject({ code: 'RUN_CHECKPOINT_INVALID' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
