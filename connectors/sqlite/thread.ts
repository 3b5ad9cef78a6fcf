import { createRequire } from 'node:module';
import { WorkerThread, WorkerThreadError } from '../../src/connectors/sdk.js';
import { sqliteExecutor, type ExecJob, type ExecResult } from './executor.js';
import { sqliteReader, type ReadBatch, type ReadBind, type ReadRequest } from './reader.js';

/**
 * The writer thread of a SQLite session: a worker with its own connection to the database that
 * runs write jobs (executor.ts) while the session's thread does the rest of a copy. better-sqlite3
 * is synchronous: on the session's thread, SQLite's insert work would stop every other step
 * (reading and parsing the next source batch, formulas) for as long as it runs.
 *
 * The thread is the SDK's WorkerThread: it runs its handler from the handler's source text, with
 * the better-sqlite3 the plugin itself resolves: the same from the source tree, the compiled tree
 * and an installed package. Data crosses packed in transferable buffers (see executor.ts), not as
 * structured-cloned records. The reader thread runs a session's bulk queries the same way (reader.ts).
 */
const OPEN = (factory: string): string => `(require, data) => {
  const Database = require(data.lib);
  const db = new Database(data.file, { readonly: data.readOnly, fileMustExist: true, timeout: data.busyTimeoutMs });
  for (const p of data.pragmas) db.pragma(p);
  return (${factory})(db, data.extra, Database);
}`;

export interface SqliteThreadOptions {
  file: string;
  busyTimeoutMs: number;
  /** PRAGMA statements the connection runs first, as the session's own connections do. */
  pragmas: string[];
  /** Open the thread's connection read-only (the reader thread). */
  readOnly?: boolean;
}

/**
 * A session thread. Its calls fail with the SDK's WorkerThreadError: with the SQLite code when
 * there is one (errors.ts maps it), failure `closed` when the session closed the thread under a
 * call (a disconnect). A thread that could not open the database is not alive: the session starts
 * another next time.
 */
class SqliteThread<Req, Res> {
  private readonly thread: WorkerThread<Req, Res>;

  constructor(
    private readonly role: string,
    factory: string,
    opts: SqliteThreadOptions & { extra?: unknown },
  ) {
    const lib = createRequire(import.meta.url).resolve('better-sqlite3');
    const data = {
      lib,
      file: opts.file,
      readOnly: opts.readOnly === true,
      busyTimeoutMs: opts.busyTimeoutMs,
      pragmas: opts.pragmas,
      extra: opts.extra,
    };
    this.thread = new WorkerThread<Req, Res>({ name: `SQLite ${role}`, factory: OPEN(factory), data });
  }

  /** False once the thread has failed or stopped: the session starts another. */
  get alive(): boolean {
    return this.thread.alive;
  }

  /** Posts a request at once, not after the caller's synchronous work: the thread starts on a batch's first part while the caller checks the next. */
  call(body: Req, transfer?: ArrayBuffer[]): Promise<Res> {
    return this.thread.call(body, transfer);
  }

  async close(): Promise<void> {
    await this.thread.close(
      new WorkerThreadError(`the session was disconnected and its SQLite ${this.role} thread closed.`, 'closed'),
    );
  }
}

/** The writer thread: runs write jobs in its own read-write connection. */
export class WriteThread extends SqliteThread<ExecJob, ExecResult> {
  constructor(opts: SqliteThreadOptions & { recordCodes: readonly string[] }) {
    const factory = `(db, extra) => {
      const run = (${sqliteExecutor.toString()})(db, extra.recordCodes, true);
      return (job) => {
        const reply = run(job);
        return { reply, transfer: reply.rowids ? [reply.status.buffer, reply.rowids.buffer] : [reply.status.buffer] };
      };
    }`;
    super('writer', factory, { ...opts, extra: { recordCodes: opts.recordCodes } });
  }

  run(job: ExecJob): Promise<ExecResult> {
    return this.call(job, [
      job.tags.buffer as ArrayBuffer,
      job.nums.buffer as ArrayBuffer,
      job.ends.buffer as ArrayBuffer,
    ]);
  }
}

/**
 * The reader thread: runs a session's bulk queries, each on a read-only connection of its own (as
 * a query on the session's thread does), and answers them batch by batch, reading the next batch
 * while the session works on the one it has.
 */
export class ReadThread extends SqliteThread<ReadRequest, ReadBatch | { closed: true }> {
  constructor(opts: SqliteThreadOptions) {
    const factory = `(db, extra, Database) => (${sqliteReader.toString()})(Database, extra)`;
    super('reader', factory, {
      ...opts,
      readOnly: true,
      extra: { file: opts.file, busyTimeoutMs: opts.busyTimeoutMs, pragmas: opts.pragmas },
    });
  }

  /** `bytes`: the batches carry their text as UTF-8 bytes (ReadBatch.bytes). */
  open(sql: string, params: ReadBind[], batch: number, cols: number, bytes = false): Promise<ReadBatch> {
    return this.call({ op: 'open', sql, params, batch, cols, ...(bytes ? { bytes } : {}) }) as Promise<ReadBatch>;
  }

  next(cursor: number): Promise<ReadBatch> {
    return this.call({ op: 'next', cursor }) as Promise<ReadBatch>;
  }

  async release(cursor: number): Promise<void> {
    if (this.alive) await this.call({ op: 'close', cursor });
  }
}
