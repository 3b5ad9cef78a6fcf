import { Readable } from 'node:stream';
import { FerryError } from '../../src/errors/ferry-error.js';
import { ArchiveCheck, archiveKey, MAX_LOG_ARCHIVE_BYTES, type LogArchives } from './log-archives.js';
import { isUniqueViolation } from './sql.js';
import type { Store } from './store.js';

/** Bytes a chunk row holds (the last of an archive holds the rest). */
export const LOG_ARCHIVE_CHUNK_BYTES = 1024 * 1024;

/**
 * Log archives in the database (`log_archive_chunks`, migration 033), so that every Service
 * replica on one PostgreSQL serves the download of an archive another received (docs/deploy.md;
 * docs/decisions.md, "Log archives in the database on PostgreSQL"):
 *
 *   Agent PUT ─▶ pieces ─▶ 1 MiB buffer ─▶ INSERT (log_id, seq 0, 1, …) awaited, the upload paused
 *   GET ─▶ open: SELECT seq 0 (none: not here) ─▶ stream: push it, SELECT seq 1, push, … until none
 *
 * Neither side holds more than a chunk or two of an archive in memory. An archive is whole before
 * its row turns Ready (AgentLogs.receive writes it first), and a failed upload deletes its chunks.
 * Two uploads of one logId at once cannot mix: the second fails on the first's chunk 0 and stops
 * there, without deleting what it does not own.
 */
export class DatabaseLogArchives implements LogArchives {
  constructor(
    private readonly store: Pick<Store, 'db'>,
    private readonly chunkBytes: number = LOG_ARCHIVE_CHUNK_BYTES,
  ) {}

  async write(logId: string, source: Readable, maxBytes: number = MAX_LOG_ARCHIVE_BYTES): Promise<number> {
    const key = archiveKey(logId);
    const check = new ArchiveCheck(maxBytes);
    let chunk = Buffer.allocUnsafe(this.chunkBytes);
    let filled = 0;
    let seq = 0;
    let another = false;
    const store = async (data: Buffer): Promise<void> => {
      try {
        await this.store.db.insertInto('logArchiveChunks').values({ logId: key, seq, data }).execute();
      } catch (err) {
        if (seq > 0 || !isUniqueViolation(err)) throw err;
        another = true;
        throw new FerryError('API_CONFLICT', `Log archive ${key} is being uploaded already; it takes one upload.`, {
          cause: err,
        });
      }
      seq += 1;
    };
    try {
      // Pulling: the next piece is read only once the chunk before it is stored.
      for await (const piece of source as AsyncIterable<Buffer>) {
        const refused = check.take(piece);
        if (refused) throw refused;
        for (let at = 0; at < piece.length;) {
          const n = piece.copy(chunk, filled, at);
          filled += n;
          at += n;
          if (filled === chunk.length) {
            await store(chunk);
            chunk = Buffer.allocUnsafe(this.chunkBytes);
            filled = 0;
          }
        }
      }
      const refused = check.end();
      if (refused) throw refused;
      if (filled > 0) await store(chunk.subarray(0, filled));
      return check.size;
    } catch (err) {
      // The other upload's chunks are not this one's to delete. Chunks a failed delete leaves go
      // with the log request when housekeeping removes it; its row never turned Ready.
      if (!another) await this.remove(key).catch(() => undefined);
      throw err;
    }
  }

  async open(logId: string): Promise<Readable | undefined> {
    const key = archiveKey(logId);
    const first = await this.#chunk(key, 0);
    if (!first) return undefined;
    return Readable.from(this.#chunks(key, first), { objectMode: false });
  }

  async remove(logId: string): Promise<void> {
    await this.store.db.deleteFrom('logArchiveChunks').where('logId', '=', archiveKey(logId)).execute();
  }

  /** The chunks from `first` on, each read when the stream wants more. */
  async *#chunks(key: string, first: Buffer): AsyncGenerator<Buffer> {
    yield first;
    for (let seq = 1; ; seq++) {
      const data = await this.#chunk(key, seq);
      if (!data) return;
      yield data;
    }
  }

  async #chunk(key: string, seq: number): Promise<Buffer | undefined> {
    const row = await this.store.db
      .selectFrom('logArchiveChunks')
      .select('data')
      .where('logId', '=', key)
      .where('seq', '=', seq)
      .executeTakeFirst();
    return row?.data;
  }
}
