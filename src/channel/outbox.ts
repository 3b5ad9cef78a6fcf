import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { Report, ReportBody } from '../protocol/channel.js';

/**
 * The durable outbox: everything the Agent reports is written here first and deleted only when
 * the Service acknowledges it (`{re, ok:true}`). Rows are sent in `seq` order; the report's `id`
 * is its durable message ID, by which the Service deduplicates a report sent again after a lost
 * acknowledgement. SQLite in WAL mode with `synchronous=FULL`: a row that `enqueue` returned
 * survives a kill -9 of the process and a power cut.
 */
export class Outbox {
  private readonly db: Database.Database;
  private readonly insert: Database.Statement<[string, string, string]>;
  private readonly selectAfter: Database.Statement<[number, number], OutboxRow>;
  private readonly remove: Database.Statement<[string]>;
  private readonly moveDead: Database.Statement<[string, string]>;
  private readonly counter: Database.Statement<[], { n: number }>;
  private readonly runsNamed: Database.Statement<[string], { runId: string }>;
  private readonly listeners = new Set<() => void>();

  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        body TEXT NOT NULL,
        created TEXT NOT NULL
      );
      CREATE TABLE IF NOT EXISTS outbox_dead (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        body TEXT NOT NULL,
        created TEXT NOT NULL,
        error TEXT NOT NULL,
        failed TEXT NOT NULL
      );
    `);
    this.insert = this.db.prepare('INSERT INTO outbox (id, body, created) VALUES (?, ?, ?)');
    this.selectAfter = this.db.prepare('SELECT seq, id, body, created FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?');
    this.remove = this.db.prepare('DELETE FROM outbox WHERE id = ?');
    this.moveDead = this.db.prepare(
      `INSERT INTO outbox_dead (seq, id, body, created, error, failed)
       SELECT seq, id, body, created, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now') FROM outbox WHERE id = ?`,
    );
    this.counter = this.db.prepare('SELECT count(*) AS n FROM outbox');
    // A damaged body (see pending) names no run, rather than failing the question.
    this.runsNamed = this.db.prepare(
      `SELECT DISTINCT run_id AS runId FROM (
         SELECT CASE WHEN json_valid(body) THEN lower(json_extract(body, '$.runId')) END AS run_id FROM outbox
         UNION ALL
         SELECT CASE WHEN json_valid(body) THEN lower(json_extract(body, '$.runId')) END FROM outbox_dead
       ) WHERE run_id IN (SELECT value FROM json_each(?))`,
    );
  }

  /** Stores a report durably and returns it with its message ID; wakes whoever sends. */
  enqueue(body: ReportBody, now: Date = new Date()): Report {
    const report: Report = Report.parse({ id: randomUUID(), type: 'report', at: now.toISOString(), report: body });
    this.insert.run(report.id, JSON.stringify(report.report), report.at);
    for (const wake of this.listeners) wake();
    return report;
  }

  /**
   * Up to `limit` reports after `afterSeq`, oldest first. A row that no longer reads as a report
   * (a damaged file, a report kind this version does not know) moves to `outbox_dead` rather than
   * stopping every later report.
   */
  pending(afterSeq = 0, limit = 100): Array<{ seq: number; report: Report }> {
    const out: Array<{ seq: number; report: Report }> = [];
    for (const row of this.selectAfter.all(afterSeq, limit)) {
      let body: unknown;
      try {
        body = JSON.parse(row.body);
      } catch {
        body = undefined;
      }
      const parsed = ReportBody.safeParse(body);
      if (parsed.success) out.push({ seq: row.seq, report: { id: row.id, type: 'report', at: row.created, report: parsed.data } });
      else this.reject(row.id, JSON.stringify({ code: 'CHN_INVALID_MESSAGE', message: 'The stored report could not be read.' }));
    }
    return out;
  }

  /** The Service has the report: forget it. */
  acknowledge(id: string): void {
    this.remove.run(id);
  }

  /**
   * The Service refused the report as invalid (a `config` error, never a transient one): keep it
   * for the operator in `outbox_dead`, so one bad row cannot block every later one.
   */
  reject(id: string, error: string): void {
    this.db.transaction(() => {
      this.moveDead.run(error, id);
      this.remove.run(id);
    })();
  }

  get size(): number {
    return this.counter.get()?.n ?? 0;
  }

  /**
   * Which of `runIds` a report still here names: waiting, sent but not acknowledged, or set aside
   * in `outbox_dead` (never delivered). One pass over each table, whatever the number of IDs.
   */
  runsReported(runIds: readonly string[]): Set<string> {
    if (runIds.length === 0) return new Set();
    const wanted = JSON.stringify(runIds.map((id) => id.toLowerCase()));
    const rows = this.runsNamed.all(wanted);
    return new Set(rows.map((r) => r.runId));
  }

  /** Calls `wake` after every enqueue; returns the unsubscribe function. */
  onEnqueue(wake: () => void): () => void {
    this.listeners.add(wake);
    return () => this.listeners.delete(wake);
  }

  close(): void {
    this.listeners.clear();
    if (this.db.open) this.db.close();
  }
}

interface OutboxRow {
  seq: number;
  id: string;
  body: string;
  created: string;
}
