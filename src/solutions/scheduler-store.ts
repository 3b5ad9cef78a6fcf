import Database from 'better-sqlite3';
import { touchPrivate } from '../util/private-files.js';
import { migrateState, type StateSchema } from '../util/sqlite-schema.js';

/**
 * What the Agent's scheduler keeps across restarts, one row per scheduled Solution: the
 * assignment it was given (version, rule, disabled) and `handled_until`, the latest due time it
 * has fired or skipped. Every due time at or before `handled_until` is done with, so a due time
 * is handled at most once however often the Agent restarts or its clock goes back. The last
 * fired due time and its run ID are kept beside it, for the runner to find a run that a crash
 * lost between the record and its start.
 *
 * SQLite in WAL mode with `synchronous=FULL`, like the outbox: a record that `advance` returned
 * from survives a kill -9 and a power cut, and the scheduler calls `fire` only after that.
 */

/** The assignment of one Solution, as `reconcile` compares it. */
export interface GivenSchedule {
  solutionId: string;
  version: string;
  rule: string;
  disabled: boolean;
}

/** One Solution's due times handled by one tick of the scheduler. */
export interface Handled {
  solutionId: string;
  handledUntil: number;
  /** The due time that started a run, and the run's ID. */
  fired?: { dueAt: number; runId: string };
}

/** The run a due time last started. */
export interface LastFired {
  dueAt: Date;
  runId: string;
  /** When it was recorded. */
  at: Date;
}

interface Row {
  solution_id: string;
  version: string;
  rule: string;
  disabled: number;
  handled_until: string;
}

/** The schedule store's schema (util/sqlite-schema.ts): version 1 is the file as first made. */
export const SCHEDULES_SCHEMA: StateSchema = {
  name: 'schedules',
  migrations: [
    `CREATE TABLE IF NOT EXISTS schedules (
       solution_id TEXT PRIMARY KEY,
       version TEXT NOT NULL,
       rule TEXT NOT NULL,
       disabled INTEGER NOT NULL,
       handled_until TEXT NOT NULL,
       fired_due TEXT,
       run_id TEXT,
       fired_at TEXT
     );`,
  ],
};

export class ScheduleStore {
  private readonly db: Database.Database;
  private readonly selectAll: Database.Statement<[], Row>;
  private readonly upsert: Database.Statement<[string, string, string, number, string]>;
  private readonly setDisabled: Database.Statement<[number, string]>;
  private readonly remove: Database.Statement<[string]>;
  private readonly markHandled: Database.Statement<[string, string]>;
  private readonly markFired: Database.Statement<[string, string, string, string, string]>;
  private readonly selectFired: Database.Statement<
    [string],
    { fired_due: string | null; run_id: string | null; fired_at: string | null }
  >;

  constructor(file: string) {
    // The file names the Solutions this Agent runs: private before SQLite opens it, so -wal and -shm are too.
    touchPrivate(file);
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    try {
      migrateState(this.db, SCHEDULES_SCHEMA, file);
    } catch (err) {
      this.db.close();
      throw err;
    }
    this.selectAll = this.db.prepare('SELECT solution_id, version, rule, disabled, handled_until FROM schedules');
    this.upsert = this.db.prepare(
      `INSERT INTO schedules (solution_id, version, rule, disabled, handled_until) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (solution_id) DO UPDATE SET version = excluded.version, rule = excluded.rule,
         disabled = excluded.disabled, handled_until = excluded.handled_until`,
    );
    this.setDisabled = this.db.prepare('UPDATE schedules SET disabled = ? WHERE solution_id = ?');
    this.remove = this.db.prepare('DELETE FROM schedules WHERE solution_id = ?');
    this.markHandled = this.db.prepare('UPDATE schedules SET handled_until = ? WHERE solution_id = ?');
    this.markFired = this.db.prepare(
      'UPDATE schedules SET handled_until = ?, fired_due = ?, run_id = ?, fired_at = ? WHERE solution_id = ?',
    );
    this.selectFired = this.db.prepare('SELECT fired_due, run_id, fired_at FROM schedules WHERE solution_id = ?');
  }

  /**
   * Makes the stored set the given one, in one transaction, and answers each given Solution's
   * `handledUntil`. A Solution new here, at another version or rule, or enabled again starts at
   * `now`: its first due time is the first after this moment, never one in the past. One not
   * given is forgotten.
   */
  reconcile(given: GivenSchedule[], now: number): Map<string, number> {
    const out = new Map<string, number>();
    this.db.transaction(() => {
      const stored = new Map(this.selectAll.all().map((row) => [row.solution_id, row]));
      const at = new Date(now).toISOString();
      for (const g of given) {
        const row = stored.get(g.solutionId);
        stored.delete(g.solutionId);
        if (!row || row.version !== g.version || row.rule !== g.rule || (row.disabled === 1 && !g.disabled)) {
          this.upsert.run(g.solutionId, g.version, g.rule, g.disabled ? 1 : 0, at);
          out.set(g.solutionId, now);
          continue;
        }
        if ((row.disabled === 1) !== g.disabled) this.setDisabled.run(g.disabled ? 1 : 0, g.solutionId);
        out.set(g.solutionId, Date.parse(row.handled_until));
      }
      for (const solutionId of stored.keys()) this.remove.run(solutionId);
    })();
    return out;
  }

  /** Records what one tick handled, in one transaction: all of it is durable when this returns, or none. */
  advance(handled: Handled[], now: number): void {
    if (handled.length === 0) return;
    const at = new Date(now).toISOString();
    this.db.transaction(() => {
      for (const h of handled) {
        const until = new Date(h.handledUntil).toISOString();
        if (h.fired) this.markFired.run(until, new Date(h.fired.dueAt).toISOString(), h.fired.runId, at, h.solutionId);
        else this.markHandled.run(until, h.solutionId);
      }
    })();
  }

  /** The due time that last started a run of the Solution here, with the run's ID. */
  lastFired(solutionId: string): LastFired | undefined {
    const row = this.selectFired.get(solutionId);
    if (!row?.fired_due || !row.run_id || !row.fired_at) return undefined;
    return { dueAt: new Date(row.fired_due), runId: row.run_id, at: new Date(row.fired_at) };
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
