import fs from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FerryError } from '../../src/errors/ferry-error.js';

/** Largest log archive an Agent may upload. */
export const MAX_LOG_ARCHIVE_BYTES = 512 * 1024 * 1024;

const GUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Local file header, empty archive, spanned archive. */
const ZIP_MAGIC = [
  Buffer.from('PK\x03\x04', 'latin1'),
  Buffer.from('PK\x05\x06', 'latin1'),
  Buffer.from('PK\x07\x08', 'latin1'),
];

/**
 * Log archives on disk, `<dataDir>/log-archives/<logId>.zip`, between the Agent's upload and the
 * one download. Files are written under a temporary name and renamed when complete, so a reader
 * never sees half a zip.
 */
export class LogArchiveFiles {
  readonly dir: string;

  constructor(dataDir: string) {
    this.dir = path.join(dataDir, 'log-archives');
  }

  pathOf(logId: string): string {
    if (!GUID_RE.test(logId)) throw new FerryError('API_VALIDATION', 'A logId is a GUID.');
    return path.join(this.dir, `${logId.toLowerCase()}.zip`);
  }

  /**
   * Streams `source` into the archive of `logId`; resolves to its size. Refuses a body larger
   * than `maxBytes` (413) or one that is not a zip (400), leaving no file behind.
   */
  async write(logId: string, source: Readable, maxBytes: number = MAX_LOG_ARCHIVE_BYTES): Promise<number> {
    const target = this.pathOf(logId);
    await fs.promises.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const part = `${target}.${process.pid}.part`;
    let size = 0;
    let head = Buffer.alloc(0);
    const guard = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > maxBytes) {
          done(new FerryError('API_PAYLOAD_TOO_LARGE', `A log archive may have at most ${maxBytes} bytes.`));
          return;
        }
        if (head.length < 4) {
          head = Buffer.concat([head, chunk.subarray(0, 4 - head.length)]);
          if (head.length === 4 && !ZIP_MAGIC.some((m) => m.equals(head))) {
            done(new FerryError('API_UNSUPPORTED_MEDIA_TYPE', 'The log archive is not a zip file.'));
            return;
          }
        }
        done(null, chunk);
      },
    });
    try {
      await pipeline(source, guard, fs.createWriteStream(part, { mode: 0o600 }));
      if (head.length < 4) throw new FerryError('API_UNSUPPORTED_MEDIA_TYPE', 'The log archive is not a zip file.');
      await fs.promises.rename(part, target);
      return size;
    } catch (err) {
      await fs.promises.rm(part, { force: true });
      throw err;
    }
  }

  open(logId: string): fs.ReadStream {
    return fs.createReadStream(this.pathOf(logId));
  }

  async remove(logId: string): Promise<void> {
    await fs.promises.rm(this.pathOf(logId), { force: true });
  }
}
