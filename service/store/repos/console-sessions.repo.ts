import type { ConsoleSessionRow } from '../schema-console.js';
import type { Db } from '../sql.js';

/** The web console's sessions, by the hash of their token (migration 040). */
export function consoleSessionsRepo(db: Db) {
  return {
    async insert(row: ConsoleSessionRow): Promise<void> {
      await db.insertInto('consoleSessions').values(row).execute();
    },
    async get(tokenHash: string): Promise<ConsoleSessionRow | undefined> {
      return db.selectFrom('consoleSessions').selectAll().where('tokenHash', '=', tokenHash).executeTakeFirst();
    },
    async touch(tokenHash: string, lastSeenAt: string): Promise<void> {
      await db.updateTable('consoleSessions').set({ lastSeenAt }).where('tokenHash', '=', tokenHash).execute();
    },
    async delete(tokenHash: string): Promise<void> {
      await db.deleteFrom('consoleSessions').where('tokenHash', '=', tokenHash).execute();
    },
    /** Removes the sessions idle since before `idleBefore` or past their end at `now`; answers how many. */
    async deleteExpired(idleBefore: string, now: string): Promise<number> {
      const res = await db
        .deleteFrom('consoleSessions')
        .where((eb) => eb.or([eb('lastSeenAt', '<', idleBefore), eb('expiresAt', '<', now)]))
        .executeTakeFirst();
      return Number(res.numDeletedRows);
    },
  };
}

export type ConsoleSessionsRepo = ReturnType<typeof consoleSessionsRepo>;
