/**
 * Agent log archives in the database (service/store/log-archive-chunks.ts) on a real PostgreSQL
 * and a real SQLite file, beside the files the Service keeps on SQLite (store/log-archives.ts):
 * the same contract for both — a multi-chunk archive back byte for byte, streamed a chunk at a time
 * on both sides, refusals and cut-off uploads leaving nothing behind, a second upload of a logId
 * refused without harming the first, removal.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseLogArchives, LOG_ARCHIVE_CHUNK_BYTES } from '../../../../service/store/log-archive-chunks.js';
import { LogArchiveFiles, type LogArchives } from '../../../../service/store/log-archives.js';
import { openStore, type Store } from '../../../../service/store/store.js';
import { createTestDatabase, STORE_TARGETS } from '../../../helpers/stores.js';

const MiB = 1024 * 1024;

/** `bytes` of zip-like data: the local file header's magic, then random bytes. */
function zipLike(bytes: number): Buffer {
  const body = randomBytes(bytes);
  Buffer.from('PK\x03\x04', 'latin1').copy(body);
  return body;
}

/** `body` as an upload arrives: pieces of `piece` bytes (odd, so they straddle chunk edges). */
const upload = (body: Buffer, piece = 65_537): Readable =>
  Readable.from(
    (function* () {
      for (let at = 0; at < body.length; at += piece) yield body.subarray(at, at + piece);
    })(),
  );

async function readAll(stream: Readable): Promise<Buffer[]> {
  const pieces: Buffer[] = [];
  for await (const c of stream as AsyncIterable<Buffer>) pieces.push(c);
  return pieces;
}

interface Subject {
  name: string;
  archives: LogArchives;
  /** How many archives (chunk rows, files) are stored, whole or in part. */
  stored(): Promise<number>;
}

const SUBJECTS: Array<{
  name: string;
  make: (dir: string) => Promise<{ subject: Subject; close: () => Promise<void> }>;
}> = [
  {
    name: 'files',
    make: async (dir) => {
      const files = new LogArchiveFiles(dir);
      const stored = async () => (fs.existsSync(files.dir) ? fs.readdirSync(files.dir).length : 0);
      return { subject: { name: 'files', archives: files, stored }, close: async () => undefined };
    },
  },
  ...STORE_TARGETS.map((target) => ({
    name: `chunks on ${target.name}`,
    make: async (dir: string) => {
      const database = target.name === 'postgres' ? await createTestDatabase() : undefined;
      const store: Store = await openStore({ databaseUrl: database?.url, dataDir: dir, preinstalledConnectors: [] });
      const stored = async () =>
        Number(
          (
            await store.db
              .selectFrom('logArchiveChunks')
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      return {
        subject: { name: target.name, archives: new DatabaseLogArchives(store), stored },
        close: async () => {
          await store.close();
          await database?.drop();
        },
      };
    },
  })),
];

describe.each(SUBJECTS)('log archives: $name', ({ make }) => {
  let dir: string;
  let subject: Subject;
  let close: () => Promise<void>;
  const id = (): string => randomUUID();

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-archive-store-'));
    ({ subject, close } = await make(dir));
  });
  afterAll(async () => {
    await close?.();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stores a 3.5 MiB archive and gives it back byte for byte, then removes it', async () => {
    const logId = id();
    const body = zipLike(3.5 * MiB);
    expect(await subject.archives.write(logId.toUpperCase(), upload(body))).toBe(body.length);
    const stream = await subject.archives.open(logId);
    expect(stream).toBeDefined();
    const pieces = await readAll(stream as Readable);
    expect(Buffer.concat(pieces).equals(body)).toBe(true);
    // Streamed, never the whole archive at once.
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThanOrEqual(LOG_ARCHIVE_CHUNK_BYTES);
    await subject.archives.remove(logId);
    expect(await subject.archives.open(logId)).toBeUndefined();
    expect(await subject.stored()).toBe(0);
    // Removing what is not there is no error.
    await subject.archives.remove(logId);
  });

  it('refuses an archive over the limit with 413 after chunks were stored, and leaves nothing', async () => {
    const logId = id();
    await expect(subject.archives.write(logId, upload(zipLike(3.5 * MiB)), 2.5 * MiB)).rejects.toMatchObject({
      code: 'API_PAYLOAD_TOO_LARGE',
    });
    expect(await subject.stored()).toBe(0);
    expect(await subject.archives.open(logId)).toBeUndefined();
  });

  it('refuses what is not a zip with 415, however short, and leaves nothing', async () => {
    for (const body of [Buffer.from('hello world, not a zip'), Buffer.from('PK'), Buffer.alloc(0)]) {
      const logId = id();
      await expect(subject.archives.write(logId, Readable.from([body]))).rejects.toMatchObject({
        code: 'API_UNSUPPORTED_MEDIA_TYPE',
      });
      expect(await subject.archives.open(logId)).toBeUndefined();
    }
    // Refused at the first piece: a large body that is not a zip is not stored first.
    const notZip = randomBytes(2 * MiB);
    notZip.write('NOPE', 'latin1');
    await expect(subject.archives.write(id(), upload(notZip))).rejects.toMatchObject({
      code: 'API_UNSUPPORTED_MEDIA_TYPE',
    });
    expect(await subject.stored()).toBe(0);
  });

  it('leaves nothing of an upload cut off after two chunks', async () => {
    const logId = id();
    const body = zipLike(2.5 * MiB);
    const cut = Readable.from(
      (function* () {
        yield body.subarray(0, 2.25 * MiB);
        throw Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
      })(),
    );
    await expect(subject.archives.write(logId, cut)).rejects.toThrow('aborted');
    expect(await subject.stored()).toBe(0);
    expect(await subject.archives.open(logId)).toBeUndefined();
  });

  it('answers undefined for an archive it does not have, and refuses a logId that is not a GUID', async () => {
    expect(await subject.archives.open(id())).toBeUndefined();
    await expect(subject.archives.open('../../etc/passwd')).rejects.toMatchObject({ code: 'API_VALIDATION' });
  });
});

describe.each(STORE_TARGETS)('log archive chunks on $name', (target) => {
  let dir: string;
  let store: Store;
  let drop: (() => Promise<void>) | undefined;
  let archives: DatabaseLogArchives;
  const rows = async (logId: string) =>
    store.db
      .selectFrom('logArchiveChunks')
      .select(['seq', (eb) => eb.fn('length', ['data']).as('bytes')])
      .where('logId', '=', logId)
      .orderBy('seq')
      .execute();

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-archive-chunks-'));
    const database = target.name === 'postgres' ? await createTestDatabase() : undefined;
    drop = database?.drop;
    store = await openStore({ databaseUrl: database?.url, dataDir: dir, preinstalledConnectors: [] });
    archives = new DatabaseLogArchives(store);
  });
  afterAll(async () => {
    await store?.close();
    await drop?.();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stores 1 MiB chunks numbered from 0, the last with the rest', async () => {
    const logId = randomUUID();
    await archives.write(logId, upload(zipLike(3.5 * MiB)));
    expect((await rows(logId)).map((r) => [r.seq, Number(r.bytes)])).toEqual([
      [0, MiB],
      [1, MiB],
      [2, MiB],
      [3, MiB / 2],
    ]);
    await archives.remove(logId);
    expect(await rows(logId)).toEqual([]);
  });

  it('reads the upload only as fast as it stores chunks: never more than about two chunks ahead', async () => {
    const logId = randomUUID();
    const body = zipLike(8 * MiB);
    const piece = 64 * 1024;
    let mostAhead = 0;
    const source = Readable.from(
      (async function* () {
        for (let at = 0; at < body.length; at += piece) {
          const storedBytes = (await rows(logId)).length * MiB;
          mostAhead = Math.max(mostAhead, at - storedBytes);
          yield body.subarray(at, at + piece);
        }
      })(),
      { highWaterMark: 1 },
    );
    expect(await archives.write(logId, source)).toBe(body.length);
    // The chunk being filled, plus the piece in hand and the one or two the source reads ahead.
    expect(mostAhead).toBeLessThanOrEqual(MiB + 4 * piece);
    expect(mostAhead).toBeGreaterThan(0);
    const back = await archives.open(logId);
    expect(Buffer.concat(await readAll(back as Readable)).equals(body)).toBe(true);
    await archives.remove(logId);
  });

  it('refuses a second upload of a stored logId with 409 and keeps the first whole', async () => {
    const logId = randomUUID();
    const first = zipLike(1.5 * MiB);
    await archives.write(logId, upload(first));
    await expect(archives.write(logId, upload(zipLike(2 * MiB)))).rejects.toMatchObject({ code: 'API_CONFLICT' });
    const back = await archives.open(logId);
    expect(Buffer.concat(await readAll(back as Readable)).equals(first)).toBe(true);
    await archives.remove(logId);
  });
});
