import { createRequire } from 'node:module';
import { CompiledQuery, type DatabaseConnection, type Driver, type QueryResult } from 'kysely';
import { WorkerThread, WorkerThreadError, workerFailure } from '../../src/util/worker-thread.js';
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

/**
 * The worker's handler (a WorkerThread's, from source text, so it works from sources, the build
 * and a package alike): one connection, its prepared statements by SQL text; on close, a
 * transaction left open is rolled back and the connection closed.
 */
const EXECUTOR = `(require, data) => {
  const SQLite = require(data.module);
  const db = new SQLite(data.file);
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
  return {
    handle: (m) => {
      const stmt = prepared(m.sql);
      const params = m.params.map((p) => (p instanceof Uint8Array && !Buffer.isBuffer(p) ? Buffer.from(p.buffer, p.byteOffset, p.byteLength) : p));
      if (stmt.reader) return { reply: { rows: stmt.all(params) } };
      const r = stmt.run(params);
      return { reply: { changes: r.changes, lastInsertRowid: BigInt(r.lastInsertRowid) } };
    },
    dispose: () => {
      if (db.inTransaction) db.exec('rollback');
      db.close();
    },
  };
}`;

interface Statement {
  sql: string;
  params: readonly unknown[];
}

interface Answer {
  rows?: unknown[];
  changes?: number;
  lastInsertRowid?: bigint;
}

/** The worker: started at first use, it keeps the process alive only while a call is open. */
function startExecutor(file: string): WorkerThread<Statement, Answer> {
  return new WorkerThread<Statement, Answer>({
    name: 'SQLite write worker',
    factory: EXECUTOR,
    data: { module: createRequire(import.meta.url).resolve('better-sqlite3'), file },
    graceful: true,
  });
}

/** A statement's failure in the worker as better-sqlite3 throws it on the Service's own connection: its message, code and name. */
function statementError(err: unknown): unknown {
  if (!(err instanceof WorkerThreadError) || workerFailure(err) !== 'thrown') return err;
  return Object.assign(new Error(err.message), { code: err.code, name: err.thrownName ?? 'SqliteError' });
}

class WorkerConnection implements DatabaseConnection {
  #release: (() => void) | undefined;

  constructor(private readonly driver: WorkerDriver) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    this.#release ??= await this.driver.mutex.lock();
    let answer: Answer;
    try {
      answer = await this.driver.executor().call({ sql: query.sql, params: query.parameters });
    } catch (err) {
      throw statementError(err);
    }
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
  #executor: WorkerThread<Statement, Answer> | undefined;

  constructor(
    private readonly file: string,
    readonly mutex: Mutex,
  ) {}

  /** The worker, started at first use and again after one has died (its open transaction died with its connection). */
  executor(): WorkerThread<Statement, Answer> {
    if (!this.#executor?.alive) this.#executor = startExecutor(this.file);
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
