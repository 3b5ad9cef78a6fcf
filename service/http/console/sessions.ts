import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { sha256 } from '../../auth/password.js';
import { consoleSessionsRepo } from '../../store/repos/console-sessions.repo.js';
import { getUser } from '../../store/repos/users.repo.js';
import type { UserRow } from '../../store/schema.js';
import type { Db } from '../../store/sql.js';

/**
 * The web console's sessions: a random token in an HttpOnly cookie, its SHA-256 in the store (so
 * that every replica sharing the store knows it), and the user it stands for. The cookie counts
 * only on requests that also carry the header `X-Ferry-Console: 1`: a browser sends a custom
 * header only from a script of the page's own origin (anything else needs a CORS preflight, which
 * the Service never grants), so a form or script of another site cannot use the cookie.
 *
 *   browser ── POST /console/session {email, password} + X-Ferry-Console ──▶ password check (guard)
 *           ◀── Set-Cookie: ferry_session=<token>; HttpOnly; SameSite=Strict; Path=/ ──┘
 *   browser ── GET /v1/… + Cookie + X-Ferry-Console ──▶ guard: session → user → roles, Security Rules
 */

/** The cookie's name. */
export const SESSION_COOKIE = 'ferry_session';
/** The header without which the cookie does not count (any value but `1` is refused). */
export const CONSOLE_HEADER = 'x-ferry-console';
/** A session unused this long has ended. */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000;
/** No session lasts longer than this, however busy. */
export const SESSION_MAX_MS = 7 * 24 * 60 * 60 * 1000;
/** The last-seen time is written at most this often per session. */
const TOUCH_EVERY_MS = 60 * 1000;

const ended = (): FerryError =>
  new FerryError(
    'API_UNAUTHENTICATED',
    'Your console session has ended (signed out, or unused for 12 hours); sign in again.',
  );

/** The value of the cookie `name` in a Cookie header, undefined when absent. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Whether the request carries the console's header (`X-Ferry-Console: 1`). */
export function fromConsole(req: FastifyRequest): boolean {
  return req.headers[CONSOLE_HEADER] === '1';
}

/** The token as the cookie holds it: 32 random bytes, base64url (43 characters). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface ConsoleSessions {
  /**
   * The user of the request's session cookie, undefined when the request carries no such cookie.
   * Throws API_UNAUTHENTICATED when the cookie comes without the console's header, or names a
   * session that has ended.
   */
  userOf(req: FastifyRequest): Promise<UserRow | undefined>;
  /** Starts a session for `user` and sets its cookie on the reply. */
  begin(req: FastifyRequest, reply: FastifyReply, user: UserRow): Promise<void>;
  /** Ends the request's session, if any, and clears the cookie. */
  end(req: FastifyRequest, reply: FastifyReply): Promise<void>;
}

export function consoleSessions(db: Db): ConsoleSessions {
  const repo = consoleSessionsRepo(db);
  const stampOf = (user: UserRow): string => sha256(user.passwordHash ?? '');
  const cookie = (req: FastifyRequest, value: string, maxAgeSeconds: number): string =>
    [
      `${SESSION_COOKIE}=${value}`,
      'Path=/',
      'HttpOnly',
      'SameSite=Strict',
      `Max-Age=${maxAgeSeconds}`,
      ...(req.protocol === 'https' ? ['Secure'] : []),
    ].join('; ');

  return {
    async userOf(req) {
      const token = cookieValue(req.headers.cookie, SESSION_COOKIE);
      if (token === undefined) return undefined;
      if (!fromConsole(req)) {
        throw new FerryError(
          'API_UNAUTHENTICATED',
          `The console's session cookie counts only together with the header X-Ferry-Console: 1, which the console sends. Other clients authenticate with HTTP Basic.`,
        );
      }
      if (!TOKEN.test(token)) throw ended();
      const hash = sha256(token);
      const session = await repo.get(hash);
      const now = Date.now();
      if (!session) throw ended();
      if (Date.parse(session.lastSeenAt) + SESSION_IDLE_MS < now || Date.parse(session.expiresAt) < now) {
        await repo.delete(hash);
        throw ended();
      }
      const user = await getUser(db, session.userId);
      // A deleted account or a new password ends the sessions opened before it.
      if (!user || stampOf(user) !== session.passwordStamp) {
        await repo.delete(hash);
        throw ended();
      }
      if (Date.parse(session.lastSeenAt) + TOUCH_EVERY_MS < now) await repo.touch(hash, new Date(now).toISOString());
      return user;
    },

    async begin(req, reply, user) {
      const now = Date.now();
      // Sessions ended by time go when a new one starts: the table holds live sessions only, give or take.
      await repo.deleteExpired(new Date(now - SESSION_IDLE_MS).toISOString(), new Date(now).toISOString());
      const token = randomBytes(32).toString('base64url');
      await repo.insert({
        tokenHash: sha256(token),
        userId: user.id,
        passwordStamp: stampOf(user),
        createdAt: new Date(now).toISOString(),
        lastSeenAt: new Date(now).toISOString(),
        expiresAt: new Date(now + SESSION_MAX_MS).toISOString(),
      });
      void reply.header('Set-Cookie', cookie(req, token, Math.floor(SESSION_MAX_MS / 1000)));
    },

    async end(req, reply) {
      const token = cookieValue(req.headers.cookie, SESSION_COOKIE);
      if (token !== undefined && TOKEN.test(token)) await repo.delete(sha256(token));
      void reply.header('Set-Cookie', cookie(req, '', 0));
    },
  };
}
