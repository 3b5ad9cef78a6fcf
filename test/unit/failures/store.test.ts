import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ConnectorRecord } from '../../../src/connectors/sdk.js';
import { FAILED_RECORDS_FILE, FailedRecordStore } from '../../../src/failures/store.js';
import type { FailedRecordInput } from '../../../src/maps/runtime/run.js';

const modeOf = (p: string) => fs.statSync(p).mode & 0o777;

/** A failed record of execution `executionId`: Map M, entity E, Block b, refused with `message`. */
const failed = (executionId: string, source: ConnectorRecord, message = 'm'): FailedRecordInput => ({
  executionId,
  mapName: 'M',
  entity: 'E',
  blockId: 'b',
  blockName: 'B',
  error: { code: 'RUN_WRITE_FAILED', kind: 'config', message },
  source,
});

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

  it('commits in its inserting thread: a capture that resolved is in the file for any other connection, and a thread that cannot start leaves the inserts to the store', async () => {
    const folder = path.join(dir, 'data');
    const input = (n: number) => failed('ex-3', { n }, `refused ${n}`);
    const other = () => new Database(path.join(folder, FAILED_RECORDS_FILE), { readonly: true });
    const store = new FailedRecordStore(folder);
    try {
      const ids = await Promise.all([0, 1, 2].map((n) => store.capture(input(n))));
      const db = other();
      try {
        expect(db.prepare('SELECT id FROM failed_records ORDER BY rowid').pluck().all()).toEqual(ids);
      } finally {
        db.close();
      }
      // Marked from this thread while the inserting one holds its own connection to the file.
      expect(store.mark(ids.slice(0, 2))).toBe(2);
      expect(store.marked('ex-3').map((r) => r.id)).toEqual(ids.slice(0, 2));
    } finally {
      store.close();
    }
    // Without the thread (as when it cannot start) the same captures commit on the store's own connection.
    const inline = new FailedRecordStore(folder, { thread: false });
    try {
      const id = await inline.capture(input(3));
      expect(inline.get(id)?.errorMessage).toBe('refused 3');
      expect(inline.list('ex-3')).toHaveLength(4);
    } finally {
      inline.close();
    }
  });

  it('a read waits for captures the thread has not committed yet, and a failed group rejects only its own captures', async () => {
    const folder = path.join(dir, 'data');
    const store = new FailedRecordStore(folder);
    try {
      const big = 'x'.repeat(50_000);
      const many = Array.from({ length: 2000 }, (_, n) => store.capture(failed('ex-4', { n }, big)));
      // Posted in a microtask, committed by the thread meanwhile: the count is all of them at once.
      await Promise.resolve();
      expect(store.list('ex-4')).toHaveLength(2000);
      expect(new Set(await Promise.all(many)).size).toBe(2000);
      // A record the table refuses (NOT NULL map_name): its group fails, the store goes on.
      const bad = store.capture({ ...failed('ex-4', {}), mapName: null as unknown as string });
      await expect(bad).rejects.toThrow(/could not be stored/);
      const good = await store.capture(failed('ex-4', {}));
      expect(store.get(good)?.mapName).toBe('M');
      expect(store.list('ex-4')).toHaveLength(2001);
    } finally {
      store.close();
    }
  });

  it('a thread that cannot open the file leaves its groups to the store: none is lost, a read right after the captures sees them', async () => {
    const folder = path.join(dir, 'data');
    const store = new FailedRecordStore(folder, { inserterModule: path.join(dir, 'no-such-sqlite-module.js') });
    try {
      const capture = (n: number) => store.capture(failed('ex-5', { n }, `m ${n}`));
      const first = Array.from({ length: 50 }, (_, n) => capture(n));
      await Promise.resolve();
      // Read at once: the thread has not told (asynchronously) that it failed yet.
      expect(store.list('ex-5')).toHaveLength(50);
      const ids = await Promise.all(first);
      expect(new Set(ids).size).toBe(50);
      const later = await capture(50);
      expect(store.get(later)?.errorMessage).toBe('m 50');
      expect(store.list('ex-5').map((r) => r.source['n'])).toEqual(Array.from({ length: 51 }, (_, n) => n));
    } finally {
      store.close();
    }
  });

  it('closes with every capture settled: those the thread committed resolve, none is rejected for the close', async () => {
    const folder = path.join(dir, 'data');
    const store = new FailedRecordStore(folder);
    const captures = Array.from({ length: 500 }, (_, n) => store.capture(failed('ex-6', { n })));
    await Promise.resolve();
    store.close();
    const settled = await Promise.allSettled(captures);
    expect(settled.filter((r) => r.status === 'rejected')).toEqual([]);
    const reopened = new FailedRecordStore(folder, { thread: false });
    try {
      expect(reopened.list('ex-6')).toHaveLength(500);
    } finally {
      reopened.close();
    }
  });
});
