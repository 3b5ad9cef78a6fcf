import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import {
  PreparedSolution,
  RUN_TRIGGERS,
  RunMapStats,
  type RunTrigger,
  type SolutionAssignment,
} from '../protocol/solutions.js';
import { touchPrivate } from '../util/private-files.js';
import { migrateState, type StateSchema } from '../util/sqlite-schema.js';

/** A run this Agent started and has not yet reported the end of. */
export interface OpenRun {
  readonly runId: string;
  readonly solutionId: string;
  readonly trigger: RunTrigger;
  readonly startedAt: string;
  readonly dueAt: string | null;
}

/** What an open run had committed when it was last counted (./committed.ts). */
export interface CommittedWork {
  /** When it last committed a batch or began a Map or entity; null when it never did. */
  readonly at: string | null;
  /** Per Map or entity, in run order: the finished ones' statistics, and the one in progress so far. */
  readonly statistics: RunMapStats[];
}

/**
 * The Agent's copy of the Solutions assigned to it (what prepare built, with the Connections'
 * properties), and the runs it has open. One SQLite file in the instance's data folder, 0600, WAL,
 * synchronous=FULL; each definition is sealed with AES-256-GCM under a key derived from the
 * Agent's secret, because it holds datastore passwords.
 *
 * The open runs make a kill -9 visible: a run is recorded before it starts and removed once its
 * end is in the outbox, so at the next start every run still recorded ended with the process and
 * gets its ending reported then, with what it had committed: each Map or entity of an open run has
 * a row of its statistics so far, written after each counted batch. Those rows go through a
 * second connection with synchronous=NORMAL: a commit is then about 30 µs instead of a WAL fsync
 * (1.5–3 ms, most of a run's thread at 150 batches a second); a killed process loses none of them
 * (they are in the operating system's cache), a power cut the last few, and the next FULL commit
 * of the first connection makes them durable too.
 */
/** The Solution store's schema (util/sqlite-schema.ts). */
export const SOLUTIONS_SCHEMA: StateSchema = {
  name: 'solutions',
  migrations: [
    // 1: the file as first made.
    `CREATE TABLE IF NOT EXISTS solutions (solution_id TEXT PRIMARY KEY, version TEXT NOT NULL, body BLOB NOT NULL);
     CREATE TABLE IF NOT EXISTS open_runs (run_id TEXT PRIMARY KEY, solution_id TEXT NOT NULL, trigger TEXT NOT NULL, started_at TEXT NOT NULL, due_at TEXT);
     CREATE TABLE IF NOT EXISTS open_run_committed (run_id TEXT NOT NULL, seq INTEGER NOT NULL, at TEXT NOT NULL, stats TEXT NOT NULL, PRIMARY KEY (run_id, seq));`,
    // 2: runs ended with their process, and the counts of theirs reported since (claimCorrection).
    `CREATE TABLE IF NOT EXISTS ended_runs (run_id TEXT PRIMARY KEY, ended_at TEXT NOT NULL);
     CREATE TABLE IF NOT EXISTS ended_run_counts (run_id TEXT NOT NULL, part TEXT NOT NULL, processed INTEGER NOT NULL, PRIMARY KEY (run_id, part));`,
  ],
};

export class SolutionStore {
  readonly #db: Database.Database;
  /** The same file, for the committed counts of open runs (see above). */
  readonly #counts: Database.Database;
  readonly #saveCommitted: Database.Statement;
  readonly #key: Buffer;

  constructor(file: string, agentSecret: string) {
    touchPrivate(file);
    this.#db = new Database(file);
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = FULL');
    try {
      migrateState(this.#db, SOLUTIONS_SCHEMA, file);
    } catch (err) {
      this.#db.close();
      throw err;
    }
    this.#counts = new Database(file);
    this.#counts.pragma('synchronous = NORMAL');
    this.#counts.pragma('busy_timeout = 5000');
    // Only while the run is open: a late write after its end leaves nothing behind.
    this.#saveCommitted = this.#counts.prepare(
      'INSERT INTO open_run_committed (run_id, seq, at, stats) SELECT @runId, @seq, @at, @stats WHERE EXISTS (SELECT 1 FROM open_runs WHERE run_id = @runId) ON CONFLICT (run_id, seq) DO UPDATE SET at = excluded.at, stats = excluded.stats',
    );
    this.#key = Buffer.from(hkdfSync('sha256', agentSecret, 'ferry-agent-solutions', 'solution definitions', 32));
  }

  /**
   * Keeps only the assigned Solutions (the others are dropped at once) and answers the IDs whose
   * definition it lacks at the assigned version.
   */
  assign(assignments: readonly SolutionAssignment[]): string[] {
    const wanted = new Map(assignments.map((a) => [a.solutionId, a.version]));
    const held = this.#db.prepare('SELECT solution_id AS id, version FROM solutions').all() as Array<{
      id: string;
      version: string;
    }>;
    const drop = this.#db.prepare('DELETE FROM solutions WHERE solution_id = ?');
    this.#db.transaction(() => {
      for (const h of held) if (!wanted.has(h.id)) drop.run(h.id);
    })();
    const current = new Map(held.map((h) => [h.id, h.version]));
    return [...wanted].filter(([id, version]) => current.get(id) !== version).map(([id]) => id);
  }

  put(solution: PreparedSolution): void {
    this.#db
      .prepare(
        'INSERT INTO solutions (solution_id, version, body) VALUES (?, ?, ?) ON CONFLICT (solution_id) DO UPDATE SET version = excluded.version, body = excluded.body',
      )
      .run(solution.solutionId, solution.version, this.#seal(JSON.stringify(solution)));
  }

  get(solutionId: string): PreparedSolution | undefined {
    const row = this.#db.prepare('SELECT body FROM solutions WHERE solution_id = ?').get(solutionId) as
      { body: Buffer } | undefined;
    return row ? this.#open(row.body) : undefined;
  }

  list(): PreparedSolution[] {
    const rows = this.#db.prepare('SELECT body FROM solutions ORDER BY solution_id').all() as Array<{ body: Buffer }>;
    return rows.flatMap((r) => {
      const s = this.#open(r.body);
      return s ? [s] : [];
    });
  }

  openRun(run: OpenRun): void {
    this.#db.transaction(() => {
      this.#db
        .prepare(
          'INSERT OR REPLACE INTO open_runs (run_id, solution_id, trigger, started_at, due_at) VALUES (?, ?, ?, ?, ?)',
        )
        .run(run.runId, run.solutionId, run.trigger, run.startedAt, run.dueAt);
      this.#db.prepare('DELETE FROM open_run_committed WHERE run_id = ?').run(run.runId);
    })();
  }

  /**
   * Closes the open run. `endedWithProcess`: it ended with an earlier Agent process (recover()), so
   * a target checkpoint may hold more of its work than it was counted with (claimCorrection()).
   */
  closeRun(runId: string, endedWithProcess = false): void {
    this.#db.transaction(() => {
      this.#db.prepare('DELETE FROM open_runs WHERE run_id = ?').run(runId);
      this.#db.prepare('DELETE FROM open_run_committed WHERE run_id = ?').run(runId);
      if (!endedWithProcess) return;
      const now = new Date();
      this.#db
        .prepare('INSERT OR REPLACE INTO ended_runs (run_id, ended_at) VALUES (?, ?)')
        .run(runId, now.toISOString());
      // A checkpoint not written over in 90 days belongs to a Map nobody runs.
      const old = new Date(now.getTime() - 90 * 86_400_000).toISOString();
      this.#db
        .prepare('DELETE FROM ended_run_counts WHERE run_id IN (SELECT run_id FROM ended_runs WHERE ended_at < ?)')
        .run(old);
      this.#db.prepare('DELETE FROM ended_runs WHERE ended_at < ?').run(old);
    })();
  }

  /**
   * Whether counts a target checkpoint holds of run `runId` for `part` (a Map or an entity) are to
   * be reported: the run ended with an earlier Agent process and they were not reported with as
   * many processed records before. True once per new figure; recorded as reported.
   */
  claimCorrection(runId: string, part: string, processed: number): boolean {
    return this.#db.transaction(() => {
      if (!this.#db.prepare('SELECT 1 FROM ended_runs WHERE run_id = ?').get(runId)) return false;
      const before = this.#db
        .prepare('SELECT processed FROM ended_run_counts WHERE run_id = ? AND part = ?')
        .get(runId, part) as { processed: number } | undefined;
      if (before && before.processed >= processed) return false;
      this.#db
        .prepare('INSERT OR REPLACE INTO ended_run_counts (run_id, part, processed) VALUES (?, ?, ?)')
        .run(runId, part, processed);
      return true;
    })();
  }

  /**
   * Records what the open run has committed of its `seq`-th Map or entity (0, 1, …): `stats` is
   * its RunMapStats as JSON, `at` when it was counted. One small write; nothing once the run is closed.
   */
  saveCommitted(runId: string, seq: number, at: string, stats: string): void {
    this.#saveCommitted.run({ runId, seq, at, stats });
  }

  /** What the open run had committed when it was last counted; rows that no longer read as statistics are left out. */
  committed(runId: string): CommittedWork {
    const rows = this.#db
      .prepare('SELECT at, stats FROM open_run_committed WHERE run_id = ? ORDER BY seq')
      .all(runId) as Array<{ at: string; stats: string }>;
    let at: string | null = null;
    const statistics: RunMapStats[] = [];
    for (const r of rows) {
      if (at === null || r.at > at) at = r.at;
      const parsed = RunMapStats.safeParse(parseJson(r.stats));
      if (parsed.success) statistics.push(parsed.data);
    }
    return { at, statistics };
  }

  openRuns(): OpenRun[] {
    const rows = this.#db
      .prepare('SELECT run_id, solution_id, trigger, started_at, due_at FROM open_runs ORDER BY started_at')
      .all() as Array<{
      run_id: string;
      solution_id: string;
      trigger: string;
      started_at: string;
      due_at: string | null;
    }>;
    return rows.map((r) => ({
      runId: r.run_id,
      solutionId: r.solution_id,
      trigger: (RUN_TRIGGERS as readonly string[]).includes(r.trigger) ? (r.trigger as RunTrigger) : 'start',
      startedAt: r.started_at,
      dueAt: r.due_at,
    }));
  }

  close(): void {
    if (this.#counts.open) this.#counts.close();
    if (this.#db.open) this.#db.close();
  }

  #seal(text: string): Buffer {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.#key, iv);
    const body = Buffer.concat([c.update(text, 'utf8'), c.final()]);
    return Buffer.concat([iv, c.getAuthTag(), body]);
  }

  /** A definition that no longer opens (another secret, a damaged file) is treated as missing: the next assignment sends it again. */
  #open(blob: Buffer): PreparedSolution | undefined {
    try {
      const d = createDecipheriv('aes-256-gcm', this.#key, blob.subarray(0, 12));
      d.setAuthTag(blob.subarray(12, 28));
      const text = Buffer.concat([d.update(blob.subarray(28)), d.final()]).toString('utf8');
      const parsed = PreparedSolution.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
