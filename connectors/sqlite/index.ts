import fs from 'node:fs';
import Database from 'better-sqlite3';
import {
  ConnectorError,
  throwIfAborted,
  type CallContext,
  type ConnectionMetadata,
  type ConnectionProperties,
  type ConnectorPlugin,
  type ConnectorRecord,
  type ConnectorSession,
  type EnsureEntityOptions,
  type EnsureEntityResult,
  type EntityMetadata,
  type Filter,
  type NativeQueryOptions,
  type PackedBatch,
  type QueryOptions,
  type RecordBatch,
  type Value,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
} from '../../src/connectors/sdk.js';
import { parseProps, type SqliteProps } from './properties.js';
import { readCatalogue, type SqliteTable } from './catalogue.js';
import { connectionMetadata } from './metadata.js';
import { callError, RECORD_SQLITE_CODES } from './errors.js';
import { nativeRows, queryTable, queryTablePacked } from './query.js';
import { readCheckpoint, SqliteWriter } from './write.js';
import { ReadThread, WriteThread } from './thread.js';
import { ensureTable } from './ensure-entity.js';

/**
 * The sqlite Connector: one database file (docs/connectors.md "sqlite"). Writes go through one
 * connection; each query reads on a connection of its own, so a stream can stay open while the
 * same database is written (in WAL mode without blocking; in rollback-journal mode a long read
 * makes writers wait up to busyTimeoutMs).
 */
/** The PRAGMAs every reading connection of a session runs first. */
const READ_PRAGMAS = ['case_sensitive_like = ON'];

/** The PRAGMAs every writing connection of a session runs first (its own and its writer thread's). */
function writePragmas(props: SqliteProps): string[] {
  const out = ['case_sensitive_like = ON', 'foreign_keys = ON'];
  if (props.journalMode && !props.readOnly) out.push(`journal_mode = ${props.journalMode}`);
  if (props.synchronous) out.push(`synchronous = ${props.synchronous}`);
  return out;
}

function open(props: SqliteProps, readonly: boolean): Database.Database {
  let db: Database.Database;
  try {
    if (!props.create || readonly) {
      // better-sqlite3 reports a missing file only as a generic error: check it first.
      if (!fs.existsSync(props.file))
        throw new ConnectorError('Unreachable', `The database file ${props.file} does not exist.`, {
          nativeCode: 'ENOENT',
        });
    }
    db = new Database(props.file, {
      readonly: readonly || props.readOnly,
      fileMustExist: !props.create || readonly,
      timeout: props.busyTimeoutMs,
    });
  } catch (err) {
    throw callError(err, `The database ${props.file} cannot be opened`);
  }
  try {
    for (const p of readonly ? READ_PRAGMAS : writePragmas(props)) db.pragma(p);
    // Fails here, not on the first query, when the file is not a database.
    db.prepare('SELECT count(*) FROM sqlite_schema').get();
  } catch (err) {
    db.close();
    throw callError(err, `The database ${props.file} cannot be used`);
  }
  return db;
}

/** Writes of at least this many records go to the writer thread when `writerThread` is auto; queries in batches of at least this many to the reader thread when `readerThread` is auto. */
const THREAD_MIN_RECORDS = 1000;

class SqliteSession implements ConnectorSession {
  /** A query is one statement, stepped to its end: SQLite keeps its read transaction, one snapshot, that long. */
  readonly snapshotQueries = true;
  private tables: Map<string, SqliteTable> | undefined;
  private readonly writer: SqliteWriter;
  private writeThread: WriteThread | undefined;
  private readThread: ReadThread | undefined;
  /** Writes run one after another: the session's connection and its writer thread never write at once. */
  private writing: Promise<unknown> = Promise.resolve();
  /** Set by a writing native statement: connection state the writer thread would not share. */
  private ownWritesOnly = false;

  constructor(
    private readonly props: SqliteProps,
    private readonly db: Database.Database,
  ) {
    this.writer = new SqliteWriter(db);
  }

  async test(_ctx: CallContext): Promise<void> {
    try {
      this.db.prepare('SELECT count(*) FROM sqlite_schema').get();
    } catch (err) {
      throw callError(err, 'The database cannot be read');
    }
  }

  private catalogue(): Map<string, SqliteTable> {
    try {
      this.tables = new Map(readCatalogue(this.db).map((t) => [t.fullName, t]));
    } catch (err) {
      throw callError(err, 'The catalogue cannot be read');
    }
    return this.tables;
  }

  private table(fullName: string): SqliteTable {
    const t = this.tables?.get(fullName) ?? this.catalogue().get(fullName);
    if (!t) throw new ConnectorError('EntityNotFound', `The database has no table or view ${fullName}.`);
    return t;
  }

  async metadata(_ctx: CallContext): Promise<ConnectionMetadata> {
    return connectionMetadata([...this.catalogue().values()]);
  }

  async *query(
    entity: string,
    filter: Filter | undefined,
    options: QueryOptions,
    ctx: CallContext,
  ): AsyncGenerator<RecordBatch, void, undefined> {
    const table = this.table(entity);
    const thread = this.readerFor(options.batchSize, options.limit);
    if (thread) {
      yield* queryTable(thread, table, filter, options, ctx);
      return;
    }
    const reader = open(this.props, true);
    try {
      yield* queryTable(reader, table, filter, options, ctx);
    } finally {
      reader.close();
    }
  }

  /** Queries read in the reader thread are read packed (queryPacked). */
  readsPacked(options: QueryOptions): boolean {
    return this.readsInThread(options.batchSize, options.limit);
  }

  async *queryPacked(
    entity: string,
    filter: Filter | undefined,
    options: QueryOptions,
    ctx: CallContext,
  ): AsyncGenerator<PackedBatch, void, undefined> {
    const table = this.table(entity);
    const thread = this.readerFor(options.batchSize, options.limit);
    if (!thread) throw new ConnectorError('Unsupported', 'This query is not read in the reader thread.');
    yield* queryTablePacked(thread, table, filter, options, ctx);
  }

  async write(
    action: WriteAction,
    entity: string,
    batch: readonly ConnectorRecord[],
    options: WriteOptions,
    ctx: CallContext,
  ): Promise<WriteResult[]> {
    throwIfAborted(ctx.signal);
    if (this.props.readOnly) throw new ConnectorError('Unsupported', 'The connection is read-only.');
    const table = this.table(entity);
    const run = this.writing.then(() => {
      throwIfAborted(ctx.signal);
      return this.writer.write(action, table, batch, options, this.threadFor(batch.length));
    });
    this.writing = run.catch(() => undefined);
    const results = await run;
    ctx.progress({ records: batch.length });
    return results;
  }

  /**
   * The writer thread for a batch of `records` (`writerThread` auto: {@link THREAD_MIN_RECORDS}
   * records or more; on: every batch; off: never), started on the first such batch and again after
   * it failed.
   */
  private threadFor(records: number): WriteThread | undefined {
    const mode = this.props.writerThread;
    if (mode === 'off' || (mode === 'auto' && records < THREAD_MIN_RECORDS)) return undefined;
    // Inside a transaction of this connection (a native BEGIN) the write must join it.
    if (this.ownWritesOnly || this.db.inTransaction) return undefined;
    if (!this.writeThread?.alive) {
      this.writeThread = new WriteThread({
        file: this.props.file,
        busyTimeoutMs: this.props.busyTimeoutMs,
        pragmas: writePragmas(this.props),
        recordCodes: RECORD_SQLITE_CODES,
      });
    }
    return this.writeThread;
  }

  /**
   * The reader thread for a query read in batches of `batchSize` (`readerThread` auto: {@link
   * THREAD_MIN_RECORDS} or more, unless the query asks for at most that many records, as lookups
   * do; on: every query; off: never), started on the first such query and again after it failed.
   * Either way a query reads on a read-only connection of its own.
   */
  private readerFor(batchSize: number, limit: number | undefined): ReadThread | undefined {
    if (!this.readsInThread(batchSize, limit)) return undefined;
    if (!this.readThread?.alive)
      this.readThread = new ReadThread({
        file: this.props.file,
        busyTimeoutMs: this.props.busyTimeoutMs,
        pragmas: READ_PRAGMAS,
      });
    return this.readThread;
  }

  private readsInThread(batchSize: number, limit: number | undefined): boolean {
    const mode = this.props.readerThread;
    return !(
      mode === 'off' ||
      (mode === 'auto' && (batchSize < THREAD_MIN_RECORDS || (limit !== undefined && limit <= THREAD_MIN_RECORDS)))
    );
  }

  async *nativeQuery(
    statement: string,
    params: readonly Value[],
    options: NativeQueryOptions,
    ctx: CallContext,
  ): AsyncGenerator<RecordBatch, void, undefined> {
    let reads: boolean;
    try {
      reads = this.db.prepare(statement).reader;
    } catch (err) {
      throw callError(err, 'The native query is not valid');
    }
    if (!reads) {
      // After the session's writes, never between the parts of one. A writing statement may also
      // set state of this connection (PRAGMAs, temporary triggers, ATTACH, a transaction) that the
      // writer thread's connection would not have: the session's writes stay on this one from now on.
      await this.writing;
      this.ownWritesOnly = true;
    }
    const db = reads ? open(this.props, true) : this.db;
    try {
      yield* nativeRows(db, statement, params, options.batchSize, ctx);
    } finally {
      if (reads) db.close();
    }
    // A statement may have changed the schema.
    if (!reads) this.tables = undefined;
  }

  async ensureEntity(
    source: EntityMetadata,
    options: EnsureEntityOptions,
    _ctx: CallContext,
  ): Promise<EnsureEntityResult> {
    if (this.props.readOnly) throw new ConnectorError('Unsupported', 'The connection is read-only.');
    const name = options.entity ?? source.fullName;
    await this.writing;
    const existing = this.catalogue().get(name);
    const res = ensureTable(this.db, source, options, existing);
    const md = connectionMetadata([...this.catalogue().values()]);
    const entity = md.entities.find((e) => e.fullName === name);
    if (!entity) throw new ConnectorError('Datastore', `The table ${name} is missing after it was created.`);
    return { entity, created: res.created, addedFields: res.addedFields, mismatchedFields: res.mismatched };
  }

  async readCheckpoint(key: string, _ctx: CallContext): Promise<string | null> {
    // After the session's writes: a checkpoint read right after its batch finds it.
    await this.writing;
    try {
      return readCheckpoint(this.db, key);
    } catch (err) {
      throw callError(err, 'The checkpoint cannot be read');
    }
  }

  async disconnect(_ctx: CallContext): Promise<void> {
    await this.writing;
    await this.writeThread?.close();
    await this.readThread?.close();
    if (this.db.open) this.db.close();
  }
}

const plugin: ConnectorPlugin = {
  async preconnect(properties: ConnectionProperties) {
    const props = parseProps(properties);
    open(props, props.readOnly || !props.create).close();
    return { reply: 'SUCCESS' };
  },
  async connect(properties: ConnectionProperties) {
    const props = parseProps(properties);
    return new SqliteSession(props, open(props, false));
  },
};

export default plugin;
