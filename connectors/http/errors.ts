import { failed, type RecordErrorCode, type WriteResult } from '../../src/connectors/sdk.js';

/** How much of an answer's text a message carries. */
const MESSAGE_CHARS = 300;

/**
 * The API's own message in an error answer: the first text among the usual fields (`message`,
 * `error_description`, `error`, `detail`, `title`, also one level down as in `{ "error": {
 * "message": … } }` and in `errors[0]`), else the answer's text, shortened.
 */
export function apiMessage(text: string): string {
  const t = text.trim();
  if (t === '') return '';
  let json: unknown;
  try {
    json = JSON.parse(t);
  } catch {
    return shorten(t);
  }
  return shorten(messageOf(json) ?? t);
}

const MESSAGE_KEYS = ['message', 'error_description', 'error', 'detail', 'title', 'msg', 'description'];

function messageOf(v: unknown, depth = 0): string | undefined {
  if (depth > 2 || v === null || typeof v !== 'object') return typeof v === 'string' && v ? v : undefined;
  if (Array.isArray(v)) return messageOf(v[0], depth + 1);
  const o = v as Record<string, unknown>;
  for (const k of MESSAGE_KEYS) {
    const m = o[k];
    if (typeof m === 'string' && m) return m;
  }
  for (const k of [...MESSAGE_KEYS, 'errors']) {
    const m = o[k];
    if (m !== null && typeof m === 'object') {
      const inner = messageOf(m, depth + 1);
      if (inner) return inner;
    }
  }
  return undefined;
}

export function shorten(s: string): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > MESSAGE_CHARS ? `${one.slice(0, MESSAGE_CHARS)}…` : one;
}

/** `HTTP 422 (name is required)`: the status and the API's message, for every error naming an answer. */
export function statusText(status: number, body: string): string {
  const m = apiMessage(body);
  return m ? `HTTP ${status} (${m})` : `HTTP ${status}`;
}

/** The record error code of a refused request's status. */
export function recordCode(status: number): RecordErrorCode {
  if (status === 400 || status === 422) return 'InvalidValue';
  if (status === 404 || status === 410) return 'NotFound';
  if (status === 409) return 'DuplicateKey';
  return 'DatastoreError';
}

/** A record refused by the API: the status as nativeCode, the API's message in the text. */
export function refused(status: number, body: string, what: string): WriteResult {
  return failed(recordCode(status), `${what}: the API answered ${statusText(status, body)}.`, {
    nativeCode: String(status),
  });
}

/** Network failures before the request was sent: any request may be sent again. */
const NOT_SENT = new Set([
  'ECONNREFUSED',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);
/** Failures no retry mends: a name that does not resolve, a certificate that is refused. */
const PERMANENT = new Set([
  'ENOTFOUND',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_INVALID_URL',
]);

/** The errno or undici code of a failed fetch, found along its `cause` chain. */
export function networkCode(err: unknown): string | undefined {
  let cur: unknown = err;
  for (let i = 0; i < 5 && cur !== null && typeof cur === 'object'; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'ABORT_ERR') return code;
    const errors = (cur as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) cur = errors[0];
    else cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/** What a network failure allows: sending any request again, only an idempotent one, or none. */
export function networkRetry(code: string | undefined): 'any' | 'idempotent' | 'never' {
  if (code !== undefined && PERMANENT.has(code)) return 'never';
  if (code !== undefined && NOT_SENT.has(code)) return 'any';
  return 'idempotent';
}
