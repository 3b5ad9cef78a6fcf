import { ConnectorError, type ConnectionProperties } from '../../src/connectors/sdk.js';
import { parseDefinition, type Definition } from './definition.js';

export const AUTH_TYPES = ['none', 'basic', 'bearer', 'apiKey', 'oauth2'] as const;
export type AuthType = (typeof AUTH_TYPES)[number];

/** How a request authenticates; secrets stay in this object and never reach a message or a log line. */
export type AuthProps =
  | { type: 'none' }
  | { type: 'basic'; username: string; password: string }
  | { type: 'bearer'; token: string }
  | { type: 'apiKey'; name: string; in: 'header' | 'query'; key: string }
  | {
      type: 'oauth2';
      tokenUrl: URL;
      clientId: string;
      clientSecret: string;
      scope: string | undefined;
      clientAuth: 'body' | 'basic';
    };

/** The Connection's properties, parsed once in `connect`. */
export interface HttpProps {
  /** Always ends with `/`, so entity paths resolve below it. */
  baseUrl: URL;
  auth: AuthProps;
  definition: Definition;
  headers: Readonly<Record<string, string>>;
  timeoutMs: number;
  maxRetries: number;
  retryDelayMs: number;
  maxWaitMs: number;
  /** 0 = no limit. */
  requestsPerSecond: number;
  /** Most per-record write requests of one call in flight at once. */
  concurrency: number;
}

const invalid = (message: string): ConnectorError => new ConnectorError('InvalidProperties', message);

/**
 * Connection properties → {@link HttpProps}. Messages name the property, never the value of a
 * protected one (password, token, apiKey, clientSecret).
 */
export function parseProps(p: ConnectionProperties): HttpProps {
  const text = (k: string): string | undefined => {
    const v = p[k]?.trim();
    return v ? v : undefined;
  };
  const secret = (k: string, forAuth: string): string => {
    const v = p[k];
    if (!v) throw invalid(`Authentication ${forAuth} needs the property ${k}.`);
    return v;
  };
  const num = (k: string, dflt: number, min: number, max: number, whole: boolean): number => {
    const v = text(k);
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || n > max || (whole && !Number.isInteger(n)))
      throw invalid(`The property ${k} must be a ${whole ? 'whole ' : ''}number from ${min} to ${max}.`);
    return n;
  };
  const base = text('baseUrl');
  if (!base) throw invalid('Give the property baseUrl: the http(s) URL of the API.');
  const baseUrl = httpUrl(base, 'baseUrl');
  if (!baseUrl.pathname.endsWith('/')) baseUrl.pathname += '/';
  const definitionText = text('definition');
  if (!definitionText) throw invalid('Give the property definition: the JSON text of the API entities.');
  return {
    baseUrl,
    auth: parseAuth(p, text, secret),
    definition: parseDefinition(definitionText),
    headers: parseHeaders(text('headers')),
    timeoutMs: Math.round(num('timeoutSeconds', 30, 0.01, 3600, false) * 1000),
    maxRetries: num('maxRetries', 5, 0, 50, true),
    retryDelayMs: num('retryDelayMs', 1000, 0, 600_000, true),
    maxWaitMs: Math.round(num('maxWaitSeconds', 120, 0, 3600, false) * 1000),
    requestsPerSecond: num('requestsPerSecond', 0, 0, 100_000, false),
    concurrency: num('concurrency', 4, 1, 64, true),
  };
}

function parseAuth(
  p: ConnectionProperties,
  text: (k: string) => string | undefined,
  secret: (k: string, forAuth: string) => string,
): AuthProps {
  const type = text('authType') ?? 'none';
  switch (type as AuthType) {
    case 'none':
      return { type: 'none' };
    case 'basic': {
      const username = text('username');
      if (!username) throw invalid('Authentication basic needs the property username.');
      return { type: 'basic', username, password: p['password'] ?? '' };
    }
    case 'bearer':
      return { type: 'bearer', token: secret('token', 'bearer') };
    case 'apiKey': {
      const where = text('apiKeyIn') ?? 'header';
      if (where !== 'header' && where !== 'query') throw invalid('The property apiKeyIn must be header or query.');
      const name = text('apiKeyName') ?? 'X-API-Key';
      if (where === 'header' && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name))
        throw invalid('The property apiKeyName must be a valid header name.');
      return { type: 'apiKey', name, in: where, key: secret('apiKey', 'apiKey') };
    }
    case 'oauth2': {
      const url = text('tokenUrl');
      const clientId = text('clientId');
      if (!url) throw invalid('Authentication oauth2 needs the property tokenUrl.');
      if (!clientId) throw invalid('Authentication oauth2 needs the property clientId.');
      const clientAuth = text('clientAuth') ?? 'body';
      if (clientAuth !== 'body' && clientAuth !== 'basic')
        throw invalid('The property clientAuth must be body or basic.');
      return {
        type: 'oauth2',
        tokenUrl: httpUrl(url, 'tokenUrl'),
        clientId,
        clientSecret: secret('clientSecret', 'oauth2'),
        scope: text('scope'),
        clientAuth,
      };
    }
    default:
      throw invalid(`The property authType must be one of ${AUTH_TYPES.join(', ')}.`);
  }
}

function httpUrl(text: string, property: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(`The property ${property} is not a URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalid(`The property ${property} must be an http or https URL.`);
  // Credentials in the URL would travel in every message that names it.
  if (url.username || url.password)
    throw invalid(`The property ${property} must not hold a user or password: use the authentication properties.`);
  return url;
}

function parseHeaders(text: string | undefined): Record<string, string> {
  if (!text) return {};
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalid('The property headers must be a JSON object of header names and values.');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw invalid('The property headers must be a JSON object of header names and values.');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(json)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k)) throw invalid(`The property headers names an invalid header ${k}.`);
    if (typeof v !== 'string' && typeof v !== 'number')
      throw invalid(`The property headers gives ${k} a value that is not text.`);
    out[k.toLowerCase()] = String(v);
  }
  return out;
}
