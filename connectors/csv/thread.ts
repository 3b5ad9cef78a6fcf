import type { FileHandle } from 'node:fs/promises';
import { ConnectorError, WorkerThread, workerFailure } from '../../src/connectors/sdk.js';
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
 * The thread is the SDK's WorkerThread: it runs its handler from the handler's source text, the
 * same from the source tree, the compiled tree and a bundled package, where no module file of the
 * scanner exists for a worker to load. Idle, it does not keep the process alive.
 */

/** The scanner with the parser and cell readers it is given, all from their source text. */
const SCANNER = `(require, settings) => (${csvScanner.toString()})((${CsvParser.toString()}), (${cellReaders.toString()})(), { readSync: require('node:fs').readSync, StringDecoder: require('node:string_decoder').StringDecoder }, settings)`;

const YOUNG_GENERATION_MB = 16;

/** What a session keeps of its queries' threads: enough to stop them. */
export interface OpenScan {
  close(reason?: Error): Promise<void>;
}

/** A thread's failure as the query reports it; an error of the scanner's (an errno) as it was thrown. */
function scanError(err: Error): Error {
  switch (workerFailure(err)) {
    case 'failed':
    case 'exited':
      return new ConnectorError('Datastore', err.message);
    case 'aborted':
      return new ConnectorError('Aborted', 'The read was cancelled.');
    default:
      return err;
  }
}

/**
 * A worker that answers each request with one batch. `factory` is the source text of
 * `(require, data) => handler`, where `handler()` returns `{ reply, transfer }`. An error the
 * handler throws fails that call and every later one, with the error's `code` (an errno) kept.
 */
export class ScanThread<T = ScanBatch> implements OpenScan {
  readonly #thread: WorkerThread<0, T>;
  #busy = false;
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
    this.#thread = new WorkerThread<0, T>({
      name: 'CSV scan',
      factory,
      data,
      execArgv: [],
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
  }

  /** The next batch; rejects at once when `signal` fires (the query then closes the thread). */
  next(signal?: AbortSignal): Promise<T> {
    if (this.#dead) return Promise.reject(this.#dead);
    if (this.#busy) return Promise.reject(new Error('The CSV scan thread is already answering a request.'));
    this.#busy = true;
    return new Promise<T>((resolve, reject) =>
      this.#thread.send(
        0,
        {
          resolve: (b) => {
            this.#busy = false;
            resolve(b);
          },
          reject: (e) => {
            this.#busy = false;
            this.#dead ??= scanError(e);
            reject(this.#dead);
          },
        },
        undefined,
        signal,
      ),
    );
  }

  /** Stops the thread; a request still out fails with `reason`. Resolves once the thread has stopped. */
  close(reason: Error = new ConnectorError('Aborted', 'The read was stopped.')): Promise<void> {
    this.#dead ??= reason;
    this.#closed ??= (async () => {
      try {
        await this.#thread.close(reason);
      } finally {
        await this.#release();
      }
    })();
    return this.#closed;
  }
}

/** Starts the scan of an open file; closing the thread closes the file, after the thread has stopped. */
export function startScan(file: FileHandle, settings: Omit<ScanSettings, 'fd' | 'packed'>): ScanThread {
  return new ScanThread(SCANNER, { ...settings, fd: file.fd }, () => file.close());
}

/** {@link startScan} in packed mode: the thread answers packed batches of `settings.packed`'s fields. */
export function startPackedScan(
  file: FileHandle,
  settings: Omit<ScanSettings, 'fd'> & { packed: PackedScan },
): ScanThread<ScanPacked> {
  return new ScanThread<ScanPacked>(SCANNER, { ...settings, fd: file.fd }, () => file.close());
}
