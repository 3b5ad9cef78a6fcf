import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { Report, ReportBody } from '../protocol/channel.js';
import { migrateState, type StateSchema } from '../util/sqlite-schema.js';

/** The report kinds this version knows: a stored row of another kind is set aside, not sent. */
const KNOWN_KINDS: ReadonlySet<string> = new Set(ReportBody.options.map((o) => o.shape.kind.value));

/** A stored report as it goes on the wire: the message's text, built without parsing the body again. */
export interface OutboxMessage {
  readonly seq: number;
  readonly id: string;
  /** The report's kind (`runErrors`, …). */
  readonly kind: string;
  /** The whole `report` message, JSON. */
  readonly text: string;
}

/** The outbox file's schema (util/sqlite-schema.ts): version 1 is the file as first made. */
export const OUTBOX_SCHEMA: StateSchema = {
  name: 'outbox',
  migrations: [
    `CREATE TABLE IF NOT EXISTS outbox (
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
     );`,
  ],
};

/**
 * The durable outbox: everything the Agent reports is written here first and deleted only when
 * the Service acknowledges it (`{re, ok:true}`). Rows are sent in `seq` order; the report's `id`
 * is its durable message ID, by which the Service deduplicates a report sent again after a lost
 * acknowledgement. SQLite in WAL mode with `synchronous=FULL`: a row that `enqueue` returned
 * survives a kill -9 of the process and a power cut. A deletion (`acknowledge`) is committed
 * without its own WAL sync (`synchronous=NORMAL`): it survives a kill -9, and a power cut that
 * loses it makes the report go again, which the Service counts once by its ID.
 *
 * A report is serialized once: `enqueue` validates the body and stores its JSON, and `next` wraps
 * that text into the message sent (measured, docs/benchmarks.md "Solutions": parsing, validating
 * and serializing a report of 200 record errors again for every send cost ≈ 4 µs a record error).
 */
export class Outbox {
  private readonly db: Database.Database;
  private readonly insert: Database.Statement<[string, string, string]>;
  private readonly selectAfter: Database.Statement<[number, number], OutboxRow>;
  private readonly selectNext: Database.Statement<[number], OutboxRow & { kind: string | null }>;
  private readonly syncNormal: Database.Statement<[]>;
  private readonly syncFull: Database.Statement<[]>;
  private readonly insertAll: (rows: ReadonlyArray<readonly [string, string, string]>) => void;
  private readonly remove: Database.Statement<[string]>;
  private readonly moveDead: Database.Statement<[string, string]>;
  private readonly counter: Database.Statement<[], { n: number }>;
  private readonly oldest: Database.Statement<[], { created: string }>;
  private readonly runsNamed: Database.Statement<[string], { runId: string }>;
  private readonly listeners = new Set<() => void>();

  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    try {
      migrateState(this.db, OUTBOX_SCHEMA, file);
    } catch (err) {
      this.db.close();
      throw err;
    }
    this.insert = this.db.prepare('INSERT INTO outbox (id, body, created) VALUES (?, ?, ?)');
    this.selectAfter = this.db.prepare('SELECT seq, id, body, created FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?');
    // The validity check and the kind in SQLite's JSON parser: a fraction of JSON.parse's cost, and no objects made.
    this.selectNext = this.db.prepare(
      "SELECT seq, id, body, created, CASE WHEN json_valid(body) THEN body ->> '$.kind' END AS kind FROM outbox WHERE seq > ? ORDER BY seq LIMIT 1",
    );
    this.syncNormal = this.db.prepare('PRAGMA synchronous = NORMAL');
    this.syncFull = this.db.prepare('PRAGMA synchronous = FULL');
    this.insertAll = this.db.transaction((rows: ReadonlyArray<readonly [string, string, string]>) => {
      for (const r of rows) this.insert.run(...r);
    });
    this.remove = this.db.prepare('DELETE FROM outbox WHERE id = ?');
    this.moveDead = this.db.prepare(
      `INSERT INTO outbox_dead (seq, id, body, created, error, failed)
       SELECT seq, id, body, created, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now') FROM outbox WHERE id = ?`,
    );
    this.counter = this.db.prepare('SELECT count(*) AS n FROM outbox');
    this.oldest = this.db.prepare('SELECT created FROM outbox ORDER BY seq LIMIT 1');
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
   * Stores several reports in one transaction (one WAL sync instead of one each), in order, and
   * returns their message IDs; all are durable when it returns, or none is (it throws).
   */
  enqueueAll(bodies: readonly ReportBody[], now: Date = new Date()): string[] {
    if (bodies.length === 0) return [];
    const at = now.toISOString();
    const rows = bodies.map((body) => [randomUUID(), JSON.stringify(ReportBody.parse(body)), at] as const);
    this.insertAll(rows);
    for (const wake of this.listeners) wake();
    return rows.map((r) => r[0]);
  }

  /**
   * The oldest report after `afterSeq` as the text of its message, for the sender. Rows that no
   * longer read as a report (not JSON, or a kind this version does not know) move to
   * `outbox_dead` on the way, as in {@link pending}. The body was validated when it was stored.
   */
  next(afterSeq = 0): OutboxMessage | undefined {
    for (;;) {
      const row = this.selectNext.get(afterSeq);
      if (!row) return undefined;
      if (row.kind !== null && KNOWN_KINDS.has(row.kind)) {
        return {
          seq: row.seq,
          id: row.id,
          kind: row.kind,
          text: `{"id":${JSON.stringify(row.id)},"type":"report","at":${JSON.stringify(row.created)},"report":${row.body}}`,
        };
      }
      this.reject(
        row.id,
        JSON.stringify({ code: 'CHN_INVALID_MESSAGE', message: 'The stored report could not be read.' }),
      );
    }
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
      if (parsed.success)
        out.push({ seq: row.seq, report: { id: row.id, type: 'report', at: row.created, report: parsed.data } });
      else
        this.reject(
          row.id,
          JSON.stringify({ code: 'CHN_INVALID_MESSAGE', message: 'The stored report could not be read.' }),
        );
    }
    return out;
  }

  /** The Service has the report: forget it. */
  acknowledge(id: string): void {
    // No WAL sync of its own (see the class comment): the next report's commit, or a checkpoint, syncs it.
    this.syncNormal.run();
    try {
      this.remove.run(id);
    } finally {
      this.syncFull.run();
    }
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

  /** When the oldest report still waiting was stored (ISO-8601), undefined when none waits. */
  oldestCreated(): string | undefined {
    return this.oldest.get()?.created;
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
