import pg from 'pg';
import type { Pool, PoolConfig } from 'pg';
import {
  ConnectorError,
  type CallContext,
  type ConnectionMetadata,
  type ConnectionProperties,
  type ConnectorPlugin,
  type ConnectorRecord,
  type ConnectorSession,
  type EnsureEntityOptions,
  type EnsureEntityResult,
  type ChangeBatch,
  type ChangeCaptureSetup,
  type ChangeCaptureStatus,
  type ReadChangesOptions,
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
import { parseProps, type PgProps } from './properties.js';
import { readCatalogue, type PgTable } from './catalogue.js';
import { connectionMetadata } from './metadata.js';
import { checkout } from './cursor.js';
import { callError } from './errors.js';
import { nativeRows, queryTable } from './query.js';
import { queryTablePacked } from './copy-out.js';
import { PgWriter } from './write/index.js';
import { ensureTable } from './ensure-entity.js';
import { captureStatus, dropCapture, readChanges, setupCapture, type OpenStreams } from './changes.js';

/**
 * The postgres Connector (docs/connectors.md "postgres"): a pool of pg connections; metadata from
 * pg_catalog; queries through server-side cursors; bulk writes through COPY and unnest statements.
 */
class PgSession implements ConnectorSession {
  /** A query is one statement in a REPEATABLE READ transaction (cursor.ts) or one statement: one snapshot. */
  readonly snapshotQueries = true;
  private tables: Map<string, PgTable> | undefined;
  private readonly writer: PgWriter;
  private readonly streams: OpenStreams = new Map();

  constructor(
    private readonly props: PgProps,
    private readonly pool: Pool,
  ) {
    this.writer = new PgWriter(pool, props.targetSchema);
  }

  private get config(): PoolConfig {
    return this.props.pool;
  }

  async test(ctx: CallContext): Promise<void> {
    const { client, release } = await checkout(this.pool, ctx);
    try {
      await client.query('SELECT 1');
      release();
    } catch (err) {
      release(err as Error);
      throw callError(err, 'The test query failed', client);
    }
  }

  private async catalogue(ctx: CallContext): Promise<Map<string, PgTable>> {
    const { client, release } = await checkout(this.pool, ctx);
    try {
      const tables = await readCatalogue(client, this.props.schemas);
      this.tables = new Map(tables.map((t) => [t.fullName, t]));
      release();
      return this.tables;
    } catch (err) {
      release(err as Error);
      throw callError(err, 'The catalogue cannot be read', client);
    }
  }

  private async table(fullName: string, ctx: CallContext): Promise<PgTable> {
    const t = this.tables?.get(fullName) ?? (await this.catalogue(ctx)).get(fullName);
    if (!t) throw new ConnectorError('EntityNotFound', `The database has no table or view ${fullName}.`);
    return t;
  }

  async metadata(ctx: CallContext): Promise<ConnectionMetadata> {
    return connectionMetadata([...(await this.catalogue(ctx)).values()]);
  }

  async *query(
    entity: string,
    filter: Filter | undefined,
    options: QueryOptions,
    ctx: CallContext,
  ): AsyncGenerator<RecordBatch, void, undefined> {
    const table = await this.table(entity, ctx);
    yield* queryTable(this.pool, this.config, table, filter, options, ctx);
  }

  /** Bulk reads (a copy's batches) are read packed through COPY TO (copy-out.ts); lookups stay records. */
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
    yield* queryTablePacked(this.pool, this.config, table, filter, options, ctx);
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
    yield* nativeRows(this.pool, this.config, statement, params, options.batchSize, ctx);
    // A statement may have changed the schema.
    this.tables = undefined;
  }

  async setupChangeCapture(name: string, entities: readonly string[], ctx: CallContext): Promise<ChangeCaptureSetup> {
    await this.catalogue(ctx);
    const tables = await Promise.all(entities.map((e) => this.table(e, ctx)));
    return setupCapture(this.pool, name, tables, ctx);
  }

  async *readChanges(name: string, options: ReadChangesOptions, ctx: CallContext): AsyncGenerator<ChangeBatch> {
    const tables = [...(this.tables ?? (await this.catalogue(ctx))).values()];
    const bySchema = new Map(tables.map((t) => [`${t.schema}\u0000${t.name}`, t]));
    yield* readChanges(
      this.pool,
      this.config,
      name,
      options,
      (schema, table) => bySchema.get(`${schema}\u0000${table}`),
      this.streams,
      ctx,
    );
  }

  async confirmChanges(name: string, position: string, ctx: CallContext): Promise<void> {
    const open = this.streams.get(name);
    if (open) return open.confirm(position);
    // No stream of it in this session: the slot is moved directly (it must not be in use).
    const { client, release } = await checkout(this.pool, ctx);
    try {
      await client.query(
        'SELECT pg_replication_slot_advance(slot_name, $2::pg_lsn) FROM pg_replication_slots WHERE slot_name = $1 AND confirmed_flush_lsn < $2::pg_lsn',
        [name, position],
      );
      release();
    } catch (err) {
      release(err as Error);
      throw callError(err, 'The change capture position cannot be confirmed', client);
    }
  }

  changeCaptureStatus(name: string, ctx: CallContext): Promise<ChangeCaptureStatus> {
    return captureStatus(this.pool, name, ctx);
  }

  dropChangeCapture(name: string, ctx: CallContext): Promise<void> {
    return dropCapture(this.pool, name, ctx);
  }

  async ensureEntity(
    source: EntityMetadata,
    options: EnsureEntityOptions,
    ctx: CallContext,
  ): Promise<EnsureEntityResult> {
    const name = options.entity ?? source.fullName;
    const existing = (await this.catalogue(ctx)).get(name);
    const { client, release } = await checkout(this.pool, ctx);
    let res: Awaited<ReturnType<typeof ensureTable>>;
    try {
      res = await ensureTable(client, source, options, this.props.targetSchema, existing);
    } finally {
      release();
    }
    const md = connectionMetadata([...(await this.catalogue(ctx)).values()]);
    const entity =
      md.entities.find((e) => e.fullName === name) ??
      md.entities.find((e) => e.originalName === `${this.props.targetSchema}.${name}`);
    if (!entity) throw new ConnectorError('Datastore', `The table ${name} is missing after it was created.`);
    return { entity, created: res.created, addedFields: res.addedFields, mismatchedFields: res.mismatched };
  }

  async readCheckpoint(key: string, ctx: CallContext): Promise<string | null> {
    return this.writer.readCheckpoint(key, ctx);
  }

  async disconnect(_ctx: CallContext): Promise<void> {
    if (!this.pool.ended) await this.pool.end();
  }
}

async function openPool(props: PgProps, ctx: CallContext): Promise<Pool> {
  const pool = new pg.Pool(props.pool);
  // An idle connection that breaks emits 'error' on the pool; unheard, it would end the process.
  pool.on('error', (err) =>
    ctx.log.warn(
      { err: { message: err.message, code: (err as { code?: string }).code } },
      'idle postgres connection failed',
    ),
  );
  try {
    const client = await pool.connect();
    client.release();
  } catch (err) {
    await pool.end().catch(() => undefined);
    const mapped = callError(err, 'Cannot connect to PostgreSQL');
    // A failure while connecting without a code (a time-out) is still a failure to reach the server.
    throw mapped === err
      ? new ConnectorError('Unreachable', `Cannot connect to PostgreSQL: ${(err as Error).message}`, { cause: err })
      : mapped;
  }
  return pool;
}

const plugin: ConnectorPlugin = {
  async preconnect(properties: ConnectionProperties, ctx: CallContext) {
    const pool = await openPool(parseProps(properties), ctx);
    await pool.end();
    return { reply: 'SUCCESS' };
  },
  async connect(properties: ConnectionProperties, ctx: CallContext) {
    const props = parseProps(properties);
    return new PgSession(props, await openPool(props, ctx));
  },
};

export default plugin;
