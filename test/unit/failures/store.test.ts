import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FAILED_RECORDS_FILE, FailedRecordStore } from '../../../src/failures/store.js';

const modeOf = (p: string) => fs.statSync(p).mode & 0o777;

describe('the failed-record store', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-failures-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('keeps the customer records it holds private: folder 0700, database, -wal and -shm 0600', async () => {
    const folder = path.join(dir, 'data');
    const store = new FailedRecordStore(folder);
    try {
      const id = await store.capture({
        executionId: 'ex-1',
        mapName: 'Accounts',
        entity: 'Account',
        blockId: 'b1',
        blockName: 'Write',
        error: { code: 'RUN_WRITE_FAILED', kind: 'config', message: 'refused' },
        source: { Name: 'Acme', Email: 'buyer@acme.example' },
      });
      expect(store.get(id)?.source).toEqual({ Name: 'Acme', Email: 'buyer@acme.example' });
      expect(modeOf(folder)).toBe(0o700);
      for (const suffix of ['', '-wal', '-shm']) {
        const file = path.join(folder, FAILED_RECORDS_FILE + suffix);
        expect({ file, mode: modeOf(file) }).toEqual({ file, mode: 0o600 });
      }
    } finally {
      store.close();
    }
  });

  it('commits the captures of one turn together: each resolves with its own id once stored, in order, and reads see captures not yet committed', async () => {
    const store = new FailedRecordStore(path.join(dir, 'data'));
    try {
      const capture = (n: number) =>
        store.capture({
          executionId: 'ex-2',
          mapId: 7,
          mapName: 'Accounts',
          entity: 'Account',
          blockId: 'b1',
          blockName: 'Write',
          error: { code: 'RUN_WRITE_FAILED', kind: 'config', message: `refused ${n}` },
          source: { n },
        });
      const ids = await Promise.all(Array.from({ length: 1000 }, (_, n) => capture(n)));
      expect(new Set(ids).size).toBe(1000);
      const listed = store.list('ex-2');
      expect(listed.map((r) => r.id)).toEqual(ids);
      expect(listed.map((r) => r.source['n'])).toEqual(Array.from({ length: 1000 }, (_, n) => n));
      expect(listed[999]).toMatchObject({ mapId: 7, errorMessage: 'refused 999', canReprocess: true, marked: false });

      // Not awaited yet: a read commits it first.
      const pending = capture(1000);
      expect(store.list('ex-2')).toHaveLength(1001);
      expect(store.get(await pending)?.source).toEqual({ n: 1000 });
    } finally {
      store.close();
    }
  });
});
