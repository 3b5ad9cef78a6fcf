import { ConnectorError, type RecordErrorCode } from '../../src/connectors/sdk.js';

/**
 * Driver errors by their codes: SQLSTATE for errors from the server, errno for the network. Never
 * by message text.
 */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** The per-record error of a failure that concerns the records of the statement (SQLSTATE classes 22, 23); undefined otherwise. */
export function recordErrorCode(state: string | undefined): RecordErrorCode | undefined {
  if (!state) return undefined;
  if (state === '23505') return 'DuplicateKey';
  if (state.startsWith('23')) return 'ConstraintViolation';
  if (state.startsWith('22')) return 'InvalidValue';
  // ON CONFLICT DO UPDATE cannot affect a row twice: two records of one statement share a key.
  if (state === '21000') return 'DuplicateKey';
  return undefined;
}

/**
 * A refused record's error text: the server's message and its detail, except a detail that lists
 * the row's values ("Failing row contains (…)", of NOT NULL and CHECK violations): every column of
 * the row, defaults included, and a record's values (a password, a card number) do not belong in an
 * error message. A key's detail ("Key (id)=(5) already exists.") stays: it says which key.
 */
export function recordMessage(message: string | undefined, detail: string | null | undefined): string {
  return [message, detail && !detail.startsWith('Failing row contains') ? detail : undefined].filter(Boolean).join(' ');
}

/** Clients whose connection failed while checked out, and the errors that failure gave (cursor.ts checkout). */
const lostClients = new WeakSet<object>();
const lostErrors = new WeakSet<object>();

/**
 * Whether an error means the session is gone, so its client must not go back to the pool: no
 * SQLSTATE (the socket failed), a connection exception (class 08), or the server ending the session
 * (57P01 administrator command, 57P02 crash shutdown, 57P03 cannot connect now) — the socket closes
 * only after the error arrives.
 */
export function connectionLost(err: unknown): boolean {
  const state = sqlState(err);
  return state === undefined || state.startsWith('08') || state === '57P01' || state === '57P02' || state === '57P03';
}

/** Remembers that the client's connection failed (its 'error' or 'end' event), with the error it gave. */
export function markLost(client: object, err?: object): void {
  lostClients.add(client);
  if (err) lostErrors.add(err);
}

/** Whether the client's connection failed while it was checked out. */
export function isLost(client: object): boolean {
  return lostClients.has(client);
}

const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

/**
 * A whole-call failure as the ConnectorError the host maps. An error without a SQLSTATE that the
 * connection gave when it failed, or that a `client` whose connection failed threw (pg's "not
 * queryable"), is the connection's: `Unreachable`, told by the client's state, not by the text.
 */
export function callError(err: unknown, what: string, client?: object): unknown {
  if (typeof err !== 'object' || err === null || (err as { name?: unknown }).name === 'ConnectorError') return err;
  const code = (err as { code?: unknown }).code;
  const msg = err instanceof Error ? err.message : 'unknown error';
  if (typeof code === 'string' && NETWORK.has(code))
    return new ConnectorError('Unreachable', `${what}: the server cannot be reached (${code}).`, {
      nativeCode: code,
      cause: err,
    });
  const state = sqlState(err);
  if (!state && (lostErrors.has(err) || (client !== undefined && lostClients.has(client))))
    return new ConnectorError('Unreachable', `${what}: the connection to the server was lost (${msg}).`, {
      cause: err,
    });
  if (!state) return err;
  const cls = state.slice(0, 2);
  const opts = { nativeCode: state, cause: err };
  if (state === '28P01' || state === '28000' || state === '42501')
    return new ConnectorError('AuthFailed', `${what}: ${msg}`, opts);
  if (state === '3D000' || state === '3F000') return new ConnectorError('InvalidProperties', `${what}: ${msg}`, opts);
  if (state === '42P01') return new ConnectorError('EntityNotFound', `${what}: ${msg}`, opts);
  if (state === '42703') return new ConnectorError('FieldNotFound', `${what}: ${msg}`, opts);
  if (state === '57014') return new ConnectorError('Aborted', `${what}: the statement was cancelled.`, opts);
  if (cls === '08' || state === '57P01' || state === '57P02' || state === '57P03' || state === '53300')
    return new ConnectorError('Unreachable', `${what}: ${msg}`, opts);
  if (cls === '42' || cls === '0A' || cls === '22' || cls === '21')
    return new ConnectorError('InvalidQuery', `${what}: ${msg}`, opts);
  return new ConnectorError('Datastore', `${what}: ${msg}`, opts);
}
