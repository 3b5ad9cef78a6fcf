/**
 * Why a connector call failed, as a plugin says it. The plugin host turns each reason into a
 * `CON_` error code (docs/errors.md); any other throw becomes `CON_PLUGIN_FAILED`.
 */
export const CONNECTOR_ERROR_REASONS = [
  /** A connection property is missing or malformed (config). */
  'InvalidProperties',
  /** The datastore cannot be reached: network, server down, folder missing on a share (transient). */
  'Unreachable',
  /** The datastore refused the credentials or the permission (config). */
  'AuthFailed',
  /** No entity with that fullName (config). */
  'EntityNotFound',
  /** No field with that fullName in the entity (config). */
  'FieldNotFound',
  /** The connector or the entity does not support the operation (config). */
  'Unsupported',
  /** The filter, options or native statement are not valid for the datastore (config). */
  'InvalidQuery',
  /** The datastore failed the call for another reason (transient). */
  'Datastore',
  /** The call saw its AbortSignal and stopped. */
  'Aborted',
  /** The datastore dropped the log a change capture needed: it needs a new first copy (config). */
  'CaptureLost',
] as const;
export type ConnectorErrorReason = (typeof CONNECTOR_ERROR_REASONS)[number];

/**
 * The error a plugin throws for an expected failure. The host recognises it by `name` and
 * `reason` (not `instanceof`: a plugin may carry its own copy of the SDK module). `nativeCode`
 * keeps the driver's code (errno, SQLSTATE) for the log and the user.
 */
export class ConnectorError extends Error {
  override readonly name = 'ConnectorError';
  readonly reason: ConnectorErrorReason;
  readonly nativeCode: string | undefined;

  constructor(reason: ConnectorErrorReason, message: string, opts: { nativeCode?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.reason = reason;
    this.nativeCode = opts.nativeCode;
  }
}

/** Duck-typed test for a {@link ConnectorError} from any copy of the SDK. */
export function isConnectorError(err: unknown): err is ConnectorError {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { name?: unknown; reason?: unknown };
  return (
    e.name === 'ConnectorError' &&
    typeof e.reason === 'string' &&
    (CONNECTOR_ERROR_REASONS as readonly string[]).includes(e.reason)
  );
}

/** Throws `Aborted` when the call's signal has fired; plugins call it between units of work. */
export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new ConnectorError('Aborted', 'The call was cancelled.');
}
