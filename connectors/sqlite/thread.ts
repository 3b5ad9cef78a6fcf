import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { sqliteExecutor, type ExecJob, type ExecResult } from './executor.js';
import { sqliteReader, type ReadBatch, type ReadBind, type ReadRequest } from './reader.js';

/**
 * The writer thread of a SQLite session: a worker with its own connection to the database that
 * runs write jobs (executor.ts) while the session's thread does the rest of a copy. better-sqlite3
 * is synchronous: on the session's thread, SQLite's insert work would stop every other step
 * (reading and parsing the next source batch, formulas) for as long as it runs.
 *
 * The thread runs its handler from the handler's source text, with the better-sqlite3 the plugin
 * itself resolves: the same from the source tree, the compiled tree and an installed package.
 * Data crosses packed in transferable buffers (see executor.ts), not as structured-cloned records.
 * The reader thread runs a session's bulk queries the same way (reader.ts).
 */
const SOURCE = (factory: string): string => `
const __name = (f) => f;
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.lib);
const failure = (err) => ({ code: err && typeof err.code === 'string' ? err.code : undefined, message: err instanceof Error ? err.message : String(err) });
let handle;
try {
  const db = new Database(workerData.file, { readonly: workerData.readOnly, fileMustExist: true, timeout: workerData.busyTimeoutMs });
  for (const p of workerData.pragmas) db.pragma(p);
  handle = (${factory})(db, workerData.extra, Database);
  parentPort.postMessage({ ready: true });
} catch (err) {
  parentPort.postMessage({ fatal: failure(err) });
}
parentPort.on('message', (msg) => {
  try {
    const out = handle(msg.body);
    parentPort.postMessage({ id: msg.id, result: out.reply }, out.transfer);
  } catch (err) {
    parentPort.postMessage({ id: msg.id, error: failure(err) });
  }
});
`;

export interface SqliteThreadOptions {
  file: string;
  busyTimeoutMs: number;
  /** PRAGMA statements the connection runs first, as the session's own connections do. */
  pragmas: string[];
  /** Open the thread's connection read-only (the reader thread). */
  readOnly?: boolean;
}

/**
 * An error of a session thread, with the SQLite code when it has one (errors.ts maps it);
 * `closed` when the session closed the thread under a call (a disconnect).
 */
export class SqliteThreadError extends Error {
  constructor(
    message: string,
    readonly code?: string,
    readonly closed = false,
  ) {
    super(message);
  }
}

type Reply<T> = { ready: true } | { fatal: { code?: string; message: string } } | { id: number; result: T } | { id: number; error: { code?: string; message: string } };

class SqliteThread<Req, Res> {
  private readonly worker: Worker;
  private readonly ready: Promise<void>;
  private readonly pending = new Map<number, { resolve: (r: Res) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private dead: Error | undefined;
  private started = false;
  /** Calls not answered yet: while there are any the thread keeps the process alive, idle it does not. */
  private inflight = 0;
  private closing = false;

  constructor(
    private readonly role: string,
    factory: string,
    opts: SqliteThreadOptions & { extra?: unknown },
  ) {
    const lib = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(SOURCE(factory), { eval: true, workerData: { lib, file: opts.file, readOnly: opts.readOnly === true, busyTimeoutMs: opts.busyTimeoutMs, pragmas: opts.pragmas, extra: opts.extra } });
    this.ready = new Promise<void>((resolve, reject) => {
      this.worker.on('message', (m: Reply<Res>) => {
        if ('ready' in m) {
          this.started = true;
          resolve();
        } else if ('fatal' in m) {
          // The thread could not open the database: it is done, the session starts another next time.
          const err = new SqliteThreadError(m.fatal.message, m.fatal.code);
          this.dead ??= err;
          reject(err);
          void this.worker.terminate();
        } else {
          const p = this.pending.get(m.id);
          if (!p) return;
          this.pending.delete(m.id);
          if ('result' in m) p.resolve(m.result);
          else p.reject(new SqliteThreadError(m.error.message, m.error.code));
        }
      });
      const die = (err: Error): void => {
        this.dead ??= err;
        reject(err);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
      };
      this.worker.on('error', (err) => die(new SqliteThreadError(`The SQLite ${this.role} thread failed: ${err.message}`)));
      this.worker.on('exit', (code) => die(new SqliteThreadError(`The SQLite ${this.role} thread stopped (exit code ${code}).`)));
    });
    // A start failure is reported by the first call, not as an unhandled rejection.
    this.ready.catch(() => undefined);
    // Idle, the thread must not keep the process alive (after the listeners, which would ref it).
    this.worker.unref();
  }

  /** False once the thread has failed or stopped: the session starts another. */
  get alive(): boolean {
    return this.dead === undefined;
  }

  /**
   * Posts a request. Once the thread has started it is posted at once, not after the caller's
   * synchronous work: the thread starts on a batch's first part while the caller checks the next.
   */
  call(body: Req, transfer: ArrayBuffer[] = []): Promise<Res> {
    if (this.inflight++ === 0) this.worker.ref();
    const out = this.started ? this.post(body, transfer) : this.ready.then(() => this.post(body, transfer));
    const settle = (): void => {
      if (--this.inflight === 0 && !this.closing) this.worker.unref();
    };
    out.then(settle, settle);
    return out;
  }

  private post(body: Req, transfer: ArrayBuffer[]): Promise<Res> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise<Res>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, body }, transfer);
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    this.dead ??= new SqliteThreadError(`the session was disconnected and its SQLite ${this.role} thread closed.`, undefined, true);
    // Held until it has stopped: a reply arriving meanwhile must not let the process end first.
    this.worker.ref();
    await this.worker.terminate();
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
    return this.call(job, [job.tags.buffer as ArrayBuffer, job.nums.buffer as ArrayBuffer, job.ends.buffer as ArrayBuffer]);
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
    super('reader', factory, { ...opts, readOnly: true, extra: { file: opts.file, busyTimeoutMs: opts.busyTimeoutMs, pragmas: opts.pragmas } });
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
