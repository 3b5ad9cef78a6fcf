import { ConnectorError, workerFailure, type RecordErrorCode } from '../../src/connectors/sdk.js';

/** The SQLite error code of a driver error (`SQLITE_CONSTRAINT_UNIQUE`), if it has one. */
export function sqliteCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

const RECORD_ERRORS: Readonly<Record<string, RecordErrorCode>> = {
  SQLITE_CONSTRAINT_PRIMARYKEY: 'DuplicateKey',
  SQLITE_CONSTRAINT_UNIQUE: 'DuplicateKey',
  SQLITE_CONSTRAINT_ROWID: 'DuplicateKey',
  SQLITE_CONSTRAINT_FOREIGNKEY: 'ConstraintViolation',
  SQLITE_CONSTRAINT_NOTNULL: 'ConstraintViolation',
  SQLITE_CONSTRAINT_CHECK: 'ConstraintViolation',
  SQLITE_CONSTRAINT_TRIGGER: 'ConstraintViolation',
  SQLITE_CONSTRAINT: 'ConstraintViolation',
  SQLITE_MISMATCH: 'InvalidValue',
  SQLITE_CONSTRAINT_DATATYPE: 'InvalidValue',
  SQLITE_TOOBIG: 'InvalidValue',
  SQLITE_RANGE: 'InvalidValue',
};

/** The SQLite codes of statement failures that concern one record alone. */
export const RECORD_SQLITE_CODES: readonly string[] = Object.keys(RECORD_ERRORS);

/** A per-record error for a statement failure that concerns the record alone; undefined for the others. */
export function recordErrorCode(code: string | undefined): RecordErrorCode | undefined {
  return code !== undefined && Object.hasOwn(RECORD_ERRORS, code) ? RECORD_ERRORS[code] : undefined;
}

/**
 * A whole-call failure as the ConnectorError the host maps, chosen by the SQLite code. A session
 * thread that failed or stopped without one is the datastore's failure (the next call starts
 * another thread); one closed under the call by a disconnect has stopped it.
 */
export function callError(err: unknown, what: string): unknown {
  const code = sqliteCode(err);
  const msg = err instanceof Error ? err.message : String(err);
  const failure = workerFailure(err);
  if (!code && failure !== undefined)
    return new ConnectorError(failure === 'closed' ? 'Aborted' : 'Datastore', `${what}: ${msg}`, { cause: err });
  if (!code) return err;
  if (code === 'SQLITE_CANTOPEN' || code.startsWith('SQLITE_CANTOPEN_'))
    return new ConnectorError('Unreachable', `${what}: the database file cannot be opened.`, {
      nativeCode: code,
      cause: err,
    });
  if (
    code === 'SQLITE_PERM' ||
    code === 'SQLITE_AUTH' ||
    code === 'SQLITE_READONLY' ||
    code.startsWith('SQLITE_READONLY_')
  ) {
    return new ConnectorError('AuthFailed', `${what}: no permission (${msg}).`, { nativeCode: code, cause: err });
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT')
    return new ConnectorError('InvalidProperties', `${what}: the file is not a usable SQLite database.`, {
      nativeCode: code,
      cause: err,
    });
  if (code === 'SQLITE_ERROR')
    return new ConnectorError('InvalidQuery', `${what}: ${msg}`, { nativeCode: code, cause: err });
  if (code === 'SQLITE_INTERRUPT')
    return new ConnectorError('Aborted', `${what}: interrupted.`, { nativeCode: code, cause: err });
  return new ConnectorError('Datastore', `${what}: ${msg}`, { nativeCode: code, cause: err });
}
