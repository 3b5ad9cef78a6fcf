import type { Selectable } from 'kysely';

/**
 * A signed-in session of the web console (migration 040, service/http/console/sessions.ts). The
 * token itself is only in the browser's cookie: the row holds its SHA-256, so a copy of the store
 * opens no session.
 */
export interface ConsoleSessionsTable {
  /** SHA-256 (hex) of the session token. */
  tokenHash: string;
  userId: string;
  /** SHA-256 of the user's password hash when the session began: a new password ends the session. */
  passwordStamp: string;
  createdAt: string;
  /** The last request made with the session (written at most once a minute). */
  lastSeenAt: string;
  /** The latest moment the session can last to, however busy. */
  expiresAt: string;
}

export type ConsoleSessionRow = Selectable<ConsoleSessionsTable>;

/** The tables of the web console. */
export interface ConsoleTables {
  consoleSessions: ConsoleSessionsTable;
}
