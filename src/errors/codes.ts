/**
 * The one table of Ferry error codes. Each code names its kind (who must act), the HTTP status the
 * REST API answers with, and a title. Codes are never reused; `docs/errors.md` documents each one
 * and a unit test keeps the two in step.
 */

/** `config`: the user must change something; `transient`: a retry may help; `system`: a bug or a broken environment. */
export type ErrorKind = 'config' | 'transient' | 'system';

export interface ErrorSpec {
  readonly kind: ErrorKind;
  readonly status: number;
  readonly title: string;
}

export const ERROR_CODES = {
  API_VALIDATION: { kind: 'config', status: 400, title: 'The request is not valid' },
  API_MALFORMED_BODY: { kind: 'config', status: 400, title: 'The request body could not be read' },
  API_UNSUPPORTED: { kind: 'config', status: 400, title: 'The operation is not supported' },
  API_INVALID_IP_RANGE: { kind: 'config', status: 400, title: 'The IP range is not valid' },
  API_UNAUTHENTICATED: { kind: 'config', status: 401, title: 'Authentication is required' },
  API_FORBIDDEN_ROLE: { kind: 'config', status: 403, title: 'Your role does not allow this operation' },
  API_FORBIDDEN_IP: { kind: 'config', status: 403, title: 'API access is not allowed from your IP address' },
  API_PLATFORM_HOSTED: { kind: 'config', status: 403, title: 'Not supported for platform-hosted Organizations' },
  API_NOT_FOUND: { kind: 'config', status: 404, title: 'The resource was not found' },
  API_ROUTE_NOT_FOUND: { kind: 'config', status: 404, title: 'No such endpoint' },
  API_CONFLICT: { kind: 'config', status: 409, title: 'The request conflicts with the current state' },
  API_DUPLICATE_NAME: { kind: 'config', status: 409, title: 'The name is already in use' },
  API_IN_USE: { kind: 'config', status: 409, title: 'The resource is in use' },
  API_PAYLOAD_TOO_LARGE: { kind: 'config', status: 413, title: 'The request body is too large' },
  API_UNSUPPORTED_MEDIA_TYPE: { kind: 'config', status: 415, title: 'The content type is not supported' },
  API_RATE_LIMITED: { kind: 'transient', status: 429, title: 'Too many requests' },
  SVC_INTERNAL: { kind: 'system', status: 500, title: 'Internal error' },
  SVC_UNAVAILABLE: { kind: 'transient', status: 503, title: 'The Service is temporarily unavailable' },
  SVC_CONFIG: { kind: 'config', status: 500, title: 'The Service configuration is not valid' },
  SVC_STORE: { kind: 'system', status: 500, title: 'The store failed' },
  SVC_NO_SUBSCRIPTION: { kind: 'config', status: 409, title: 'The Organization has no current Subscription for this service type' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function errorSpec(code: ErrorCode): ErrorSpec {
  return ERROR_CODES[code];
}
