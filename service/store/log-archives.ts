import fs from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FerryError } from '../../src/errors/ferry-error.js';

/** Largest log archive an Agent may upload. */
export const MAX_LOG_ARCHIVE_BYTES = 512 * 1024 * 1024;

/**
 * Where Agent log archives wait between the Agent's upload and the one download: files in the data
 * folder on SQLite ({@link LogArchiveFiles}), chunks in the database on PostgreSQL, where every
 * replica reads them (DatabaseLogArchives, store/log-archive-chunks.ts).
 */
export interface LogArchives {
  /**
   * Streams `source` into the archive of `logId`; resolves to its size. Refuses a body larger
   * than `maxBytes` (413) or one that is not a zip (415), leaving nothing behind. A reader sees
   * the archive whole or not at all.
   */
  write(logId: string, source: Readable, maxBytes?: number): Promise<number>;
  /** The archive opened for reading; undefined when this store does not have it (nothing opened). */
  open(logId: string): Promise<Readable | undefined>;
  /** Deletes the archive, if there is one. */
  remove(logId: string): Promise<void>;
}

const GUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Local file header, empty archive, spanned archive. */
const ZIP_MAGIC = [
  Buffer.from('PK\x03\x04', 'latin1'),
  Buffer.from('PK\x05\x06', 'latin1'),
  Buffer.from('PK\x07\x08', 'latin1'),
];

/** The logId as archives are keyed (lower case); throws unless it is a GUID. */
export function archiveKey(logId: string): string {
  if (!GUID_RE.test(logId)) throw new FerryError('API_VALIDATION', 'A logId is a GUID.');
  return logId.toLowerCase();
}

/** Checks an upload piece by piece as it streams: its size against the limit and its first bytes against the zip magic. */
export class ArchiveCheck {
  #size = 0;
  #head = Buffer.alloc(0);

  constructor(private readonly maxBytes: number) {}

  get size(): number {
    return this.#size;
  }

  /** Counts the next piece; the error to stop the upload with, if any. */
  take(piece: Buffer): FerryError | undefined {
    this.#size += piece.length;
    if (this.#size > this.maxBytes)
      return new FerryError('API_PAYLOAD_TOO_LARGE', `A log archive may have at most ${this.maxBytes} bytes.`);
    if (this.#head.length < 4) {
      this.#head = Buffer.concat([this.#head, piece.subarray(0, 4 - this.#head.length)]);
      if (this.#head.length === 4 && !ZIP_MAGIC.some((m) => m.equals(this.#head))) return notZip();
    }
    return undefined;
  }

  /** After the last piece: the error if the upload was too short to be a zip. */
  end(): FerryError | undefined {
    return this.#head.length < 4 ? notZip() : undefined;
  }
}

const notZip = (): FerryError => new FerryError('API_UNSUPPORTED_MEDIA_TYPE', 'The log archive is not a zip file.');

/**
 * Log archives on disk, `<dataDir>/log-archives/<logId>.zip`, between the Agent's upload and the
 * one download. Files are written under a temporary name and renamed when complete, so a reader
 * never sees half a zip. Each Service process has its own: the store on SQLite.
 */
export class LogArchiveFiles implements LogArchives {
  readonly dir: string;

  constructor(dataDir: string) {
    this.dir = path.join(dataDir, 'log-archives');
  }

  pathOf(logId: string): string {
    return path.join(this.dir, `${archiveKey(logId)}.zip`);
  }

  async write(logId: string, source: Readable, maxBytes: number = MAX_LOG_ARCHIVE_BYTES): Promise<number> {
    const target = this.pathOf(logId);
    await fs.promises.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const part = `${target}.${process.pid}.part`;
    const check = new ArchiveCheck(maxBytes);
    const guard = new Transform({
      transform(chunk: Buffer, _enc, done) {
        const refused = check.take(chunk);
        if (refused) done(refused);
        else done(null, chunk);
      },
    });
    try {
      await pipeline(source, guard, fs.createWriteStream(part, { mode: 0o600 }));
      const refused = check.end();
      if (refused) throw refused;
      await fs.promises.rename(part, target);
      return check.size;
    } catch (err) {
      await fs.promises.rm(part, { force: true });
      throw err;
    }
  }

  async open(logId: string): Promise<Readable | undefined> {
    let handle: fs.promises.FileHandle;
    try {
      handle = await fs.promises.open(this.pathOf(logId), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    // The stream closes the handle when it ends or is destroyed.
    return handle.createReadStream();
  }

  async remove(logId: string): Promise<void> {
    await fs.promises.rm(this.pathOf(logId), { force: true });
  }
}
