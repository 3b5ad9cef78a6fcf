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
});
