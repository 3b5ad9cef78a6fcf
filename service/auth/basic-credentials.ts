import { isUtf8 } from 'node:buffer';

/** Longest login name (an email address) Basic authentication accepts. */
export const MAX_LOGIN_LENGTH = 320;
/** Longest password Basic authentication accepts; no password can be set longer. */
export const MAX_PASSWORD_LENGTH = 1024;

/** Credentials of an `Authorization: Basic` header, as sent. */
export interface BasicCredentials {
  readonly email: string;
  readonly password: string;
  /**
   * False when no account can have them, so they must not reach the store: bytes that are not
   * UTF-8 (RFC 7617's charset, which the Service announces), a NUL (PostgreSQL text cannot hold
   * one, and its query fails instead of finding nothing), or a login or password longer than any
   * the Service accepts.
   */
  readonly holdable: boolean;
}

/**
 * Reads HTTP Basic credentials; undefined when the header is absent, not Basic, or has no login
 * name before its colon. Bytes that are not UTF-8 are decoded with U+FFFD in their place (so the
 * login throttle can still count the attempt under the login as sent) and marked not holdable.
 */
export function basicCredentials(header: string | undefined): BasicCredentials | undefined {
  if (!header || !/^basic /i.test(header)) return undefined;
  const bytes = Buffer.from(header.slice(6).trim(), 'base64');
  const decoded = bytes.toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  const email = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  // Valid UTF-8 never decodes to a lone surrogate, so isUtf8 also rules those out.
  const holdable =
    isUtf8(bytes) &&
    !decoded.includes('\u0000') &&
    email.length <= MAX_LOGIN_LENGTH &&
    password.length <= MAX_PASSWORD_LENGTH;
  return { email, password, holdable };
}
