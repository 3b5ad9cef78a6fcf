import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { PreparedSolution, type RunTrigger, type SolutionAssignment } from '../protocol/solutions.js';
import { touchPrivate } from '../util/private-files.js';

/** A run this Agent started and has not yet reported the end of. */
export interface OpenRun {
  readonly runId: string;
  readonly solutionId: string;
  readonly trigger: RunTrigger;
  readonly startedAt: string;
  readonly dueAt: string | null;
}

/**
 * The Agent's copy of the Solutions assigned to it (what prepare built, with the Connections'
 * properties), and the runs it has open. One SQLite file in the instance's data folder, 0600, WAL,
 * synchronous=FULL; each definition is sealed with AES-256-GCM under a key derived from the
 * Agent's secret, because it holds datastore passwords.
 *
 * The open runs make a kill -9 visible: a run is recorded before it starts and removed once its
 * end is in the outbox, so at the next start every run still recorded ended with the process and
 * gets its ending reported then.
 */
export class SolutionStore {
  readonly #db: Database.Database;
  readonly #key: Buffer;

  constructor(file: string, agentSecret: string) {
    touchPrivate(file);
    this.#db = new Database(file);
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = FULL');
    this.#db.exec(`
      CREATE TABLE IF NOT EXISTS solutions (solution_id TEXT PRIMARY KEY, version TEXT NOT NULL, body BLOB NOT NULL);
      CREATE TABLE IF NOT EXISTS open_runs (run_id TEXT PRIMARY KEY, solution_id TEXT NOT NULL, trigger TEXT NOT NULL, started_at TEXT NOT NULL, due_at TEXT);
    `);
    this.#key = Buffer.from(hkdfSync('sha256', agentSecret, 'ferry-agent-solutions', 'solution definitions', 32));
  }

  /**
   * Keeps only the assigned Solutions (the others are dropped at once) and answers the IDs whose
   * definition it lacks at the assigned version.
   */
  assign(assignments: readonly SolutionAssignment[]): string[] {
    const wanted = new Map(assignments.map((a) => [a.solutionId, a.version]));
    const held = this.#db.prepare('SELECT solution_id AS id, version FROM solutions').all() as Array<{ id: string; version: string }>;
    const drop = this.#db.prepare('DELETE FROM solutions WHERE solution_id = ?');
    this.#db.transaction(() => {
      for (const h of held) if (!wanted.has(h.id)) drop.run(h.id);
    })();
    const current = new Map(held.map((h) => [h.id, h.version]));
    return [...wanted].filter(([id, version]) => current.get(id) !== version).map(([id]) => id);
  }

  put(solution: PreparedSolution): void {
    this.#db
      .prepare('INSERT INTO solutions (solution_id, version, body) VALUES (?, ?, ?) ON CONFLICT (solution_id) DO UPDATE SET version = excluded.version, body = excluded.body')
      .run(solution.solutionId, solution.version, this.#seal(JSON.stringify(solution)));
  }

  get(solutionId: string): PreparedSolution | undefined {
    const row = this.#db.prepare('SELECT body FROM solutions WHERE solution_id = ?').get(solutionId) as { body: Buffer } | undefined;
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
    this.#db.prepare('INSERT OR REPLACE INTO open_runs (run_id, solution_id, trigger, started_at, due_at) VALUES (?, ?, ?, ?, ?)').run(run.runId, run.solutionId, run.trigger, run.startedAt, run.dueAt);
  }

  closeRun(runId: string): void {
    this.#db.prepare('DELETE FROM open_runs WHERE run_id = ?').run(runId);
  }

  openRuns(): OpenRun[] {
    const rows = this.#db.prepare('SELECT run_id, solution_id, trigger, started_at, due_at FROM open_runs ORDER BY started_at').all() as Array<{ run_id: string; solution_id: string; trigger: string; started_at: string; due_at: string | null }>;
    return rows.map((r) => ({ runId: r.run_id, solutionId: r.solution_id, trigger: r.trigger === 'schedule' ? 'schedule' : 'start', startedAt: r.started_at, dueAt: r.due_at }));
  }

  close(): void {
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
