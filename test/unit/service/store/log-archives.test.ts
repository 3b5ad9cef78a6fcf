import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LogArchiveFiles } from '../../../../service/store/log-archives.js';

const ID = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
const ZIP_EMPTY = Buffer.from('504b0506000000000000000000000000000000000000', 'hex');

describe('log archive files', () => {
  let dir: string;
  let files: LogArchiveFiles;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-archives-'));
    files = new LogArchiveFiles(dir);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('streams a zip to <dataDir>/log-archives/<logId>.zip with mode 0600', async () => {
    const body = Buffer.concat([ZIP_EMPTY, Buffer.alloc(100_000, 1)]);
    const size = await files.write(ID, Readable.from([body.subarray(0, 2), body.subarray(2)]));
    expect(size).toBe(body.length);
    const file = path.join(dir, 'log-archives', `${ID}.zip`);
    expect(fs.readFileSync(file).equals(body)).toBe(true);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    await files.remove(ID);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('refuses what is not a zip, or too large, and leaves no file behind', async () => {
    await expect(files.write(ID, Readable.from([Buffer.from('hello world')]))).rejects.toMatchObject({
      code: 'API_UNSUPPORTED_MEDIA_TYPE',
    });
    await expect(files.write(ID, Readable.from([Buffer.from('PK')]))).rejects.toMatchObject({
      code: 'API_UNSUPPORTED_MEDIA_TYPE',
    });
    await expect(files.write(ID, Readable.from([ZIP_EMPTY, Buffer.alloc(2000)]), 1000)).rejects.toMatchObject({
      code: 'API_PAYLOAD_TOO_LARGE',
    });
    expect(fs.readdirSync(path.join(dir, 'log-archives'))).toEqual([]);
  });

  it('opens an archive that is there, and answers undefined, opening nothing, for one that is not', async () => {
    expect(await files.open(ID)).toBeUndefined();
    const body = Buffer.concat([ZIP_EMPTY, Buffer.alloc(70_000, 7)]);
    await files.write(ID, Readable.from([body]));
    const stream = await files.open(ID);
    const read: Buffer[] = [];
    for await (const c of stream as AsyncIterable<Buffer>) read.push(c);
    expect(Buffer.concat(read).equals(body)).toBe(true);
  });

  it('accepts only GUID log IDs as file names', () => {
    expect(() => files.pathOf('../../etc/passwd')).toThrow();
    expect(files.pathOf(ID.toUpperCase())).toBe(path.join(dir, 'log-archives', `${ID}.zip`));
  });
});
