/**
 * Versioned SQLite files of the Agent's state (agent/state.ts): a file keeps its schema version in
 * `PRAGMA user_version` — 0 for a file made before versions, whose tables are those of version 1 —
 * and is brought to the latest one migration at a time, each in one transaction with the version it
 * sets, so a file is at one version or the next, never between. A file newer than the running code
 * is refused, untouched.
 */
import type Database from 'better-sqlite3';
import { FerryError } from '../errors/ferry-error.js';

/** A SQLite file's schema: its name for messages, and its migrations (the i-th brings version i to i + 1). */
export interface StateSchema {
  readonly name: string;
  readonly migrations: readonly string[];
}

/** The version a schema's file is at once every migration ran. */
export const latestVersion = (schema: StateSchema): number => schema.migrations.length;

/**
 * Brings the file to its schema's latest version, each step in its own transaction; throws
 * AGT_STATE_NEWER when a newer Agent wrote it (nothing is changed then).
 */
export function migrateState(db: Database.Database, schema: StateSchema, file: string): void {
  const latest = latestVersion(schema);
  const at = Number(db.pragma('user_version', { simple: true }));
  if (at > latest) {
    throw new FerryError(
      'AGT_STATE_NEWER',
      `${file} (${schema.name}) was written by a newer Ferry Agent (schema version ${at}; this Agent knows up to ${latest}). Run the newer Agent, or install it over this one; this Agent changes nothing there.`,
      { details: { file, schema: schema.name, version: at, known: latest } },
    );
  }
  for (let v = at; v < latest; v++) {
    db.transaction(() => {
      db.exec(schema.migrations[v] as string);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
