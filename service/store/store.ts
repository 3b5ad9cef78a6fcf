import path from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CamelCasePlugin,
  Kysely,
  Migrator,
  PostgresDialect,
  type Migration,
  type MigrationProvider,
  type Transaction,
} from 'kysely';
import pg from 'pg';
import { mkdirPrivate, touchPrivate } from './data-dir.js';
import type { StoreDialect } from './dialect.js';
import { foundation } from './migrations/001-foundation.js';
import { lookupTables } from './migrations/002-lookup-tables.js';
import { agents } from './migrations/005-agents.js';
import { connections } from './migrations/006-connections.js';
import { metadata } from './migrations/007-metadata.js';
import { connectorInstalls, type PreinstalledConnector } from './migrations/008-connector-installs.js';
import { solutions } from './migrations/009-solutions.js';
import { solutionSchedules } from './migrations/010-solution-schedules.js';
import { maps } from './migrations/011-maps.js';
import { executions } from './migrations/012-executions.js';
import { prepare } from './migrations/013-prepare.js';
import { failedRecords } from './migrations/014-failed-records.js';
import { mapLocks } from './migrations/015-map-locks.js';
import { mapExports } from './migrations/016-map-exports.js';
import { mapValidations } from './migrations/017-map-validations.js';
import { mapPreviews } from './migrations/018-map-previews.js';
import { historyMarks } from './migrations/019-history-marks.js';
import { historyExports } from './migrations/020-history-exports.js';
import { mailOutbox } from './migrations/022-mail-outbox.js';
import { historyMarkDefault } from './migrations/023-history-mark-default.js';
import { executionsInProgress } from './migrations/024-executions-in-progress.js';
import { reprocessRunPartial } from './migrations/025-reprocess-run-partial.js';
import { connectionLastTestedAgent } from './migrations/027-connection-last-tested-agent.js';
import { errorSourceKeys } from './migrations/028-error-source-keys.js';
import { agentChannels } from './migrations/029-agent-channels.js';
import { limitWindows } from './migrations/030-limit-windows.js';
import { serviceLeases } from './migrations/031-service-leases.js';
import { agentCommandsUnlogged } from './migrations/032-agent-commands-unlogged.js';
import { logArchiveChunks } from './migrations/033-log-archive-chunks.js';
import { metadataRequestReplica } from './migrations/034-metadata-request-replica.js';
import { eventMessages } from './migrations/035-event-messages.js';
import { eventReplies } from './migrations/036-event-replies.js';
import { eventAccessNotify } from './migrations/037-event-access-notify.js';
import { cloneJobs } from './migrations/038-clone-jobs.js';
import { sharedSolutions } from './migrations/039-shared-solutions.js';
import { agentUpdates } from './migrations/041-agent-updates.js';
import { consoleSessions } from './migrations/040-console-sessions.js';
import type { Database } from './schema.js';
import { SqliteReadWriteDialect } from './sqlite-dialect.js';
import { SqliteWorkerDialect } from './sqlite-worker-dialect.js';
import { WriteWatch } from './write-watch.js';

/** The Service's database handle: the Kysely instance, which dialect it speaks, and how to close it. */
export interface Store {
  readonly db: Kysely<Database>;
  readonly dialect: StoreDialect;
  /**
   * Runs a long write transaction (an import of a million rows) without holding up the event
   * loop: on SQLite its statements and its COMMIT run on a worker thread's connection while the
   * Service's other writes wait; on PostgreSQL it is an ordinary transaction.
   */
  bulkTransaction<T>(work: (tx: Transaction<Database>) => Promise<T>): Promise<T>;
  /** Tells caches of the writes this process makes to the tables they hold rows of. */
  readonly writes: WriteWatch;
  close(): Promise<void>;
}

export interface StoreOptions {
  /** `postgres://…` for PostgreSQL; absent for SQLite in `dataDir`. */
  databaseUrl?: string | undefined;
  dataDir: string;
  /**
   * The Connectors every Organization starts with (the Marketplace's built-in public ones): the
   * migration that brings Connector installs gives them to the Organizations that exist then.
   */
  preinstalledConnectors: readonly PreinstalledConnector[];
  /** Told of errors on idle PostgreSQL connections (a server restart, an administrator's kill). */
  onConnectionError?: (err: Error) => void;
}

// PostgreSQL bigint (count(*), sums) as a JS number: record counts stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

/** Opens the store and brings its schema up to date. */
export async function openStore(opts: StoreOptions): Promise<Store> {
  const store = opts.databaseUrl ? openPostgres(opts.databaseUrl, opts.onConnectionError) : openSqlite(opts.dataDir);
  try {
    await migrate(store, opts.preinstalledConnectors);
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}

function openSqlite(dataDir: string): Store {
  mkdirPrivate(dataDir);
  const file = path.join(dataDir, 'ferry.db');
  // SQLite would create the file 0644; made 0600 first, it passes that mode on to -wal and -shm.
  touchPrivate(file);
  const database = new SQLite(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  // A second connection serves reads beside a long write transaction (WAL allows it): see sqlite-dialect.ts.
  const reader = new SQLite(file);
  reader.pragma('busy_timeout = 5000');
  reader.pragma('query_only = ON');
  const dialect = new SqliteReadWriteDialect({ writer: database, reader });
  const writes = new WriteWatch();
  const db = new Kysely<Database>({ dialect, plugins: [new CamelCasePlugin(), writes] });
  const bulk = new Kysely<Database>({
    dialect: new SqliteWorkerDialect({ file, mutex: dialect.mutex }),
    plugins: [new CamelCasePlugin(), writes],
  });
  return {
    db,
    dialect: 'sqlite',
    writes,
    bulkTransaction: (work) => bulk.transaction().execute(work),
    close: async () => {
      await bulk.destroy();
      await db.destroy();
    },
  };
}

function openPostgres(url: string, onConnectionError: (err: Error) => void = () => undefined): Store {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  // A client that loses its server emits 'error'; unheard, it would end the process. The pool hears
  // it only while the client is idle (it removes its own listener on checkout), so each client also
  // gets a listener of its own for the time it is checked out: a query in flight fails by itself,
  // and a client between two queries of a transaction learns it on its next query. The pool drops a
  // broken client on release and opens a new one on the next query.
  pool.on('error', onConnectionError);
  pool.on('connect', (client) => client.on('error', onConnectionError));
  const writes = new WriteWatch();
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    plugins: [new CamelCasePlugin(), writes],
  });
  return {
    db,
    dialect: 'postgres',
    writes,
    bulkTransaction: (work) => db.transaction().execute(work),
    close: () => db.destroy(),
  };
}

function migrations(dialect: StoreDialect, preinstalled: readonly PreinstalledConnector[]): Record<string, Migration> {
  return {
    '001-foundation': foundation(dialect),
    '002-lookup-tables': lookupTables(dialect),
    '005-agents': agents(),
    '006-connections': connections(),
    '007-metadata': metadata(),
    '008-connector-installs': connectorInstalls(preinstalled),
    '009-solutions': solutions(),
    '010-solution-schedules': solutionSchedules(),
    '011-maps': maps(dialect),
    '012-executions': executions(dialect),
    '013-prepare': prepare(),
    '014-failed-records': failedRecords(),
    '015-map-locks': mapLocks(),
    '016-map-exports': mapExports(dialect),
    '017-map-validations': mapValidations(),
    '018-map-previews': mapPreviews(),
    '019-history-marks': historyMarks(),
    '020-history-exports': historyExports(dialect),
    '022-mail-outbox': mailOutbox(),
    '023-history-mark-default': historyMarkDefault(dialect),
    '024-executions-in-progress': executionsInProgress(),
    '025-reprocess-run-partial': reprocessRunPartial(),
    '027-connection-last-tested-agent': connectionLastTestedAgent(),
    '028-error-source-keys': errorSourceKeys(),
    '029-agent-channels': agentChannels(),
    '030-limit-windows': limitWindows(dialect),
    '031-service-leases': serviceLeases(),
    '032-agent-commands-unlogged': agentCommandsUnlogged(dialect),
    '033-log-archive-chunks': logArchiveChunks(dialect),
    '034-metadata-request-replica': metadataRequestReplica(),
    '035-event-messages': eventMessages(dialect),
    '036-event-replies': eventReplies(),
    '037-event-access-notify': eventAccessNotify(dialect),
    '038-clone-jobs': cloneJobs(),
    '039-shared-solutions': sharedSolutions(),
    '040-console-sessions': consoleSessions(),
    '041-agent-updates': agentUpdates(),
  };
}

async function migrate(store: Store, preinstalled: readonly PreinstalledConnector[]): Promise<void> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(store.dialect, preinstalled) };
  // Migrations run on the raw (snake_case) schema: no CamelCasePlugin there.
  const raw = store.db.withoutPlugins();
  const migrator = new Migrator({
    db: raw,
    provider,
    migrationTableName: 'ferry_migrations',
    migrationLockTableName: 'ferry_migrations_lock',
  });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`Store migration ${failed?.migrationName ?? ''} failed`, { cause: error });
  }
}
