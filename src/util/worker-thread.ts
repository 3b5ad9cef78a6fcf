/**
 * A worker thread that answers calls, run from the source text of its handler: the same from the
 * source tree, the compiled tree and a bundled plugin package, where no module file of the handler
 * exists for a worker to load. The SDK offers it to Connector plugins (src/connectors/sdk.ts).
 *
 *   call(body, transfer) ──► pending[id] ──► postMessage {id, body} ──► worker: handle(body)
 *                                                                          │ { reply, transfer }
 *   resolve(reply) / reject ◄── pending[id] ◄── replies port {id, reply | error} ◄──┘
 *                                                 + a shared count of answers (waitSync)
 *
 *   handler threw                        → that call fails (failure 'thrown', its code kept)
 *   factory threw                        → every call fails (failure 'start'); the thread ends
 *   uncaught error / exit in the worker  → answers already sent settle, then every pending call
 *                                          fails ('failed' / 'exited') and so does every later one
 *   close(reason)                        → every pending call fails with `reason`; the thread ends
 *
 * Errors cross the thread boundary as data (`{message, code, name}`) and come back as a
 * {@link WorkerThreadError}; test them by {@link workerFailure}, not by message. Idle, the thread
 * does not keep the process alive; while a call is out, or it is closing, it does.
 */
import {
  MessageChannel,
  receiveMessageOnPort,
  Worker,
  type MessagePort,
  type ResourceLimits,
  type TransferListItem,
} from 'node:worker_threads';

/** Why a call failed: the handler threw, the handler could not start, the thread failed or exited, it was closed, or the call's signal fired. */
export type WorkerFailure = 'thrown' | 'start' | 'failed' | 'exited' | 'closed' | 'aborted';

/** A failure of a {@link WorkerThread} call; `code` and `thrownName` are those of the error the handler (or its factory) threw. */
export class WorkerThreadError extends Error {
  constructor(
    message: string,
    readonly failure: WorkerFailure,
    readonly code?: string,
    readonly thrownName?: string,
  ) {
    super(message);
    this.name = 'WorkerThreadError';
  }
}

/** The {@link WorkerFailure} of an error a {@link WorkerThread} call failed with; undefined for any other error (a close reason). */
export function workerFailure(err: unknown): WorkerFailure | undefined {
  return err instanceof WorkerThreadError ? err.failure : undefined;
}

export interface WorkerThreadOptions {
  /** Names the thread in its errors: "The <name> thread stopped (exit code 1)." */
  name: string;
  /**
   * Source text of `(require, data) => handler`, run once in the thread. `handler(body)` answers a
   * call with `{ reply, transfer? }` (`transfer`: buffers of the reply moved, not copied); it may
   * instead be `{ handle, dispose }`, where `dispose()` runs when a `graceful` thread is closed.
   * It must be self-contained: it sees only `require` and `data`, not the module it was written in.
   */
  factory: string;
  /** Structured-cloned to the factory. */
  data?: unknown;
  /** close() asks the handler to dispose, after the calls posted before, and waits for the thread to end, instead of terminating it. */
  graceful?: boolean;
  /** Node options of the thread (default: the process's). `[]` spares a thread the loaders it does not need. */
  execArgv?: string[];
  resourceLimits?: ResourceLimits;
}

/** How a call's answer is delivered: {@link WorkerThread.send} calls one of them synchronously when it arrives. */
export interface Answer<Res> {
  resolve(reply: Res): void;
  reject(err: Error): void;
}

/** An error as it crosses the thread boundary. */
interface ThrownData {
  message: string;
  code?: string;
  name?: string;
}

type Reply<Res> = { id: number; reply: Res } | { id: number; error: ThrownData } | { id?: number; fatal: ThrownData };

/** The id of the message that stops a graceful thread. */
const STOP = 0;

/**
 * Runs in the thread. `counts[0]` counts the answers sent (after each is posted, so an answer counted
 * is there to read); `counts[1]` is 1 once the factory has failed.
 */
const SOURCE = (factory: string): string => `
const __name = (f) => f;
const { parentPort, workerData } = require('node:worker_threads');
const { replies } = workerData;
const counts = new Int32Array(workerData.counts);
const failure = (err) => ({
  message: err instanceof Error ? err.message : String(err),
  code: err && typeof err.code === 'string' ? err.code : undefined,
  name: err instanceof Error ? err.name : undefined,
});
let handle;
let dispose;
let broken;
try {
  const made = (${factory})(require, workerData.data);
  if (typeof made === 'function') handle = made;
  else {
    handle = made.handle;
    dispose = made.dispose;
  }
} catch (err) {
  broken = failure(err);
  replies.postMessage({ fatal: broken });
  Atomics.store(counts, 1, 1);
  Atomics.notify(counts, 0);
}
parentPort.on('message', (m) => {
  if (m.id === ${STOP}) {
    try {
      if (dispose) dispose();
    } finally {
      process.exit(0);
    }
    return;
  }
  if (broken) replies.postMessage({ id: m.id, fatal: broken });
  else {
    try {
      const out = handle(m.body);
      replies.postMessage({ id: m.id, reply: out.reply }, out.transfer);
    } catch (err) {
      replies.postMessage({ id: m.id, error: failure(err) });
    }
  }
  Atomics.add(counts, 0, 1);
  Atomics.notify(counts, 0);
});
`;

/**
 * A worker thread whose handler answers calls, any number of them out at once, in the order they
 * were posted. See the module's diagram for how each failure reaches the calls.
 */
export class WorkerThread<Req, Res> {
  readonly #name: string;
  readonly #graceful: boolean;
  readonly #worker: Worker;
  readonly #replies: MessagePort;
  /** Shared with the thread: [0] answers sent, [1] 1 once its factory failed. */
  readonly #counts = new Int32Array(new SharedArrayBuffer(8));
  readonly #pending = new Map<number, Answer<Res>>();
  readonly #exited: Promise<void>;
  #nextId = STOP + 1;
  /** Calls posted to the thread (waitSync compares the thread's count of answers with it). */
  #posted = 0;
  #dead: Error | undefined;
  #closed: Promise<void> | undefined;

  constructor(opts: WorkerThreadOptions) {
    this.#name = opts.name;
    this.#graceful = opts.graceful === true;
    const channel = new MessageChannel();
    this.#replies = channel.port1;
    this.#worker = new Worker(SOURCE(opts.factory), {
      eval: true,
      workerData: { data: opts.data, counts: this.#counts.buffer, replies: channel.port2 },
      transferList: [channel.port2],
      ...(opts.execArgv ? { execArgv: opts.execArgv } : {}),
      ...(opts.resourceLimits ? { resourceLimits: opts.resourceLimits } : {}),
    });
    this.#replies.on('message', (m: Reply<Res>) => this.#onReply(m));
    this.#worker.on('error', (err) =>
      this.#stopped(new WorkerThreadError(`The ${this.#name} thread failed: ${err.message}`, 'failed')),
    );
    this.#exited = new Promise<void>((resolve) =>
      this.#worker.once('exit', (code) => {
        this.#stopped(new WorkerThreadError(`The ${this.#name} thread stopped (exit code ${code}).`, 'exited'));
        this.#replies.close();
        resolve();
      }),
    );
    // Idle, the thread must not keep the process alive (after the listeners, which would ref it).
    this.#idle();
  }

  /** False once the thread has failed, stopped or been closed: its calls fail, a user starts another. */
  get alive(): boolean {
    // A factory that failed is known at once, not only once its message has been handled.
    if (this.#dead === undefined && Atomics.load(this.#counts, 1) === 1) this.#drain();
    return this.#dead === undefined;
  }

  /** Calls posted and not answered yet. */
  get pending(): number {
    return this.#pending.size;
  }

  /**
   * Posts a call now (not after the caller's synchronous work); `answer` is called when it is
   * answered or fails. `signal`: the call fails at once ('aborted') when it fires; the thread goes on.
   */
  send(body: Req, answer: Answer<Res>, transfer?: readonly TransferListItem[], signal?: AbortSignal): void {
    if (this.#dead) return answer.reject(this.#dead);
    const id = this.#nextId++;
    if (signal) {
      const aborted = new WorkerThreadError(`The call to the ${this.#name} thread was cancelled.`, 'aborted');
      if (signal.aborted) return answer.reject(aborted);
      const onAbort = (): void => {
        if (!this.#pending.delete(id)) return;
        if (this.#pending.size === 0) this.#idle();
        answer.reject(aborted);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const settle = answer;
      answer = {
        resolve: (r) => (signal.removeEventListener('abort', onAbort), settle.resolve(r)),
        reject: (e) => (signal.removeEventListener('abort', onAbort), settle.reject(e)),
      };
    }
    try {
      this.#worker.postMessage({ id, body }, transfer);
    } catch (err) {
      // A body that cannot be cloned, a buffer already moved: this call fails, the thread goes on.
      return answer.reject(err instanceof Error ? err : new Error(String(err)));
    }
    this.#posted++;
    if (this.#pending.size === 0) this.#busy();
    this.#pending.set(id, answer);
  }

  /** {@link send} as a promise. */
  call(body: Req, transfer?: readonly TransferListItem[], signal?: AbortSignal): Promise<Res> {
    return new Promise<Res>((resolve, reject) => this.send(body, { resolve, reject }, transfer, signal));
  }

  /**
   * Blocks this thread until every call posted so far has been answered, and delivers the answers
   * (synchronously, before it returns): for a user whose reads must see what its calls did. True
   * when they are all settled (or the thread has failed); false after `timeoutMs`. A thread that
   * dies without answering is only seen by the time-out.
   */
  waitSync(timeoutMs: number): boolean {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.#dead) return true;
      const done = Atomics.load(this.#counts, 0);
      if (done >= this.#posted || Atomics.load(this.#counts, 1) === 1) {
        this.#drain();
        return true;
      }
      const left = deadline - Date.now();
      if (left <= 0) return false;
      Atomics.wait(this.#counts, 0, done, Math.min(left, 1000));
    }
  }

  /**
   * Ends the thread: every call still out fails with `reason`, and so does every later one.
   * Resolves once the thread has stopped. A graceful thread disposes its handler first.
   */
  close(reason?: Error): Promise<void> {
    const running = this.#dead === undefined;
    this.#fail(reason ?? new WorkerThreadError(`The ${this.#name} thread was closed.`, 'closed'));
    this.#closed ??= (async () => {
      // Held until it has stopped: its exit must not be lost to a process that ends first.
      this.#busy();
      if (this.#graceful && running) {
        this.#worker.postMessage({ id: STOP });
        await this.#exited;
      } else {
        await this.#worker.terminate();
      }
    })();
    return this.#closed;
  }

  #onReply(m: Reply<Res>): void {
    if ('fatal' in m) {
      this.#fail(new WorkerThreadError(m.fatal.message, 'start', m.fatal.code, m.fatal.name));
      void this.#worker.terminate();
      return;
    }
    const answer = this.#pending.get(m.id);
    if (!answer) return;
    this.#pending.delete(m.id);
    if (this.#pending.size === 0 && this.#closed === undefined) this.#idle();
    if ('reply' in m) answer.resolve(m.reply);
    else answer.reject(new WorkerThreadError(m.error.message, 'thrown', m.error.code, m.error.name));
  }

  /** The answers waiting on the port, handled now rather than in a later turn. */
  #drain(): void {
    for (let m = receiveMessageOnPort(this.#replies); m; m = receiveMessageOnPort(this.#replies))
      this.#onReply(m.message as Reply<Res>);
  }

  /** The thread failed or exited: answers it sent before settle their calls first; the rest fail. */
  #stopped(err: WorkerThreadError): void {
    if (this.#dead === undefined) this.#drain();
    this.#fail(err);
  }

  #fail(err: Error): void {
    this.#dead ??= err;
    const left = [...this.#pending.values()];
    this.#pending.clear();
    if (this.#closed === undefined) this.#idle();
    for (const answer of left) answer.reject(this.#dead);
  }

  #busy(): void {
    this.#worker.ref();
    this.#replies.ref();
  }

  #idle(): void {
    this.#worker.unref();
    this.#replies.unref();
  }
}
