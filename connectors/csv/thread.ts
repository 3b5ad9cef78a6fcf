import type { FileHandle } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { ConnectorError } from '../../src/connectors/sdk.js';
import { cellReaders } from './cells.js';
import { CsvParser } from './parser.js';
import { csvScanner, type PackedScan, type ScanBatch, type ScanPacked, type ScanSettings } from './scanner.js';

/**
 * The scan thread of one query: a worker that runs the scanner (scanner.ts) and answers
 * the query's requests with packed batches (ScanBatch, or ScanPacked in packed mode), reading the next batch while the query works on the
 * one it has. It lives as long as its query: the query closes it when it ends, stops early or
 * fails, and the session closes any that are still open when it disconnects. The file is opened
 * on the Agent's thread (its errors are the in-thread read's) and closed after the thread stops.
 *
 * The thread runs its handler from the handler's source text (as the SQLite connector's threads
 * do): the same from the source tree, the compiled tree and a bundled package, where no module
 * file of the scanner exists for a worker to load. Idle, it does not keep the process alive.
 */
const SOURCE = (factory: string): string => `
const __name = (f) => f;
const { parentPort, workerData } = require('node:worker_threads');
const failure = (err) => ({ code: err && typeof err.code === 'string' ? err.code : undefined, message: err instanceof Error ? err.message : String(err) });
let next;
let broken;
try {
  next = (${factory})(require, workerData);
} catch (err) {
  broken = failure(err);
}
parentPort.on('message', () => {
  if (broken) {
    parentPort.postMessage({ error: broken });
    return;
  }
  try {
    const out = next();
    parentPort.postMessage({ batch: out.reply }, out.transfer);
  } catch (err) {
    broken = failure(err);
    parentPort.postMessage({ error: broken });
  }
});
`;

/** The scanner with the parser and cell readers it is given, all from their source text. */
const SCANNER = `(require, settings) => (${csvScanner.toString()})((${CsvParser.toString()}), (${cellReaders.toString()})(), { readSync: require('node:fs').readSync, StringDecoder: require('node:string_decoder').StringDecoder }, settings)`;

const YOUNG_GENERATION_MB = 16;

type Reply<T> = { batch: T } | { error: { code?: string; message: string } };
type Pending<T> = { resolve: (b: T) => void; reject: (e: Error) => void };

/** What a session keeps of its queries' threads: enough to stop them. */
export interface OpenScan {
  close(reason?: Error): Promise<void>;
}

/**
 * A worker that answers each request with one batch. `factory` is the source text of
 * `(require, data) => handler`, where `handler()` returns `{ reply, transfer }`. An error the
 * handler throws fails that call and every later one, with the error's `code` (an errno) kept.
 */
export class ScanThread<T = ScanBatch> implements OpenScan {
  readonly #worker: Worker;
  #pending: Pending<T> | undefined;
  #dead: Error | undefined;

  readonly #release: () => Promise<void>;
  #closed: Promise<void> | undefined;

  /** `release` runs once the thread has stopped (it closes what the thread used). */
  constructor(factory: string, data: unknown, release: () => Promise<void> = async () => undefined) {
    this.#release = release;
    // No inherited Node options: the handler needs no loader (under tsx, loading its hooks in the
    // thread would cost the Agent's thread tens of milliseconds). A young generation of its own
    // size: the --max-semi-space-size=128 the Agent runs with applies to every isolate, and the
    // thread's short-lived garbage needs far less.
    this.#worker = new Worker(SOURCE(factory), { eval: true, workerData: data, execArgv: [], resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
    this.#worker.on('message', (m: Reply<T>) => {
      const p = this.#settle();
      if (!p) return;
      if ('batch' in m) p.resolve(m.batch);
      else p.reject(Object.assign(new Error(m.error.message), m.error.code === undefined ? {} : { code: m.error.code }));
    });
    this.#worker.on('error', (err) => this.#die(new ConnectorError('Datastore', `The CSV scan thread failed: ${err.message}`)));
    this.#worker.on('exit', (code) => this.#die(new ConnectorError('Datastore', `The CSV scan thread stopped (exit code ${code}).`)));
    // Idle, the thread must not keep the process alive (after the listeners, which would ref it).
    this.#worker.unref();
  }

  /** The next batch; rejects at once when `signal` fires (the query then closes the thread). */
  next(signal?: AbortSignal): Promise<T> {
    if (this.#dead) return Promise.reject(this.#dead);
    if (this.#pending) return Promise.reject(new Error('The CSV scan thread is already answering a request.'));
    if (signal?.aborted) return Promise.reject(new ConnectorError('Aborted', 'The read was cancelled.'));
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => this.#die(new ConnectorError('Aborted', 'The read was cancelled.'));
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = (): void => signal?.removeEventListener('abort', onAbort);
      this.#pending = {
        resolve: (b) => (done(), resolve(b)),
        reject: (e) => (done(), reject(e)),
      };
      // Held while a request is out: the process must not end before its answer.
      this.#worker.ref();
      this.#worker.postMessage(0);
    });
  }

  /** Stops the thread; a request still out fails with `reason`. Resolves once the thread has stopped. */
  close(reason: Error = new ConnectorError('Aborted', 'The read was stopped.')): Promise<void> {
    this.#die(reason);
    // Held until it has stopped: its exit must not be lost to a process that ends first.
    this.#closed ??= (async () => {
      this.#worker.ref();
      try {
        await this.#worker.terminate();
      } finally {
        await this.#release();
      }
    })();
    return this.#closed;
  }

  #settle(): Pending<T> | undefined {
    const p = this.#pending;
    this.#pending = undefined;
    if (this.#closed === undefined) this.#worker.unref();
    return p;
  }

  #die(err: Error): void {
    this.#dead ??= err;
    this.#settle()?.reject(this.#dead);
  }
}

/** Starts the scan of an open file; closing the thread closes the file, after the thread has stopped. */
export function startScan(file: FileHandle, settings: Omit<ScanSettings, 'fd' | 'packed'>): ScanThread {
  return new ScanThread(SCANNER, { ...settings, fd: file.fd }, () => file.close());
}

/** {@link startScan} in packed mode: the thread answers packed batches of `settings.packed`'s fields. */
export function startPackedScan(file: FileHandle, settings: Omit<ScanSettings, 'fd'> & { packed: PackedScan }): ScanThread<ScanPacked> {
  return new ScanThread<ScanPacked>(SCANNER, { ...settings, fd: file.fd }, () => file.close());
}
