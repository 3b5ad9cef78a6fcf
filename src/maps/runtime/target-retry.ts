/**
 * A write whose datastore went away is the connection's failure, not its records': it is tried
 * again with back-off while the target stays away for at most a budget, and past that the run ends
 * with `RUN_TARGET_UNAVAILABLE` (a fatal error: the batch is not checkpointed, so the next run
 * writes it and everything after it). Which failures those are is decided by the `CON_` code the
 * Connector host gave the call, itself chosen from the driver's codes (SQLSTATE, SQLite's result
 * codes, errno), never from a message's text:
 *
 *   CON_UNREACHABLE     the server cannot be reached, a session was dropped or terminated (SQLSTATE
 *                       class 08, 57P01-57P03, 53300; ECONNRESET, ECONNREFUSED …; SQLITE_CANTOPEN)
 *   CON_TIMEOUT         the call did not finish within the host's time-out
 *   CON_AUTH_FAILED     the credentials or the permission changed under the run (28P01, 42501 …)
 *   CON_DATASTORE_ERROR the datastore failed the call as a whole (a lock or a deadlock, the disk
 *                       full, SQLITE_BUSY, a thread that died …)
 *   CON_ABORTED         a statement cancelled by someone else than the run (its own cancel is the
 *                       run's abort, handled before this)
 *
 * Every other whole-call failure (a plugin bug, a missing table or field, an unsupported action)
 * stays what it was: a record error for each record of the batch.
 */
import { FerryError, isFerryError } from '../../errors/ferry-error.js';
import type { ErrorCode } from '../../errors/codes.js';

const TARGET_FAILURES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'CON_UNREACHABLE',
  'CON_TIMEOUT',
  'CON_AUTH_FAILED',
  'CON_DATASTORE_ERROR',
  'CON_ABORTED',
]);

/** How long a run waits for a target that went away, and how it spaces its tries. */
export interface TargetRetry {
  /** Time from the first failure after which the run gives up (0: no retry). */
  readonly budgetMs: number;
  /** The first wait; each next one doubles, up to {@link maxDelayMs}. */
  readonly firstDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_TARGET_RETRY: TargetRetry = { budgetMs: 90_000, firstDelayMs: 500, maxDelayMs: 10_000 };

/** Whether a write call's failure is the datastore's or the connection's (see the module comment). */
export function isTargetFailure(err: unknown): err is FerryError {
  return isFerryError(err) && TARGET_FAILURES.has(err.code);
}

/** What the run learns of each failed try, for its log. */
export interface RetryNotice {
  readonly attempt: number;
  readonly waitMs: number;
  readonly error: FerryError;
}

/**
 * Runs `call` until it succeeds, fails otherwise than by {@link isTargetFailure}, the signal fires,
 * or the target has been away for longer than the budget; then throws `RUN_TARGET_UNAVAILABLE`
 * naming `what` and the last failure. Before each try after the first, `settled` may answer that
 * the failed try had committed after all (a checkpoint the target holds): its value is returned.
 */
export async function withTargetRetry<T>(
  what: string,
  retry: TargetRetry,
  signal: AbortSignal,
  call: () => Promise<T>,
  opts: { settled?: () => Promise<T | undefined>; onRetry?: (n: RetryNotice) => void } = {},
): Promise<T> {
  let started: number | undefined;
  let delay = retry.firstDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      if (attempt > 1 && opts.settled) {
        const done = await opts.settled();
        if (done !== undefined) return done;
      }
      return await call();
    } catch (err) {
      if (signal.aborted || !isTargetFailure(err)) throw err;
      started ??= Date.now();
      const left = started + retry.budgetMs - Date.now();
      if (left <= 0) throw unavailable(what, err, Date.now() - started, attempt);
      const waitMs = Math.min(delay, left);
      delay = Math.min(delay * 2, retry.maxDelayMs);
      opts.onRetry?.({ attempt, waitMs, error: err });
      await sleep(waitMs, signal);
      if (signal.aborted) throw err;
    }
  }
}

function unavailable(what: string, err: FerryError, ms: number, attempts: number): FerryError {
  const s = Math.round(ms / 100) / 10;
  const native = err.details?.['nativeCode'];
  const cause = `${err.code}${typeof native === 'string' ? ` (${native})` : ''}: ${err.message.replace(/\.?$/, '.')}`;
  return new FerryError(
    'RUN_TARGET_UNAVAILABLE',
    `${what}: the datastore stayed unavailable for ${s} s (${attempts} tries). ${cause} The run stopped at the last written batch; the next run writes the rest.`,
    {
      details: {
        cause: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) },
        attempts,
        seconds: s,
      },
      cause: err,
    },
  );
}

/** Resolves after `ms`, or at once when the signal fires. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
