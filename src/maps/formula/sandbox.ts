/**
 * The formula sandbox: one isolated-vm isolate that holds the function library, the run's Lookup
 * Tables and the compiled formula programs — and nothing else.
 *
 *   host (Agent)                                  isolate (memory limit, no I/O)
 *   ─────────────                                 ───────────────────────────────
 *   create()  ── prelude: delete every global  ──▶ ECMAScript built-ins on the allowlist only
 *             ── library source (toString)     ──▶ L = { text, num, …, fn: { LEFT, … } }
 *             ── Lookup Tables (JSON, once)    ──▶ L.loadLookupTables
 *   run(program, batch JSON, clock, seed) ─────────▶ run(): JSON.parse → formulas → JSON.stringify
 *             ◀──────────────── [values, errors] (one string) or a RunFailure
 *
 * A run has a time limit; when the isolate dies (its memory limit, a crash) the next run builds a
 * new one transparently, with the same library, tables and programs. The boundary is strings and
 * numbers only: no host object or function is ever handed to the isolate.
 *
 * `close()` is how a process ends with a sandbox: it waits for the calls in flight, releases the
 * program and context handles, then disposes the isolate. Node must not tear down isolated-vm's
 * environment while an isolate call is pending or its handles wait for finalizers (a process
 * exiting that way aborts in isolated-vm's native code), so a command frees its sandbox with
 * `await close()` before it returns, and never calls process.exit with one alive.
 */
import ivm from 'isolated-vm';
import { FerryError } from '../../errors/ferry-error.js';
import { LIBRARY_GLOBAL, librarySource } from './library/index.js';
import type { WireLookupTable } from './library/types.js';

/**
 * The globals the isolate keeps: the ECMAScript built-ins the library uses. Everything else the
 * context starts with (eval, Function, WebAssembly, SharedArrayBuffer, Atomics, Proxy, Reflect,
 * typed arrays, Promise, WeakRef, …) is deleted before the library is loaded.
 */
export const ALLOWED_GLOBALS: readonly string[] = [
  'globalThis',
  'undefined',
  'NaN',
  'Infinity',
  'Object',
  'Array',
  'String',
  'Number',
  'Boolean',
  'Symbol',
  'Date',
  'RegExp',
  'Math',
  'JSON',
  'Map',
  'Set',
  'Error',
  'RangeError',
  'TypeError',
  'SyntaxError',
  'URIError',
  'ReferenceError',
  'EvalError',
  'parseInt',
  'parseFloat',
  'isFinite',
  'isNaN',
  'encodeURIComponent',
  'decodeURIComponent',
];

export interface SandboxOptions {
  /** The isolate's heap limit in MiB (isolated-vm's minimum is 8). */
  readonly memoryLimitMb: number;
  /** The longest text a formula function may produce. */
  readonly maxTextLength: number;
  /** The run's Lookup Tables, loaded into every isolate this sandbox builds. */
  readonly lookupTables: readonly WireLookupTable[];
  /** Called when V8 reports that the isolate is beyond repair (see isolated-vm's documentation). */
  readonly onCatastrophicError?: (message: string) => void;
}

/** Why a run produced no answer: the whole batch failed, not one record. */
export type RunFailureKind = 'timeout' | 'memory' | 'error';

export class RunFailure extends Error {
  constructor(
    readonly kind: RunFailureKind,
    message: string,
  ) {
    super(message);
    this.name = 'RunFailure';
  }
}

/** The arguments of a program's `run`: batch JSON in chunks (wire.ts), clock (epoch ms), four seed words, formula index or -1. */
export type RunArguments = [input: string[], now: number, s0: number, s1: number, s2: number, s3: number, only: number];

interface Live {
  readonly isolate: ivm.Isolate;
  readonly context: ivm.Context;
  readonly programs: Map<string, ivm.Reference>;
}

export class FormulaSandbox {
  #live: Live | undefined;
  #disposed = false;
  /** Calls into the isolate not settled yet: `close()` waits for them. */
  readonly #inFlight = new Set<Promise<unknown>>();
  #created = 0;
  readonly #lookupJson: string;

  private constructor(readonly options: SandboxOptions) {
    this.#lookupJson = JSON.stringify(options.lookupTables);
  }

  /** Builds the sandbox and its first isolate. */
  static async create(options: SandboxOptions): Promise<FormulaSandbox> {
    const sandbox = new FormulaSandbox(options);
    await sandbox.#ensure();
    return sandbox;
  }

  /** How many isolates were built so far (the first, and one after each fatal failure). */
  get isolatesCreated(): number {
    return this.#created;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /**
   * Runs a program (the source `generateProgram` wrote) over one batch within `timeoutMs`. Answers
   * the program's JSON, or throws a {@link RunFailure}: the batch as a whole failed (time limit,
   * memory limit, or an exception outside any record).
   */
  async run(source: string, args: RunArguments, timeoutMs: number): Promise<string> {
    const live = await this.#ensure();
    const run = await this.#program(live, source);
    const started = performance.now();
    try {
      const out: unknown = await this.#track(
        run.apply(undefined, args, {
          timeout: Math.max(1, Math.ceil(timeoutMs)),
          arguments: { copy: true },
          result: { copy: true },
        }),
      );
      if (typeof out === 'string') return out;
      if (Array.isArray(out) && out.every((part) => typeof part === 'string')) return out.join('');
      throw new RunFailure('error', 'The formula program answered no text');
    } catch (err) {
      if (err instanceof RunFailure) throw err;
      const elapsed = performance.now() - started;
      if (live.isolate.isDisposed) {
        this.#live = undefined;
        throw new RunFailure(
          'memory',
          `The formulas exceeded the sandbox memory limit of ${this.options.memoryLimitMb} MiB`,
        );
      }
      if (elapsed >= timeoutMs * 0.9)
        throw new RunFailure('timeout', `The formulas took longer than the limit of ${Math.round(timeoutMs)} ms`);
      throw new RunFailure('error', err instanceof Error ? err.message : String(err));
    }
  }

  /** The names of the library's functions, as the isolate holds them (for tests and checks). */
  async libraryFunctions(): Promise<string[]> {
    const live = await this.#ensure();
    const names: unknown = await this.#track(
      live.context.eval(`JSON.stringify(Object.keys(${LIBRARY_GLOBAL}.fn))`, { timeout: 1000 }),
    );
    return JSON.parse(names as string) as string[];
  }

  /** The isolate's heap statistics (for the Agent's memory watchdog and the benchmark). */
  async heapStatistics(): Promise<ivm.HeapStatistics> {
    const live = await this.#ensure();
    return live.isolate.getHeapStatistics();
  }

  /** Evaluates a script in the sandbox's context and answers its value copied out (tests of the boundary). */
  async evaluateScript(code: string, timeoutMs = 1000): Promise<unknown> {
    const live = await this.#ensure();
    return this.#track(live.context.eval(code, { timeout: timeoutMs, copy: true }));
  }

  /**
   * Frees the isolate at once, even with a call in flight (that call rejects). The sandbox cannot
   * be used afterwards. Before a process ends, prefer {@link close}.
   */
  dispose(): void {
    this.#disposed = true;
    const live = this.#live;
    this.#live = undefined;
    if (!live || live.isolate.isDisposed) return;
    // Released first, so that no handle into the isolate is left for a finalizer at process exit.
    for (const ref of live.programs.values()) ref.release();
    live.programs.clear();
    live.context.release();
    live.isolate.dispose();
  }

  /** Waits for the calls in flight to settle, then frees the isolate and its handles (see the module comment). */
  async close(): Promise<void> {
    this.#disposed = true;
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
    this.dispose();
  }

  #track<T>(call: Promise<T>): Promise<T> {
    this.#inFlight.add(call);
    const done = (): void => void this.#inFlight.delete(call);
    call.then(done, done);
    return call;
  }

  async #program(live: Live, source: string): Promise<ivm.Reference> {
    const hit = live.programs.get(source);
    if (hit) return hit;
    let ref: ivm.Reference;
    try {
      const script = await live.isolate.compileScript(source);
      ref = await script.run(live.context, { reference: true, timeout: 5000 });
      script.release();
    } catch (err) {
      throw new FerryError(
        'FML_SANDBOX',
        `The formula program could not be loaded into the sandbox: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
    live.programs.set(source, ref);
    return ref;
  }

  async #ensure(): Promise<Live> {
    if (this.#disposed) throw new FerryError('FML_SANDBOX', 'The formula sandbox was disposed');
    if (this.#live && !this.#live.isolate.isDisposed) return this.#live;
    const { memoryLimitMb, maxTextLength, onCatastrophicError } = this.options;
    const isolate = new ivm.Isolate({
      memoryLimit: memoryLimitMb,
      ...(onCatastrophicError ? { onCatastrophicError } : {}),
    });
    try {
      const context = await isolate.createContext();
      await context.eval(PRELUDE(ALLOWED_GLOBALS), { timeout: 5000 });
      await context.eval(librarySource(), { timeout: 10_000 });
      await context.eval(`${LIBRARY_GLOBAL}.maxText = ${Math.floor(maxTextLength)};`, { timeout: 1000 });
      const load = await context.eval(`${LIBRARY_GLOBAL}.loadLookupTables`, { reference: true, timeout: 1000 });
      await load.apply(undefined, [this.#lookupJson], { timeout: 60_000 });
      load.release();
      this.#live = { isolate, context, programs: new Map() };
      this.#created += 1;
      return this.#live;
    } catch (err) {
      if (!isolate.isDisposed) isolate.dispose();
      throw new FerryError(
        'FML_SANDBOX',
        `The formula sandbox could not be started: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
  }
}

/**
 * The first script of every isolate: removes every global not on the allowlist, makes errors cheap
 * to create (no stack traces: record errors carry formula positions instead), and defines the
 * `__name` helper that esbuild-transpiled library code calls.
 */
const PRELUDE = (allowed: readonly string[]): string => `"use strict";
(() => {
  const keep = new Set(${JSON.stringify(allowed)});
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    if (keep.has(name)) continue;
    try { delete globalThis[name]; } catch { /* not configurable */ }
  }
  Error.stackTraceLimit = 0;
  Object.defineProperty(globalThis, "__name", { value: (target) => target, enumerable: false });
})();`;
