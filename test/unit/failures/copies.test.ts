import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reprocessCopies, type ReprocessPages } from '../../../src/failures/copies.js';
import { FailedRecordStore } from '../../../src/failures/store.js';
import type { ReprocessRecord } from '../../../src/protocol/reprocess.js';

describe('the stored copies a reprocess run reads', () => {
  let dir: string;
  let store: FailedRecordStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-copies-'));
    store = new FailedRecordStore(path.join(dir, 'failures'));
  });
  afterEach(() => {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const capture = (n: number) =>
    store.capture({
      executionId: 'ex',
      mapId: 1,
      mapName: 'M',
      entity: 'e',
      blockId: 'b',
      blockName: 'B',
      error: { code: 'RUN_WRITE_FAILED', kind: 'config', message: 'no' },
      source: { n },
    });

  it('takes each copy from the page (cloud) or the local store, in order, in batches of the Map, pulling the next page only when needed; a record without a copy is missing', async () => {
    const local = await Promise.all([capture(1), capture(3)]);
    const pages: ReprocessRecord[][] = [
      [
        { seq: 1, errorId: 'e1', failedRecordId: local[0] ?? '' },
        { seq: 2, errorId: 'e2', failedRecordId: 'c2', source: { n: 2 } },
      ],
      [
        { seq: 5, errorId: 'e5', failedRecordId: 'gone' },
        { seq: 7, errorId: 'e7', failedRecordId: local[1] ?? '' },
      ],
    ];
    const asked: number[] = [];
    const read: ReprocessPages = (_runId, _mapId, after) => {
      asked.push(after);
      const i = after === 0 ? 0 : 1;
      return Promise.resolve({ records: pages[i] ?? [], next: i === 0 ? 2 : null });
    };
    const missing: string[] = [];
    const copies = reprocessCopies({
      runId: 'r',
      mapId: 1,
      pages: read,
      local: store,
      signal: new AbortController().signal,
      batchSize: 2,
      onMissing: (r) => missing.push(r.errorId),
    });
    const batches = [];
    for await (const b of copies.batches) batches.push(b);
    expect(batches).toEqual([[{ n: 1 }, { n: 2 }], [{ n: 3 }]]);
    expect(asked).toEqual([0, 2]);
    expect(missing).toEqual(['e5']);
    expect(copies.missing).toBe(1);
    // The local copies used are reprocessed: they cannot be again.
    expect(local.map((id) => store.get(id)?.canReprocess)).toEqual([false, false]);
  });
});
