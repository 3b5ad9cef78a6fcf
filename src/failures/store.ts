/**
 * The Agent's local failed-record store: SQLite (better-sqlite3) in a given folder (the instance
 * folder). One row per failed source record, holding the source fields the Map references, so a
 * marked record is reprocessed once from this copy without reading the source again.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { ConnectorRecord } from '../connectors/sdk.js';
import { FerryError, isFerryError } from '../errors/ferry-error.js';
import type { FailedRecordInput, FailedRecordSink } from './sink.js';
import { mkdirPrivate, touchPrivate } from '../util/private-files.js';
import { migrateState, type StateSchema } from '../util/sqlite-schema.js';
import { uuidV7 } from '../util/uuid-v7.js';
import { WorkerThread, workerFailure } from '../util/worker-thread.js';

export interface StoredFailedRecord {
  id: string;
  executionId: string;
  mapId: number | null;
  mapName: string;
  entity: string;
  blockId: string;
  blockName: string;
  code: string;
  errorMessage: string;
  errorDetail: string;
  source: ConnectorRecord;
  canReprocess: boolean;
  marked: boolean;
  createdAt: string;
}

/** A row of the failed_records table. */
export interface FailedRecordRow {
  id: string;
  execution_id: string;
  map_id: number | null;
  map_name: string;
  entity: string;
  block_id: string;
  block_name: string;
  code: string;
  error_message: string;
  error_detail: string;
  source: string;
  can_reprocess: number;
  marked: number;
  created_at: string;
}

/** A row of the failed_records table as a record. */
export const toRecord = (r: FailedRecordRow): StoredFailedRecord => ({
  id: r.id,
  executionId: r.execution_id,
  mapId: r.map_id,
  mapName: r.map_name,
  entity: r.entity,
  blockId: r.block_id,
  blockName: r.block_name,
  code: r.code,
  errorMessage: r.error_message,
  errorDetail: r.error_detail,
  source: JSON.parse(r.source) as ConnectorRecord,
  canReprocess: r.can_reprocess === 1,
  marked: r.marked === 1,
  createdAt: r.created_at,
});

export const FAILED_RECORDS_FILE = 'failed-records.db';

/**
 * A record already stored under its id is left as it is: a group the inserting thread committed
 * but could not answer for (it died in between) is inserted again here, and resolves.
 */
const INSERT_SQL = `INSERT INTO failed_records (id, execution_id, map_id, map_name, entity, block_id, block_name, code, error_message, error_detail, source, created_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`;

/**
 * A group's parameters column by column, a column whose rows all have the same value once: a
 * batch's refused records mostly share their run, Map, Block, code, message and detail, which then
 * cross to the thread once instead of once a record.
 */
function columnsOf(group: readonly PendingCapture[]): Array<unknown[] | { one: unknown }> {
  const first = group[0]?.params;
  if (!first) return [];
  return first.map((v, c) => {
    let same = true;
    for (const p of group) {
      if (p.params[c] !== v) {
        same = false;
        break;
      }
    }
    return same ? { one: v } : group.map((p) => p.params[c]);
  });
}

/** A store error as a run reports it, with SQLite's code when there is one. */
function storeFailed(message: string, code?: string, cause?: unknown): FerryError {
  return new FerryError('RUN_STORE_FAILED', `The failed record could not be stored: ${message}`, {
    ...(cause !== undefined ? { cause } : {}),
    details: code ? { sqliteCode: code } : {},
  });
}

function sqliteCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The INSERT's parameters: id, execution_id, map_id, map_name, entity, block_id, block_name, code, error_message, error_detail, source, created_at. */
type InsertParams = [
  string,
  string,
  number | null,
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string,
];

interface PendingCapture {
  params: InsertParams;
  resolve: (id: string) => void;
  reject: (err: unknown) => void;
}

/**
 * The inserting half of a store: a worker thread (util/worker-thread.ts) with its own connection
 * to the file, so that SQLite's work for a run's refused records (B-tree inserts, commits, WAL
 * checkpoints: measured 6–8 µs a record, docs/benchmarks.md "Solutions") is done beside the run's
 * thread, not on it. It runs from its source text (the same from the sources, the build and a
 * package). Each group of captures is one call and one transaction. A read that must see every
 * capture waits for the thread's answers synchronously (WorkerThread.waitSync). A thread that
 * cannot open the file takes no group: the store then inserts them itself.
 */
const INSERTER = `(require, data) => {
  const Database = require(data.lib);
  const db = new Database(data.file, { timeout: data.busyTimeoutMs });
  db.pragma('journal_mode = WAL');
  const insert = db.prepare(data.insertSql);
  // A group comes column by column; a column whose rows all have one value comes once, as { one }.
  const insertAll = db.transaction((n, columns) => {
    const row = new Array(columns.length);
    for (let i = 0; i < n; i++) {
      for (let c = 0; c < columns.length; c++) {
        const col = columns[c];
        row[c] = Array.isArray(col) ? col[i] : col.one;
      }
      insert.run(row);
    }
  });
  return (group) => {
    insertAll(group.n, group.columns);
    return { reply: undefined };
  };
}`;

/** A group of captures as the inserting thread takes it (columnsOf). */
interface InsertGroup {
  n: number;
  columns: Array<unknown[] | { one: unknown }>;
}

/** How long a read waits for the inserting thread before it gives up (a busy file, a stuck thread). */
const SYNC_WAIT_MS = 30_000;
const BUSY_TIMEOUT_MS = 5_000;

/** The failed-record store's schema (util/sqlite-schema.ts): version 1 is the file as first made. */
export const FAILED_RECORDS_SCHEMA: StateSchema = {
  name: 'failed records',
  migrations: [
    `CREATE TABLE IF NOT EXISTS failed_records (
       id TEXT PRIMARY KEY, execution_id TEXT NOT NULL, map_id INTEGER, map_name TEXT NOT NULL, entity TEXT NOT NULL,
       block_id TEXT NOT NULL, block_name TEXT NOT NULL, code TEXT NOT NULL, error_message TEXT NOT NULL, error_detail TEXT NOT NULL,
       source TEXT NOT NULL, can_reprocess INTEGER NOT NULL DEFAULT 1, marked INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);
     CREATE INDEX IF NOT EXISTS failed_records_execution ON failed_records(execution_id);`,
  ],
};

/**
 * Captures are committed in groups: the captures made together (a Map's batch fails its refused
 * records in one synchronous pass) are inserted in one transaction, in a microtask the first of
 * them queues, and each capture's promise resolves once that transaction has committed. So a record is
 * durable before its capture resolves, as when each had its own transaction, but a batch with a
 * thousand refused records costs one commit (one WAL sync) instead of a thousand: measured
 * (docs/benchmarks.md "Solutions"), the per-record commits took 6.8 s of the Agent's thread for
 * 100,000 failed records. The groups are inserted by a thread of their own (INSERTER); if it
 * cannot start, on this connection. Every read and change first waits until what was captured
 * before it is committed.
 */
export class FailedRecordStore implements FailedRecordSink {
  private readonly db: Database.Database;
  private readonly insert: Database.Statement<InsertParams>;
  private readonly insertAll: (group: readonly PendingCapture[]) => void;
  #pending: PendingCapture[] = [];
  #thread: WorkerThread<InsertGroup, undefined> | undefined;

  /**
   * `thread: false`: every group is committed on the store's own connection. `inserterModule`: the
   * SQLite module the thread loads (default better-sqlite3; a test gives one that does not load).
   */
  constructor(folder: string, opts: { now?: () => Date; thread?: boolean; inserterModule?: string } = {}) {
    this.now = opts.now ?? (() => new Date());
    let file: string;
    let opened: Database.Database | undefined;
    try {
      // Customer source records: the file is made 0600 before SQLite opens it, whose -wal and -shm take its mode.
      mkdirPrivate(folder);
      file = path.join(folder, FAILED_RECORDS_FILE);
      touchPrivate(file);
      opened = new Database(file, { timeout: BUSY_TIMEOUT_MS });
      opened.pragma('journal_mode = WAL');
      migrateState(opened, FAILED_RECORDS_SCHEMA, file);
      this.db = opened;
      this.insert = this.db.prepare(INSERT_SQL);
      this.insertAll = this.db.transaction((group: readonly PendingCapture[]) => {
        for (const p of group) this.insert.run(...p.params);
      });
    } catch (err) {
      if (opened?.open) opened.close();
      // A newer Agent's file is refused as such, not as a file that cannot be opened.
      if (isFerryError(err) && err.code === 'AGT_STATE_NEWER') throw err;
      throw new FerryError(
        'RUN_STORE_FAILED',
        `The failed-record store in ${folder} cannot be opened: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err, details: { folder } },
      );
    }
    this.#file = opts.thread === false ? undefined : file;
    this.#inserterModule = opts.inserterModule;
  }

  readonly #inserterModule: string | undefined;

  /** The file the inserting thread opens at the first capture; undefined once it has started, or when it must not. */
  #file: string | undefined;

  private readonly now: () => Date;

  #startThread(file: string): void {
    const lib = this.#inserterModule ?? createRequire(import.meta.url).resolve('better-sqlite3');
    this.#thread = new WorkerThread<InsertGroup, undefined>({
      name: 'failed-record inserting',
      factory: INSERTER,
      data: { lib, file, busyTimeoutMs: BUSY_TIMEOUT_MS, insertSql: INSERT_SQL },
    });
  }

  /**
   * A group the thread did not commit. Refused by SQLite: its captures fail. The thread gone or
   * unable to insert: the group is inserted here (one it committed without answering, if it died
   * in between, is found stored and resolves), and so are later ones. Closed: they fail.
   */
  #groupFailed(group: PendingCapture[], err: Error, thread: WorkerThread<InsertGroup, undefined>): void {
    const failure = workerFailure(err);
    if (failure === 'thrown') {
      const e = storeFailed(err.message, (err as { code?: string }).code);
      for (const p of group) p.reject(e);
    } else if (failure === 'start' || failure === 'failed' || failure === 'exited') {
      if (this.#thread === thread) {
        this.#thread = undefined;
        void thread.close();
      }
      this.#insertHere(group);
    } else {
      for (const p of group) p.reject(err);
    }
  }

  #insertHere(group: PendingCapture[]): void {
    try {
      this.insertAll(group);
    } catch (err) {
      const e = storeFailed(err instanceof Error ? err.message : String(err), sqliteCode(err), err);
      for (const p of group) p.reject(e);
      return;
    }
    for (const p of group) p.resolve(p.params[0]);
  }

  /** Stores one failed source record; resolves with its id once it is committed (with the other captures of this turn). */
  capture(rec: FailedRecordInput): Promise<string> {
    // Time-ordered: a run failing many records appends to the primary-key index instead of splitting its pages at random.
    const id = uuidV7();
    // created_at is set when the group commits (flush): one clock reading for the captures of a turn.
    const params: InsertParams = [
      id,
      rec.executionId,
      rec.mapId ?? null,
      rec.mapName,
      rec.entity,
      rec.blockId,
      rec.blockName,
      rec.error.code,
      rec.error.message,
      rec.errorDetail ?? JSON.stringify(rec.error.details ?? {}),
      JSON.stringify(rec.source),
      '',
    ];
    return new Promise<string>((resolve, reject) => {
      if (this.#pending.length === 0) queueMicrotask(() => this.flush());
      this.#pending.push({ params, resolve, reject });
    });
  }

  /** Hands the captures not committed yet to the thread (or commits them here), in one transaction; their promises settle with it. */
  private flush(): void {
    const group = this.#pending;
    if (group.length === 0) return;
    this.#pending = [];
    const at = this.now().toISOString();
    for (const p of group) p.params[11] = at;
    if (this.#file !== undefined) {
      const file = this.#file;
      this.#file = undefined;
      try {
        this.#startThread(file);
      } catch {
        // No thread: this connection inserts.
        this.#thread = undefined;
      }
    }
    const thread = this.#thread;
    if (!thread?.alive) {
      if (thread) {
        this.#thread = undefined;
        void thread.close();
      }
      this.#insertHere(group);
      return;
    }
    thread.send(
      { n: group.length, columns: columnsOf(group) },
      {
        resolve: () => {
          for (const p of group) p.resolve(p.params[0]);
        },
        reject: (err) => this.#groupFailed(group, err, thread),
      },
    );
  }

  /** Waits until every capture made so far is committed (or failed): a read or change sees them. */
  private settle(): void {
    this.flush();
    if (this.#thread && !this.#thread.waitSync(SYNC_WAIT_MS))
      throw new FerryError('RUN_STORE_FAILED', 'The failed-record store is still busy storing records; try again.');
  }

  get(id: string): StoredFailedRecord | undefined {
    this.settle();
    const r = this.db.prepare('SELECT * FROM failed_records WHERE id = ?').get(id) as FailedRecordRow | undefined;
    return r ? toRecord(r) : undefined;
  }

  /** Records of an execution, oldest first. */
  list(executionId?: string): StoredFailedRecord[] {
    this.settle();
    const rows = (
      executionId
        ? this.db
            .prepare('SELECT * FROM failed_records WHERE execution_id = ? ORDER BY created_at, rowid')
            .all(executionId)
        : this.db.prepare('SELECT * FROM failed_records ORDER BY created_at, rowid').all()
    ) as FailedRecordRow[];
    return rows.map(toRecord);
  }

  /** Marks (or unmarks) records for reprocessing; only records that can still be reprocessed. */
  mark(ids: readonly string[], marked = true): number {
    this.settle();
    const stmt = this.db.prepare('UPDATE failed_records SET marked = ? WHERE id = ? AND can_reprocess = 1');
    let n = 0;
    this.db.transaction(() => {
      for (const id of ids) n += stmt.run(marked ? 1 : 0, id).changes;
    })();
    return n;
  }

  /** Marks every failed record of an execution (the history-level mark). */
  markExecution(executionId: string, marked = true): number {
    this.settle();
    return this.db
      .prepare('UPDATE failed_records SET marked = ? WHERE execution_id = ? AND can_reprocess = 1')
      .run(marked ? 1 : 0, executionId).changes;
  }

  /** The marked records still reprocessable, of one execution or all. */
  marked(executionId?: string): StoredFailedRecord[] {
    return this.list(executionId).filter((r) => r.marked && r.canReprocess);
  }

  /** Records were reprocessed: they cannot be again. */
  setReprocessed(ids: readonly string[]): void {
    this.settle();
    const stmt = this.db.prepare('UPDATE failed_records SET can_reprocess = 0, marked = 0 WHERE id = ?');
    this.db.transaction(() => {
      for (const id of ids) stmt.run(id);
    })();
  }

  /** The executions whose newest record came before `before` (ISO-8601 UTC): those a History window starting there removed. */
  executionsBefore(before: string): string[] {
    this.settle();
    return this.db
      .prepare('SELECT execution_id FROM failed_records GROUP BY execution_id HAVING max(created_at) < ?')
      .pluck()
      .all(before) as string[];
  }

  /** Deletes up to `limit` records of an execution, in one transaction; answers how many went. */
  deleteOfExecution(executionId: string, limit: number): number {
    this.settle();
    return this.db
      .prepare(
        'DELETE FROM failed_records WHERE rowid IN (SELECT rowid FROM failed_records WHERE execution_id = ? LIMIT ?)',
      )
      .run(executionId, limit).changes;
  }

  close(): void {
    this.#file = undefined;
    try {
      this.settle();
    } finally {
      const thread = this.#thread;
      this.#thread = undefined;
      // Captures the thread never answered (it was stuck): they fail rather than hang.
      if (thread)
        void thread.close(
          new FerryError('RUN_STORE_FAILED', 'The failed-record store was closed before the record was stored.'),
        );
      this.db.close();
    }
  }
}

/** Records deleted per transaction when pruning: a commit the Agent's runs wait for stays short. */
const PRUNE_CHUNK = 5000;

/**
 * Removes the local failed records of every execution whose newest record came before `before`,
 * a chunk at a time, yielding to the event loop between chunks so that
 * the Agent's channel and runs go on during a large prune; answers how many records went.
 */
export async function pruneFailedRecords(store: FailedRecordStore, before: string): Promise<number> {
  let removed = 0;
  for (const executionId of store.executionsBefore(before)) {
    for (;;) {
      const n = store.deleteOfExecution(executionId, PRUNE_CHUNK);
      removed += n;
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (n < PRUNE_CHUNK) break;
    }
  }
  return removed;
}
