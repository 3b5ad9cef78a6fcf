import { ConnectorError, isConnectorError, type ConnectorErrorReason } from '../../src/connectors/sdk.js';

/** JetStream API error codes (`err_code`) this connector meets. */
export const JS_STREAM_NOT_FOUND = 10059;
export const JS_CONSUMER_NOT_FOUND = 10014;

/** nats.js error codes, by the reason they mean here. */
const CODES: Record<string, ConnectorErrorReason> = {
  CONNECTION_REFUSED: 'Unreachable',
  CONNECTION_TIMEOUT: 'Unreachable',
  CONNECTION_CLOSED: 'Unreachable',
  DISCONNECT: 'Unreachable',
  TIMEOUT: 'Unreachable',
  '503': 'Unreachable', // no responders: JetStream is not enabled or not reachable
  AUTHORIZATION_VIOLATION: 'AuthFailed',
  AUTHENTICATION_EXPIRED: 'AuthFailed',
  AUTHENTICATION_TIMEOUT: 'AuthFailed',
  BAD_AUTHENTICATION: 'AuthFailed',
  BAD_CREDS: 'AuthFailed',
  PERMISSIONS_VIOLATION: 'AuthFailed',
  ACCOUNT_EXPIRED: 'AuthFailed',
  BAD_SUBJECT: 'InvalidQuery',
};

/** A nats.js error as a ConnectorError, by its code (and a JetStream API error by its `err_code`). */
export function natsError(err: unknown, what: string): ConnectorError {
  if (isConnectorError(err)) return err;
  const e = err as { code?: unknown; message?: unknown; api_error?: { code?: number; err_code?: number } };
  const message = `${what}: ${typeof e.message === 'string' ? e.message : String(err)}`;
  const api = e.api_error;
  if (api?.err_code === JS_STREAM_NOT_FOUND || api?.err_code === JS_CONSUMER_NOT_FOUND)
    return new ConnectorError('EntityNotFound', message, { nativeCode: String(api.err_code) });
  if (api) return new ConnectorError('Datastore', message, { nativeCode: String(api.err_code ?? api.code) });
  const code = typeof e.code === 'string' ? e.code : undefined;
  const reason: ConnectorErrorReason =
    code !== undefined ? (CODES[code] ?? 'Datastore') : typeof e.code === 'number' ? 'Datastore' : 'Unreachable';
  return new ConnectorError(reason, message, code !== undefined ? { nativeCode: code } : {});
}
