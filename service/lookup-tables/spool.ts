import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { FerryError } from '../../src/errors/ferry-error.js';
import { processAlive } from '../../src/util/process.js';
import { mkdirPrivate } from '../store/data-dir.js';

/**
 * Request bodies of imports on disk: an upload is written to a private file in the data folder
 * before the import's transaction begins, so a slow upload never holds the store's write lock.
 */

/** Characters of text handed on at a time (and bytes read from a spool file at a time). */
export const TEXT_SLICE = 16 * 1024;

const tooLarge = (): FerryError =>
  new FerryError('API_PAYLOAD_TOO_LARGE', 'The request body is larger than the Service accepts (FERRY_BODY_LIMIT).');

/** A request body on disk, read back as UTF-8 text chunks; `remove` deletes it. */
export interface Spool {
  chunks(): AsyncIterable<string>;
  remove(): Promise<void>;
}

/** UTF-8 text of byte chunks; a character split across two chunks is kept whole, a byte-order mark is left to the CSV reader. */
async function* decode(bytes: AsyncIterable<Buffer>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  for await (const chunk of bytes) yield decoder.decode(chunk, { stream: true });
  const rest = decoder.decode();
  if (rest) yield rest;
}

/**
 * The folder of import spools: in the data folder (private, on disk rather than a RAM-backed
 * /tmp), one folder per upload named after the Service process that made it.
 */
export function spoolRoot(dataDir: string): string {
  return path.join(dataDir, 'import-spool');
}

/**
 * Removes the spools of Service processes that no longer run (a Service killed mid-import leaves
 * its body behind); answers how many. Spools of a live process (another Service on the same data
 * folder) are left alone.
 */
export function removeDeadSpools(dataDir: string): number {
  let removed = 0;
  let names: string[];
  try {
    names = fs.readdirSync(spoolRoot(dataDir));
  } catch {
    return 0;
  }
  for (const name of names) {
    const pid = Number(/^(\d+)-/.exec(name)?.[1]);
    if (Number.isSafeInteger(pid) && pid !== process.pid && processAlive(pid)) continue;
    fs.rmSync(path.join(spoolRoot(dataDir), name), { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}

/**
 * Writes a request body to a file only the Service's user can read, in the data folder, refusing
 * more than `limit` bytes with 413 (the rest of the body is read and dropped, so the answer still
 * reaches the client).
 */
export async function spoolUpload(
  upload: Readable,
  limit: number,
  dataDir: string,
  declaredLength?: number,
): Promise<Spool> {
  if (declaredLength !== undefined && declaredLength > limit) {
    upload.resume();
    throw tooLarge();
  }
  mkdirPrivate(spoolRoot(dataDir));
  const dir = await fs.promises.mkdtemp(path.join(spoolRoot(dataDir), `${process.pid}-`));
  const file = path.join(dir, 'body.csv');
  const remove = (): Promise<void> => fs.promises.rm(dir, { recursive: true, force: true });
  try {
    await new Promise<void>((resolve, reject) => {
      const out = fs.createWriteStream(file, { mode: 0o600 });
      let bytes = 0;
      let failed = false;
      const fail = (err: Error): void => {
        if (failed) return;
        failed = true;
        upload.unpipe(out);
        upload.resume();
        out.destroy();
        reject(err);
      };
      upload.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > limit) fail(tooLarge());
      });
      upload.once('error', fail);
      out.once('error', fail);
      out.once('finish', () => (failed ? undefined : resolve()));
      upload.pipe(out);
    });
  } catch (err) {
    await remove();
    throw err;
  }
  return { chunks: () => decode(fs.createReadStream(file, { highWaterMark: TEXT_SLICE })), remove };
}
