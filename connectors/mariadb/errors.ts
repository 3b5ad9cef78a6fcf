import { ConnectorError, type RecordErrorCode } from '../../src/connectors/sdk.js';

/**
 * Driver errors by the server's error numbers (errno) and the driver's codes for the network,
 * never by message text.
 */
interface DriverError {
  errno?: number;
  code?: string;
  sqlState?: string;
  sqlMessage?: string;
  fatal?: boolean;
  message?: string;
}

const asDriver = (err: unknown): DriverError => (typeof err === 'object' && err !== null ? err : {});

/** The server's error number, when the server refused the statement. */
export function serverErrno(err: unknown): number | undefined {
  const e = asDriver(err);
  // Server errors are numbered from 1000 (the driver's own, 2000–2999, and the system's are not).
  return typeof e.errno === 'number' && e.errno >= 1000 && (e.errno < 2000 || e.errno >= 3000) ? e.errno : undefined;
}

/** Record-level refusals: a duplicate key, a constraint, a value that does not fit. */
const RECORD_ERRORS = new Map<number, RecordErrorCode>([
  [1062, 'DuplicateKey'], // ER_DUP_ENTRY
  [1586, 'DuplicateKey'], // ER_DUP_ENTRY_WITH_KEY_NAME
  [1451, 'ConstraintViolation'], // a row still referenced
  [1452, 'ConstraintViolation'], // a parent row missing
  [1216, 'ConstraintViolation'],
  [1217, 'ConstraintViolation'],
  [1048, 'ConstraintViolation'], // column cannot be null
  [1364, 'ConstraintViolation'], // field has no default value
  [4025, 'ConstraintViolation'], // CHECK constraint failed (MariaDB)
  [3819, 'ConstraintViolation'], // CHECK constraint violated (MySQL)
  [1264, 'InvalidValue'], // out of range
  [1265, 'InvalidValue'], // data truncated
  [1366, 'InvalidValue'], // incorrect value
  [1292, 'InvalidValue'], // incorrect datetime value
  [1406, 'InvalidValue'], // data too long
  [1367, 'InvalidValue'], // illegal value
  [1411, 'InvalidValue'], // incorrect value for function
  [3140, 'InvalidValue'], // invalid JSON (MySQL)
  [1690, 'InvalidValue'], // value out of range in an expression
  [1416, 'InvalidValue'], // cannot get geometry object
]);

/** The per-record error of a refusal that concerns the statement's records; undefined otherwise. */
export function recordErrorCode(err: unknown): RecordErrorCode | undefined {
  const n = serverErrno(err);
  return n === undefined ? undefined : RECORD_ERRORS.get(n);
}

/** The server's message of a refused record, with its error number. */
export function recordMessage(err: unknown): string {
  const e = asDriver(err);
  return e.sqlMessage ?? e.message ?? 'The server refused the record.';
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
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_SERVER_SHUTDOWN',
  'HANDSHAKE_SSL_ERROR',
]);

/** Server errors that mean the session is gone or the server cannot serve it. */
const GONE = new Set([
  1040, // too many connections
  1053, // server shutdown
  1077, // normal shutdown
  1927, // connection was killed (MariaDB)
  2006, // server has gone away
  2013, // lost connection during query
  4031, // disconnected by the server because of inactivity
]);

/**
 * A whole-call failure as the ConnectorError the host maps. A connection the driver marked fatal
 * is the connection's failure (`Unreachable`), whatever the text says.
 */
export function callError(err: unknown, what: string): unknown {
  if (typeof err !== 'object' || err === null || (err as { name?: unknown }).name === 'ConnectorError') return err;
  const e = asDriver(err);
  const msg = e.sqlMessage ?? e.message ?? 'unknown error';
  const errno = serverErrno(err);
  if (errno === undefined) {
    if (e.code === 'HANDSHAKE_NO_SSL_SUPPORT')
      return new ConnectorError(
        'InvalidProperties',
        `${what}: the server does not offer TLS; set the property tls to off, or enable TLS on the server.`,
        { nativeCode: e.code, cause: err },
      );
    if ((e.code && NETWORK.has(e.code)) || e.fatal)
      return new ConnectorError('Unreachable', `${what}: the server cannot be reached (${e.code ?? msg}).`, {
        ...(e.code ? { nativeCode: e.code } : {}),
        cause: err,
      });
    return err;
  }
  const opts = { nativeCode: String(errno), cause: err };
  if (
    errno === 1045 ||
    errno === 1044 ||
    errno === 1698 ||
    errno === 1142 ||
    errno === 1143 ||
    errno === 1227 ||
    errno === 1370
  )
    return new ConnectorError('AuthFailed', `${what}: ${msg}`, opts);
  if (errno === 1049) return new ConnectorError('InvalidProperties', `${what}: ${msg}`, opts);
  if (errno === 1146) return new ConnectorError('EntityNotFound', `${what}: ${msg}`, opts);
  if (errno === 1054) return new ConnectorError('FieldNotFound', `${what}: ${msg}`, opts);
  if (errno === 1317 || errno === 3024 || errno === 1969)
    return new ConnectorError('Aborted', `${what}: the statement was cancelled.`, opts);
  if (GONE.has(errno) || e.fatal) return new ConnectorError('Unreachable', `${what}: ${msg}`, opts);
  if (errno === 1064 || errno === 1149 || RECORD_ERRORS.has(errno))
    return new ConnectorError('InvalidQuery', `${what}: ${msg}`, opts);
  return new ConnectorError('Datastore', `${what}: ${msg}`, opts);
}
