import { ConnectorError, type RecordErrorCode } from '../../src/connectors/sdk.js';

/** The SQLite error code of a driver error (`SQLITE_CONSTRAINT_UNIQUE`), if it has one. */
export function sqliteCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

/** A per-record error for a statement failure that concerns the record alone; undefined for the others. */
export function recordErrorCode(code: string | undefined): RecordErrorCode | undefined {
  switch (code) {
    case 'SQLITE_CONSTRAINT_PRIMARYKEY':
    case 'SQLITE_CONSTRAINT_UNIQUE':
    case 'SQLITE_CONSTRAINT_ROWID':
      return 'DuplicateKey';
    case 'SQLITE_CONSTRAINT_FOREIGNKEY':
    case 'SQLITE_CONSTRAINT_NOTNULL':
    case 'SQLITE_CONSTRAINT_CHECK':
    case 'SQLITE_CONSTRAINT_TRIGGER':
    case 'SQLITE_CONSTRAINT':
      return 'ConstraintViolation';
    case 'SQLITE_MISMATCH':
    case 'SQLITE_CONSTRAINT_DATATYPE':
    case 'SQLITE_TOOBIG':
    case 'SQLITE_RANGE':
      return 'InvalidValue';
    default:
      return undefined;
  }
}

/** A whole-call failure as the ConnectorError the host maps, chosen by the SQLite code. */
export function callError(err: unknown, what: string): unknown {
  const code = sqliteCode(err);
  if (!code) return err;
  const msg = err instanceof Error ? err.message : String(err);
  if (code === 'SQLITE_CANTOPEN' || code.startsWith('SQLITE_CANTOPEN_')) return new ConnectorError('Unreachable', `${what}: the database file cannot be opened.`, { nativeCode: code, cause: err });
  if (code === 'SQLITE_PERM' || code === 'SQLITE_AUTH' || code === 'SQLITE_READONLY' || code.startsWith('SQLITE_READONLY_')) {
    return new ConnectorError('AuthFailed', `${what}: no permission (${msg}).`, { nativeCode: code, cause: err });
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') return new ConnectorError('InvalidProperties', `${what}: the file is not a usable SQLite database.`, { nativeCode: code, cause: err });
  if (code === 'SQLITE_ERROR') return new ConnectorError('InvalidQuery', `${what}: ${msg}`, { nativeCode: code, cause: err });
  if (code === 'SQLITE_INTERRUPT') return new ConnectorError('Aborted', `${what}: interrupted.`, { nativeCode: code, cause: err });
  return new ConnectorError('Datastore', `${what}: ${msg}`, { nativeCode: code, cause: err });
}
