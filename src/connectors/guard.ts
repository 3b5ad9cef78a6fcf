import type { Logger } from 'pino';
import { FerryError, isFerryError } from '../errors/ferry-error.js';
import type { ErrorCode } from '../errors/codes.js';
import { isConnectorError, type ConnectorErrorReason } from './connector-error.js';
import type { CallContext, ConnectorLog, Progress } from './sdk.js';

/**
 * Error containment around every plugin call: whatever the plugin does (throws synchronously,
 * rejects, never settles, ignores its AbortSignal) the caller gets a FerryError with a `CON_`
 * code, promptly, and the Agent goes on.
 */

/** Options every host call takes. */
export interface CallOptions {
  /** Cancels the call: the plugin sees its signal fire and the caller gets `CON_ABORTED` at once. */
  signal?: AbortSignal;
  /** Fails the call with `CON_TIMEOUT` after this many milliseconds (the plugin's signal fires too). */
  timeoutMs?: number;
  /** Receives the plugin's progress reports. */
  onProgress?: (p: Progress) => void;
  /**
   * An aborted (or timed-out) call waits this long at most for the plugin to stop before it
   * rejects (default 0: at once): a write's statement cancelled on the server has then ended, so
   * nothing of it commits after the caller went on.
   */
  settleMs?: number;
}

/** Who is being called, for errors and logs. */
export interface CallScope {
  connector: string;
  verb: string;
  connectionId?: string;
  /** Values of protected properties: scrubbed from every message that leaves the host. */
  secrets: readonly string[];
  log: Logger;
}

const REASON_CODES: Record<ConnectorErrorReason, ErrorCode> = {
  InvalidProperties: 'CON_PROPERTIES_INVALID',
  Unreachable: 'CON_UNREACHABLE',
  AuthFailed: 'CON_AUTH_FAILED',
  EntityNotFound: 'CON_ENTITY_NOT_FOUND',
  FieldNotFound: 'CON_FIELD_NOT_FOUND',
  Unsupported: 'CON_UNSUPPORTED',
  InvalidQuery: 'CON_QUERY_INVALID',
  Datastore: 'CON_DATASTORE_ERROR',
  Aborted: 'CON_ABORTED',
  CaptureLost: 'CON_CAPTURE_LOST',
};

/** A signal that fires on the caller's abort or the time-out, whichever comes first. */
export function callSignal(scope: CallScope, opts: CallOptions): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const outer = opts.signal;
  const onOuter = (): void =>
    controller.abort(
      new FerryError('CON_ABORTED', `The ${scope.verb} call to the ${scope.connector} connector was cancelled.`, {
        details: detailsOf(scope),
      }),
    );
  if (outer?.aborted) onOuter();
  else outer?.addEventListener('abort', onOuter, { once: true });
  const timer =
    opts.timeoutMs !== undefined && opts.timeoutMs > 0
      ? setTimeout(
          () =>
            controller.abort(
              new FerryError(
                'CON_TIMEOUT',
                `The ${scope.verb} call to the ${scope.connector} connector did not finish within ${opts.timeoutMs} ms.`,
                {
                  details: { ...detailsOf(scope), timeoutMs: opts.timeoutMs },
                },
              ),
            ),
          opts.timeoutMs,
        )
      : undefined;
  return {
    signal: controller.signal,
    dispose: () => {
      if (timer) clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    },
  };
}

/** The context handed to the plugin. */
export function callContext(scope: CallScope, signal: AbortSignal, opts: CallOptions): CallContext {
  // Made when the plugin first logs: most calls never do, and a child logger costs more than the rest of the call's guard.
  let log: ConnectorLog | undefined;
  return {
    get log(): ConnectorLog {
      return (log ??= scope.log.child({ verb: scope.verb }) as unknown as ConnectorLog);
    },
    signal,
    progress(p) {
      try {
        opts.onProgress?.(p);
      } catch (err) {
        scope.log.warn({ err }, 'progress listener failed');
      }
    },
  };
}

/**
 * Settles with `p`, or rejects with the signal's reason once it fires: at once, or when `p` has
 * settled but at most `settleMs` later — time for a plugin that honours its signal to stop its
 * work on the datastore (a statement cancelled on the server) before the caller goes on as if it
 * had stopped. A late rejection of `p` is swallowed.
 */
export function raceAbort<T>(p: Promise<T>, signal: AbortSignal, settleMs = 0): Promise<T> {
  if (signal.aborted) {
    p.catch(() => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      p.catch(() => undefined);
      if (settleMs <= 0) return reject(signal.reason as Error);
      const give = (): void => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      };
      const timer = setTimeout(give, settleMs);
      p.then(give, give);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

function detailsOf(scope: CallScope): Record<string, unknown> {
  return scope.connectionId
    ? { connector: scope.connector, verb: scope.verb, connectionId: scope.connectionId }
    : { connector: scope.connector, verb: scope.verb };
}

/** Removes protected property values from a text. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length > 0) out = out.split(s).join('[redacted]');
  return out;
}

/** Whatever a plugin threw, as the FerryError the caller gets. */
export function toHostError(err: unknown, scope: CallScope, signal?: AbortSignal): FerryError {
  if (signal?.aborted && isFerryError(signal.reason)) return signal.reason;
  if (isFerryError(err) && err.code.startsWith('CON_')) return err;
  const details = detailsOf(scope);
  if (isConnectorError(err)) {
    if (err.nativeCode !== undefined) details['nativeCode'] = err.nativeCode;
    return new FerryError(REASON_CODES[err.reason], scrub(err.message, scope.secrets), { details, cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new FerryError(
    'CON_PLUGIN_FAILED',
    `The ${scope.connector} connector failed in ${scope.verb}: ${scrub(message, scope.secrets)}`,
    {
      details,
      cause: err,
    },
  );
}

/** Logs a failed call at the level its kind calls for. */
export function logFailure(scope: CallScope, err: FerryError): void {
  const fields = {
    code: err.code,
    verb: scope.verb,
    err: { message: err.message, code: err.code, details: err.details },
  };
  if (err.kind === 'system') scope.log.error(fields, 'connector call failed');
  else scope.log.warn(fields, 'connector call failed');
}

/** Runs one plugin call under containment. */
export async function guardCall<T>(
  scope: CallScope,
  opts: CallOptions,
  fn: (ctx: CallContext) => Promise<T> | T,
): Promise<T> {
  const { signal, dispose } = callSignal(scope, opts);
  try {
    if (signal.aborted) throw signal.reason;
    const ctx = callContext(scope, signal, opts);
    let p: Promise<T>;
    try {
      p = Promise.resolve(fn(ctx));
    } catch (err) {
      p = Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return await raceAbort(p, signal, opts.settleMs ?? 0);
  } catch (err) {
    const e = toHostError(err, scope, signal);
    logFailure(scope, e);
    throw e;
  } finally {
    dispose();
  }
}

/** How long the host waits for a plugin's iterator to clean up after the caller stops reading. */
const RETURN_WAIT_MS = 5000;

/**
 * A plugin's query stream under containment: each pull is raced against the signal, each batch is
 * checked (an array of at most `maxBatch` records), and stopping early calls the plugin iterator's
 * `return()` so it releases its cursor or file.
 */
export async function* guardIterable<T>(
  scope: CallScope,
  opts: CallOptions,
  maxBatch: number,
  open: (ctx: CallContext) => AsyncIterable<T[]>,
): AsyncGenerator<T[], void, undefined> {
  yield* guardBatches(scope, opts, maxBatch, open, (b) => (Array.isArray(b) ? b.length : undefined), 'records');
}

/**
 * {@link guardIterable} for batches of any shape: `sizeOf` answers a batch's number of rows, or
 * undefined when it is not a batch at all.
 */
export async function* guardBatches<B>(
  scope: CallScope,
  opts: CallOptions,
  maxBatch: number,
  open: (ctx: CallContext) => AsyncIterable<B>,
  sizeOf: (batch: B) => number | undefined,
  unit: string,
): AsyncGenerator<B, void, undefined> {
  const { signal, dispose } = callSignal(scope, opts);
  let it: AsyncIterator<B> | undefined;
  let finished = false;
  let count = 0;
  try {
    if (signal.aborted) throw signal.reason;
    const ctx = callContext(scope, signal, opts);
    const iterable = open(ctx);
    if (!iterable || typeof (iterable as Partial<AsyncIterable<B>>)[Symbol.asyncIterator] !== 'function') {
      throw new FerryError(
        'CON_PROTOCOL_VIOLATION',
        `The ${scope.connector} connector's ${scope.verb} did not return an async iterable.`,
        { details: detailsOf(scope) },
      );
    }
    it = iterable[Symbol.asyncIterator]();
    for (;;) {
      const r = await raceAbort(Promise.resolve(it.next()), signal);
      if (r.done) {
        finished = true;
        return;
      }
      const batch = r.value;
      const size = sizeOf(batch);
      if (size === undefined || size > maxBatch) {
        throw new FerryError(
          'CON_PROTOCOL_VIOLATION',
          `The ${scope.connector} connector's ${scope.verb} yielded ${size !== undefined ? `a batch of ${size} ${unit} (at most ${maxBatch} allowed)` : unit === 'records' ? 'a batch that is not an array' : 'a batch that is not a packed batch'}.`,
          { details: detailsOf(scope) },
        );
      }
      count += size;
      yield batch;
    }
  } catch (err) {
    const e = toHostError(err, scope, signal);
    logFailure(scope, e);
    throw e;
  } finally {
    dispose();
    if (it && !finished && typeof it.return === 'function') {
      const ret = Promise.resolve()
        .then(() => it?.return?.())
        .catch((err: unknown) => scope.log.warn({ err, verb: scope.verb }, 'connector stream cleanup failed'));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        ret,
        new Promise<void>((resolve) => (timer = setTimeout(resolve, signal.aborted ? 100 : RETURN_WAIT_MS))),
      ]);
      clearTimeout(timer);
    }
    scope.log.debug({ verb: scope.verb, records: count }, 'connector stream closed');
  }
}
