import { createRequire } from 'node:module';
import type SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  SelectQueryNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
} from 'kysely';
import { WorkerThread } from '../../src/util/worker-thread.js';

/** SQLite's SQL, adapter and introspection, as Kysely's own SQLite dialect has them; subclasses bring the driver. */
export abstract class SqliteDialectBase implements Dialect {
  abstract createDriver(): Driver;
  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }
  createAdapter(): DialectAdapter {
    return new SqliteAdapter();
  }
  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}

/**
 * The Service's SQLite dialect: one connection that writes and one that only reads.
 *
 * Kysely's own SQLite driver has a single connection behind a mutex, so a transaction holds up
 * every other query until it ends: a Lookup Table import of a million values, written in batches
 * that yield to the event loop, would still stop `/healthz` and every read for its whole length.
 * In WAL mode SQLite lets readers run beside one writer, each reading the last committed state, so
 * here a statement that only reads (SQLite's verdict on the prepared statement, so raw SQL counts
 * too) outside a transaction goes to the reader connection at once, while transactions and every
 * other statement take the writer connection in turn, as before.
 *
 *   query ──► reads only, not in a transaction? ──yes──► reader connection (no wait)
 *                      │ no
 *                      ▼
 *             writer mutex ──► writer connection (BEGIN … COMMIT, INSERT, UPDATE, …)
 *
 * A read never sees a transaction's uncommitted rows (it would have waited for them before), and
 * a write made earlier by the same request is committed before the next statement, so it is seen.
 */
export class SqliteReadWriteDialect extends SqliteDialectBase {
  /** Held by whoever writes: shared with the write worker's dialect (sqlite-worker-dialect.ts). */
  readonly mutex = new Mutex();

  constructor(private readonly databases: { writer: SQLite.Database; reader: SQLite.Database }) {
    super();
  }

  createDriver(): Driver {
    return new ReadWriteDriver(this.databases.writer, this.databases.reader, this.mutex);
  }
}

/** Hands the writer connection to one holder at a time, in order of asking. */
export class Mutex {
  #tail: Promise<void> = Promise.resolve();

  /** Waits for the holders before, then answers the function that releases the lock. */
  async lock(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const before = this.#tail;
    this.#tail = before.then(() => held);
    await before;
    return release;
  }
}

/** Prepared statements of one connection by SQL text: Kysely builds the same text for the same shape of query. */
class Statements {
  readonly #cache = new Map<string, SQLite.Statement>();
  constructor(readonly db: SQLite.Database) {}

  get(sql: string): SQLite.Statement {
    let stmt = this.#cache.get(sql);
    if (!stmt) {
      if (this.#cache.size >= 500) this.#cache.clear();
      stmt = this.db.prepare(sql);
      this.#cache.set(sql, stmt);
    }
    return stmt;
  }
}

function run(stmt: SQLite.Statement, query: CompiledQuery): QueryResult<unknown> {
  // An array binds its items in order, as Kysely's own driver passes them.
  const params = query.parameters as unknown[];
  if (stmt.reader) return { rows: stmt.all(params) };
  const { changes, lastInsertRowid } = stmt.run(params);
  return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
}

/**
 * Whether a statement only reads (SQLite's own verdict, so raw SQL counts as well as queries
 * Kysely built): such a statement outside a transaction goes to the reader connection.
 */
function readsOnly(stmt: SQLite.Statement): boolean {
  return stmt.reader && stmt.readonly;
}

/**
 * One borrowed connection: reads go to the reader until the holder writes or begins a transaction;
 * from then on everything goes to the writer, whose lock is held until the connection is released.
 */
class RoutedConnection implements DatabaseConnection {
  #release: (() => void) | undefined;
  #inTransaction = false;

  constructor(private readonly driver: ReadWriteDriver) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (!this.#release && !this.#inTransaction) {
      const stmt = this.driver.reader.get(query.sql);
      if (readsOnly(stmt)) return run(stmt, query) as QueryResult<R>;
    }
    await this.lockWriter();
    return run(this.driver.writer.get(query.sql), query) as QueryResult<R>;
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(query.query)) throw new Error('Sqlite driver only supports streaming of select queries');
    const db = this.#release || this.#inTransaction ? this.driver.writer.db : this.driver.reader.db;
    for (const row of db.prepare(query.sql).iterate(query.parameters)) yield { rows: [row as R] };
  }

  async lockWriter(): Promise<void> {
    this.#release ??= await this.driver.mutex.lock();
  }

  async begin(): Promise<void> {
    await this.lockWriter();
    run(this.driver.writer.get('begin'), CompiledQuery.raw('begin'));
    this.#inTransaction = true;
  }

  end(statement: 'commit' | 'rollback'): void {
    this.#inTransaction = false;
    run(this.driver.writer.get(statement), CompiledQuery.raw(statement));
  }

  release(): void {
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }
}

/**
 * Checkpoints the WAL from a worker thread with its own connection. SQLite's automatic checkpoint
 * runs inside the COMMIT that crosses 1,000 pages, on the committing connection: after a
 * million-value import that is hundreds of MB copied back into the database file while the event
 * loop waits (seconds). A PASSIVE checkpoint from another connection blocks neither the writer
 * nor the readers.
 */
const CHECKPOINTER = `(require, data) => {
  const SQLite = require(data.module);
  const db = new SQLite(data.file);
  db.pragma('busy_timeout = 5000');
  const checkpoint = () => { try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {} };
  const timer = setInterval(checkpoint, data.everyMs);
  return {
    handle: () => ({ reply: undefined }),
    dispose: () => { clearInterval(timer); checkpoint(); db.close(); },
  };
}`;

/** How often the worker checkpoints. */
const CHECKPOINT_EVERY_MS = 1_000;

/**
 * The checkpoint worker. One that cannot open the file only loses its checkpoints (SQLite's WAL
 * keeps growing until the next start): its failure ends the thread, not the Service. It takes no
 * calls; closing it checkpoints once more and waits for it to end.
 */
function startCheckpointer(file: string): WorkerThread<never, undefined> {
  return new WorkerThread<never, undefined>({
    name: 'SQLite checkpoint',
    factory: CHECKPOINTER,
    data: { module: createRequire(import.meta.url).resolve('better-sqlite3'), file, everyMs: CHECKPOINT_EVERY_MS },
    graceful: true,
  });
}

class ReadWriteDriver implements Driver {
  #checkpointer: WorkerThread<never, undefined> | undefined;
  readonly writer: Statements;
  readonly reader: Statements;

  constructor(
    writer: SQLite.Database,
    reader: SQLite.Database,
    readonly mutex: Mutex,
  ) {
    this.writer = new Statements(writer);
    this.reader = new Statements(reader);
  }

  async init(): Promise<void> {
    if (this.writer.db.memory) return;
    this.writer.db.pragma('wal_autocheckpoint = 0');
    this.#checkpointer = startCheckpointer(this.writer.db.name);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new RoutedConnection(this);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as RoutedConnection).begin();
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as RoutedConnection).end('commit');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as RoutedConnection).end('rollback');
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as RoutedConnection).release();
  }

  async destroy(): Promise<void> {
    // Held until the worker has exited: a short command (ferry service create-org) would
    // otherwise end silently here, before its own output.
    await this.#checkpointer?.close();
    this.reader.db.close();
    this.writer.db.close();
  }
}
