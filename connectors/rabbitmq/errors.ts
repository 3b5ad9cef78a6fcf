import { ConnectorError, isConnectorError, type ConnectorErrorReason } from '../../src/connectors/sdk.js';

/** AMQP reply codes that close a channel or the connection, by the reason they mean here. */
const REPLY_CODES: Record<number, ConnectorErrorReason> = {
  403: 'AuthFailed', // ACCESS_REFUSED: the user may not use the vhost or the queue
  404: 'EntityNotFound', // NOT_FOUND: no such queue
  405: 'Datastore', // RESOURCE_LOCKED: an exclusive queue of another connection
  406: 'Datastore', // PRECONDITION_FAILED
  530: 'AuthFailed', // NOT_ALLOWED: no access to the vhost
  320: 'Unreachable', // CONNECTION_FORCED: the broker closed the connection (shutting down)
};

/** Socket errors: the broker cannot be reached. */
const UNREACHABLE = new Set([
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
 * An amqplib error as a ConnectorError, by its code: the AMQP reply code of a closed channel or
 * connection, or the socket's errno. amqplib gives a refused login no code (the broker closes the
 * handshake after the credentials, and amqplib reports only the text); an error of `connect` with
 * neither code is that, so `during` says whether the error came from connecting.
 */
export function amqpError(err: unknown, what: string, during: 'connect' | 'use' = 'use'): ConnectorError {
  if (isConnectorError(err)) return err;
  const e = err as { code?: unknown; message?: unknown };
  const message = `${what}: ${typeof e.message === 'string' ? e.message : String(err)}`;
  if (typeof e.code === 'number') {
    return new ConnectorError(REPLY_CODES[e.code] ?? 'Datastore', message, { nativeCode: String(e.code) });
  }
  if (typeof e.code === 'string') {
    return new ConnectorError(UNREACHABLE.has(e.code) ? 'Unreachable' : 'Datastore', message, { nativeCode: e.code });
  }
  return new ConnectorError(during === 'connect' ? 'AuthFailed' : 'Datastore', message);
}
