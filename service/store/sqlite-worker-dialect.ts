import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { CompiledQuery, type DatabaseConnection, type Driver, type QueryResult } from 'kysely';
import { SqliteDialectBase, type Mutex } from './sqlite-dialect.js';

/**
 * A SQLite dialect whose statements run on a worker thread's own connection, for long write
 * transactions (a Lookup Table import of a million values):
 *
 *   import ──► Kysely (this dialect) ──► writer mutex (shared with the Service's dialect)
 *                                          │ held from BEGIN to COMMIT
 *                                          ▼
 *            postMessage {sql, params} ──► worker thread ──► its connection ──► ferry.db
 *
 * Batches that yield to the event loop are not enough on the Service's own connection: SQLite's
 * COMMIT of a transaction that spilled pages to the WAL re-reads those frames to sum them (about
 * 0.5 s for a million values), and no other request is answered meanwhile. Here the statements and
 * the COMMIT take the worker's time, not the event loop's. The shared mutex keeps every other write
 * of the Service waiting, as it would for a transaction on its own connection, so the two
 * connections never contend for SQLite's write lock (a busy wait would block the event loop);
 * reads go on, on the Service's reader connection.
 */
export class SqliteWorkerDialect extends SqliteDialectBase {
  constructor(private readonly opts: { file: string; mutex: Mutex }) {
    super();
  }

  createDriver(): Driver {
    return new WorkerDriver(this.opts.file, this.opts.mutex);
  }
}

/** Runs in the worker (from source text, so it works from sources, the build and a package alike). */
const EXECUTOR = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.module);
const db = new SQLite(workerData.file);
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
db.pragma('wal_autocheckpoint = 0');
const statements = new Map();
function prepared(sql) {
  let stmt = statements.get(sql);
  if (!stmt) {
    if (statements.size >= 64) statements.clear();
    stmt = db.prepare(sql);
    statements.set(sql, stmt);
  }
  return stmt;
}
parentPort.on('message', (m) => {
  if (m.close) {
    if (db.inTransaction) db.exec('rollback');
    db.close();
    parentPort.close();
    return;
  }
  try {
    const stmt = prepared(m.sql);
    const params = m.params.map((p) => (p instanceof Uint8Array && !Buffer.isBuffer(p) ? Buffer.from(p.buffer, p.byteOffset, p.byteLength) : p));
    if (stmt.reader) {
      parentPort.postMessage({ id: m.id, rows: stmt.all(params) });
    } else {
      const r = stmt.run(params);
      parentPort.postMessage({ id: m.id, changes: r.changes, lastInsertRowid: BigInt(r.lastInsertRowid) });
    }
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: { message: String(e && e.message), code: e && e.code, name: e && e.name } });
  }
});
`;

interface Answer {
  id: number;
  rows?: unknown[];
  changes?: number;
  lastInsertRowid?: bigint;
  error?: { message: string; code?: string; name?: string };
}

/** The worker and the calls it has not answered yet; it keeps the process alive only while a call is open. */
class Executor {
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();
  #next = 1;
  #dead: Error | undefined;

  constructor(file: string) {
    this.#worker = new Worker(EXECUTOR, { eval: true, workerData: { module: createRequire(import.meta.url).resolve('better-sqlite3'), file } });
    this.#worker.unref();
    this.#worker.on('message', (a: Answer) => {
      const call = this.#pending.get(a.id);
      this.#pending.delete(a.id);
      if (this.#pending.size === 0) this.#worker.unref();
      call?.resolve(a);
    });
    const fail = (err: Error): void => {
      this.#dead ??= err;
      for (const call of this.#pending.values()) call.reject(err);
      this.#pending.clear();
    };
    this.#worker.on('error', fail);
    this.#worker.on('exit', () => fail(new Error('the SQLite write worker has stopped')));
  }

  get alive(): boolean {
    return this.#dead === undefined;
  }

  run(query: CompiledQuery): Promise<Answer> {
    if (this.#dead) return Promise.reject(this.#dead);
    const id = this.#next++;
    return new Promise<Answer>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.ref();
      this.#worker.postMessage({ id, sql: query.sql, params: query.parameters });
    });
  }

  async close(): Promise<void> {
    if (this.#dead) return;
    const exited = new Promise((resolve) => this.#worker.once('exit', resolve));
    this.#worker.ref();
    this.#worker.postMessage({ close: true });
    await exited;
  }
}

class WorkerConnection implements DatabaseConnection {
  #release: (() => void) | undefined;

  constructor(private readonly driver: WorkerDriver) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    this.#release ??= await this.driver.mutex.lock();
    const answer = await this.driver.executor().run(query);
    if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code, name: answer.error.name ?? 'SqliteError' });
    if (answer.rows) return { rows: answer.rows as R[] };
    return { numAffectedRows: BigInt(answer.changes ?? 0), insertId: answer.lastInsertRowid, rows: [] };
  }

  // eslint-disable-next-line require-yield -- an interface member this dialect does not serve
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('The SQLite write worker does not stream queries');
  }

  release(): void {
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }
}

class WorkerDriver implements Driver {
  #executor: Executor | undefined;

  constructor(
    private readonly file: string,
    readonly mutex: Mutex,
  ) {}

  /** The worker, started at first use and again after one has died (its open transaction died with its connection). */
  executor(): Executor {
    if (!this.#executor?.alive) this.#executor = new Executor(this.file);
    return this.#executor;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new WorkerConnection(this);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as WorkerConnection).release();
  }

  async destroy(): Promise<void> {
    await this.#executor?.close();
  }
}
