import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { sqliteExecutor, type ExecJob, type ExecResult } from './executor.js';

/**
 * A writer thread: a worker with its own connection to the database that runs bulk write jobs
 * (executor.ts) while the session's thread reads and prepares the next batch. SQLite's insert
 * work and better-sqlite3's binding are synchronous; on the session's thread they would stop
 * every other step of the copy for as long as they run.
 *
 * The worker runs the executor from its source text with the better-sqlite3 the plugin itself
 * resolves, so it works the same from the source tree, the compiled tree and an installed package.
 */
const SOURCE = `
const __name = (f) => f;
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.lib);
const executor = (${sqliteExecutor.toString()});
const failure = (err) => ({ code: err && typeof err.code === 'string' ? err.code : undefined, message: err instanceof Error ? err.message : String(err) });
let run;
try {
  const db = new Database(workerData.file, { fileMustExist: true, timeout: workerData.busyTimeoutMs });
  for (const p of workerData.pragmas) db.pragma(p);
  run = executor(db, workerData.recordCodes);
  parentPort.postMessage({ ready: true });
} catch (err) {
  parentPort.postMessage({ fatal: failure(err) });
}
parentPort.on('message', (msg) => {
  try {
    const result = run(msg.job);
    const transfer = [result.status.buffer];
    if (result.rowids) transfer.push(result.rowids.buffer);
    parentPort.postMessage({ id: msg.id, result }, transfer);
  } catch (err) {
    parentPort.postMessage({ id: msg.id, error: failure(err) });
  }
});
`;

export interface WriteThreadOptions {
  file: string;
  busyTimeoutMs: number;
  /** PRAGMA statements the connection runs first, as the session's own connection does. */
  pragmas: string[];
  recordCodes: readonly string[];
}

/** An error of the writer thread, with the SQLite code when it has one (errors.ts maps it). */
export class WriteThreadError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

type Reply = { ready: true } | { fatal: { code?: string; message: string } } | { id: number; result: ExecResult } | { id: number; error: { code?: string; message: string } };

export class WriteThread {
  private readonly worker: Worker;
  private readonly ready: Promise<void>;
  private readonly pending = new Map<number, { resolve: (r: ExecResult) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private dead: Error | undefined;
  private started = false;

  constructor(opts: WriteThreadOptions) {
    const lib = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(SOURCE, { eval: true, workerData: { lib, file: opts.file, busyTimeoutMs: opts.busyTimeoutMs, pragmas: opts.pragmas, recordCodes: opts.recordCodes } });
    // Idle, the thread must not keep the process alive; while a job runs it must (see run()).
    this.worker.unref();
    this.ready = new Promise<void>((resolve, reject) => {
      const onReply = (m: Reply): void => {
        if ('ready' in m) {
          this.started = true;
          resolve();
        }
        else if ('fatal' in m) {
          // The thread could not open the database: it is done, the session starts another next time.
          const err = new WriteThreadError(m.fatal.message, m.fatal.code);
          this.dead ??= err;
          reject(err);
          void this.worker.terminate();
        }
        else {
          const p = this.pending.get(m.id);
          if (!p) return;
          this.pending.delete(m.id);
          if (this.pending.size === 0) this.worker.unref();
          if ('result' in m) p.resolve(m.result);
          else p.reject(new WriteThreadError(m.error.message, m.error.code));
        }
      };
      this.worker.on('message', onReply);
      const die = (err: Error): void => {
        this.dead ??= err;
        reject(err);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
      };
      this.worker.on('error', (err) => die(new WriteThreadError(`The SQLite writer thread failed: ${err.message}`)));
      this.worker.on('exit', (code) => die(new WriteThreadError(`The SQLite writer thread stopped (exit code ${code}).`)));
    });
    // A start failure is reported by the first run, not as an unhandled rejection.
    this.ready.catch(() => undefined);
  }

  /** False once the thread has failed or stopped: the session starts another. */
  get alive(): boolean {
    return this.dead === undefined;
  }

  /**
   * Runs a job in the thread. Once the thread has started the job is posted at once, not after
   * the caller's synchronous work: the thread starts on a batch's first part while the caller
   * still checks the next ones.
   */
  run(job: ExecJob): Promise<ExecResult> {
    if (!this.started) return this.ready.then(() => this.run(job));
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise<ExecResult>((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, job }, [job.tags.buffer as ArrayBuffer, job.nums.buffer as ArrayBuffer, job.ends.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    this.dead ??= new WriteThreadError('The SQLite writer thread was closed.');
    await this.worker.terminate();
  }
}
