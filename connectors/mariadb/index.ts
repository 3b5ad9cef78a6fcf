import type { Pool } from 'mysql2';
import {
  ConnectorError,
  isConnectorError,
  packRecords,
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
import { readCatalogue, type MariaTable } from './catalogue.js';
import { ensureTable } from './ensure-entity.js';
import { callError } from './errors.js';
import { connectionMetadata } from './metadata.js';
import { checkout, endPool, openPool, rows } from './pool.js';
import { parseProps, type MariaProps } from './properties.js';
import { columnOf, nativeRows, queryTable } from './query.js';
import { packable, queryTablePacked } from './read-packed.js';
import { MariaWriter } from './write.js';

/**
 * The MariaDB / MySQL Connector (docs/connectors.md "mariadb"): a pool of mysql2 connections;
 * metadata from information_schema; queries streamed with the connection paused between batches;
 * bulk Create through LOAD DATA LOCAL INFILE, Upsert through INSERT … ON DUPLICATE KEY UPDATE.
 */
class MariaSession implements ConnectorSession {
  /** A query is one SELECT: InnoDB reads it from one snapshot. */
  readonly snapshotQueries = true;
  private tables: Map<string, MariaTable> | undefined;

  constructor(
    private readonly props: MariaProps,
    private readonly pool: Pool,
    private readonly writer: MariaWriter,
  ) {}

  async test(ctx: CallContext): Promise<void> {
    const { conn, release } = await checkout(this.pool, ctx);
    try {
      await rows(conn, 'SELECT 1');
      release();
    } catch (err) {
      release(true);
      throw callError(err, 'The test query failed');
    }
  }

  private async catalogue(ctx: CallContext): Promise<Map<string, MariaTable>> {
    const { conn, release } = await checkout(this.pool, ctx);
    try {
      const tables = await readCatalogue((sql, params) => rows(conn, sql, params), this.props.database);
      this.tables = new Map(tables.map((t) => [t.fullName, t]));
      release();
      return this.tables;
    } catch (err) {
      release(true);
      throw callError(err, 'The catalogue cannot be read');
    }
  }

  private async table(fullName: string, ctx: CallContext): Promise<MariaTable> {
    const t = this.tables?.get(fullName) ?? (await this.catalogue(ctx)).get(fullName);
    if (!t) throw new ConnectorError('EntityNotFound', `The database has no table or view ${fullName}.`);
    return t;
  }

  async metadata(ctx: CallContext): Promise<ConnectionMetadata> {
    return connectionMetadata([...(await this.catalogue(ctx)).values()], this.props.database);
  }

  async *query(
    entity: string,
    filter: Filter | undefined,
    options: QueryOptions,
    ctx: CallContext,
  ): AsyncGenerator<RecordBatch, void, undefined> {
    const table = await this.table(entity, ctx);
    yield* queryTable(this.pool, this.props.pool, table, filter, options, ctx);
  }

  /** Bulk reads (a copy's batches) are read packed from the protocol (read-packed.ts); lookups stay records. */
  readsPacked(options: QueryOptions): boolean {
    return options.batchSize >= 500;
  }

  async *queryPacked(
    entity: string,
    filter: Filter | undefined,
    options: QueryOptions,
    ctx: CallContext,
  ): AsyncGenerator<PackedBatch, void, undefined> {
    const table = await this.table(entity, ctx);
    if (packable(options.fields ? options.fields.map((f) => columnOf(table, f)) : table.columns)) {
      yield* queryTablePacked(this.pool, this.props.pool, table, filter, options, ctx);
      return;
    }
    // Spatial columns: mysql2 parses them; their records are read, then packed.
    const fields = options.fields ?? table.columns.map((c) => c.fullName);
    for await (const batch of queryTable(this.pool, this.props.pool, table, filter, options, ctx))
      yield packRecords(batch, fields);
  }

  async write(
    action: WriteAction,
    entity: string,
    batch: readonly ConnectorRecord[],
    options: WriteOptions,
    ctx: CallContext,
  ): Promise<WriteResult[]> {
    return this.writer.write(action, await this.table(entity, ctx), batch, options, ctx);
  }

  async writePacked(
    action: WriteAction,
    entity: string,
    batch: PackedBatch,
    options: WriteOptions,
    ctx: CallContext,
  ): Promise<WriteResult[]> {
    return this.writer.writePacked(action, await this.table(entity, ctx), batch, options, ctx);
  }

  async *nativeQuery(
    statement: string,
    params: readonly Value[],
    options: NativeQueryOptions,
    ctx: CallContext,
  ): AsyncGenerator<RecordBatch, void, undefined> {
    yield* nativeRows(this.pool, this.props.pool, statement, params, options.batchSize, ctx);
    // A statement may have changed the schema.
    this.tables = undefined;
  }

  async ensureEntity(
    source: EntityMetadata,
    options: EnsureEntityOptions,
    ctx: CallContext,
  ): Promise<EnsureEntityResult> {
    const name = options.entity ?? source.fullName;
    const existing = (await this.catalogue(ctx)).get(name);
    const { conn, release } = await checkout(this.pool, ctx);
    let res: Awaited<ReturnType<typeof ensureTable>>;
    try {
      res = await ensureTable(conn, source, options, existing);
    } finally {
      release();
    }
    const md = connectionMetadata([...(await this.catalogue(ctx)).values()], this.props.database);
    const entity = md.entities.find((e) => e.fullName === name);
    if (!entity) throw new ConnectorError('Datastore', `The table ${name} is missing after it was created.`);
    return { entity, created: res.created, addedFields: res.addedFields, mismatchedFields: res.mismatched };
  }

  async readCheckpoint(key: string, ctx: CallContext): Promise<string | null> {
    return this.writer.readCheckpoint(key, ctx);
  }

  async disconnect(_ctx: CallContext): Promise<void> {
    await endPool(this.pool);
  }
}

/** A pool whose first connection worked; the statement size its writes keep under. */
async function connectPool(props: MariaProps, ctx: CallContext): Promise<{ pool: Pool; statementBytes: number }> {
  const pool = openPool(props.pool, ctx);
  try {
    const { conn, release } = await checkout(pool, ctx);
    try {
      const [row] = await rows<{ packet: number | string }>(conn, 'SELECT @@max_allowed_packet AS packet');
      release();
      // A quarter of the packet, at most 8 MiB: room for escapes and the statement's own text.
      return { pool, statementBytes: Math.max(64 * 1024, Math.min(Number(row?.packet ?? 4 << 20) / 4, 8 << 20)) };
    } catch (err) {
      release(true);
      throw callError(err, 'Cannot connect to MariaDB');
    }
  } catch (err) {
    await endPool(pool);
    if (isConnectorError(err)) throw err;
    const mapped = callError(err, 'Cannot connect to MariaDB');
    throw mapped === err
      ? new ConnectorError('Unreachable', `Cannot connect to MariaDB: ${(err as Error).message}`, { cause: err })
      : mapped;
  }
}

const plugin: ConnectorPlugin = {
  async preconnect(properties: ConnectionProperties, ctx: CallContext) {
    const { pool } = await connectPool(parseProps(properties), ctx);
    await endPool(pool);
    return { reply: 'SUCCESS' };
  },
  async connect(properties: ConnectionProperties, ctx: CallContext) {
    const props = parseProps(properties);
    const { pool, statementBytes } = await connectPool(props, ctx);
    const writer = new MariaWriter({
      pool,
      poolOptions: props.pool,
      bulkMethod: props.bulkMethod,
      loadData: props.bulkMethod !== 'insert',
      statementBytes,
      checkpointTable: false,
    });
    return new MariaSession(props, pool, writer);
  },
};

export default plugin;
