import fsp from 'node:fs/promises';
import path from 'node:path';
import { constants } from 'node:fs';
import {
  ConnectorError,
  uniqueFullNames,
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
  type PackedBatch,
  type QueryOptions,
  type RecordBatch,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
} from '../../src/connectors/sdk.js';
import { parseProps, type CsvProps } from './properties.js';
import type { CsvEntity } from './entity.js';
import { describeFile, entityNameOf, listEntityFiles, readSchemaFile } from './schema.js';
import { CSV_ACTIONS, entityMetadata } from './metadata.js';
import { queryEntity, queryEntityPacked, readsPacked } from './query.js';
import { writeEntity } from './write.js';
import { ensureEntity } from './ensure-entity.js';
import { checkDelimiter } from './delimiter-check.js';
import { fileError } from './reader.js';
import type { OpenScan } from './thread.js';

/**
 * The csv Connector: a folder of CSV files is a datastore, one file an entity (see
 * docs/connectors.md "csv"). Reads and writes stream; nothing holds a whole file in memory.
 */
class CsvSession implements ConnectorSession {
  private entities: Map<string, CsvEntity> | undefined;
  /** Writes to one file run one at a time (a rewrite must not interleave with an append). */
  private readonly locks = new Map<string, Promise<unknown>>();
  /** The scan threads of the session's open queries (thread.ts): closed with the session. */
  private readonly threads = new Set<OpenScan>();

  constructor(private readonly props: CsvProps) {}

  async test(_ctx: CallContext): Promise<void> {
    try {
      await fsp.access(this.props.folder, constants.R_OK | constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT')
        throw new ConnectorError('Unreachable', `The folder ${this.props.folder} does not exist or is not mounted.`, {
          nativeCode: code,
        });
      throw fileError(err, this.props.folder);
    }
    const st = await fsp.stat(this.props.folder);
    if (!st.isDirectory()) throw new ConnectorError('InvalidProperties', `${this.props.folder} is not a folder.`);
    await readSchemaFile(this.props);
    await checkDelimiter(this.props);
  }

  private async describeAll(): Promise<Map<string, CsvEntity>> {
    const files = await listEntityFiles(this.props);
    const schema = await readSchemaFile(this.props);
    const fullNames = uniqueFullNames(files.map((f) => entityNameOf(f, this.props)));
    const out = new Map<string, CsvEntity>();
    for (let i = 0; i < files.length; i++) {
      const e = await describeFile(files[i] as string, fullNames[i] as string, this.props, schema);
      out.set(e.fullName, e);
    }
    this.entities = out;
    return out;
  }

  private async entity(fullName: string): Promise<CsvEntity> {
    let e = this.entities?.get(fullName);
    if (!e) e = (await this.describeAll()).get(fullName);
    if (!e)
      throw new ConnectorError(
        'EntityNotFound',
        `The folder ${this.props.folder} has no file for the entity ${fullName}.`,
      );
    return e;
  }

  async metadata(_ctx: CallContext): Promise<ConnectionMetadata> {
    const all = await this.describeAll();
    return { entities: [...all.values()].map(entityMetadata), actions: CSV_ACTIONS };
  }

  async *query(
    entity: string,
    filter: Filter | undefined,
    options: QueryOptions,
    ctx: CallContext,
  ): AsyncGenerator<RecordBatch, void, undefined> {
    const e = await this.entity(entity);
    yield* queryEntity(e, filter, options, this.props, ctx, this.threads);
  }

  /** Queries without an order or net change are read packed: in the scan thread when they read there and have no filter. */
  readsPacked(options: QueryOptions): boolean {
    return readsPacked(options);
  }

  async *queryPacked(
    entity: string,
    filter: Filter | undefined,
    options: QueryOptions,
    ctx: CallContext,
  ): AsyncGenerator<PackedBatch, void, undefined> {
    const e = await this.entity(entity);
    yield* queryEntityPacked(e, filter, options, this.props, ctx, this.threads);
  }

  async write(
    action: WriteAction,
    entity: string,
    batch: readonly ConnectorRecord[],
    options: WriteOptions,
    ctx: CallContext,
  ): Promise<WriteResult[]> {
    const e = await this.entity(entity);
    return this.locked(e.file, () => writeEntity(action, e, batch, options, this.props, ctx));
  }

  async ensureEntity(
    source: EntityMetadata,
    options: EnsureEntityOptions,
    ctx: CallContext,
  ): Promise<EnsureEntityResult> {
    const file = path.join(this.props.folder, `${options.entity ?? source.fullName}${this.props.extension}`);
    const { result, entity } = await this.locked(file, () => ensureEntity(source, options, this.props, ctx));
    this.entities?.set(entity.fullName, entity);
    return result;
  }

  private async locked<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.locks.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    }
  }

  async disconnect(_ctx: CallContext): Promise<void> {
    this.entities = undefined;
    const closed = new ConnectorError('Aborted', 'The session was disconnected: its query was stopped.');
    await Promise.all([...this.threads].map((t) => t.close(closed)));
    this.threads.clear();
  }
}

const plugin: ConnectorPlugin = {
  async preconnect(properties: ConnectionProperties, ctx: CallContext) {
    const props = parseProps(properties);
    await new CsvSession(props).test(ctx);
    return { reply: 'SUCCESS' };
  },
  async connect(properties: ConnectionProperties) {
    return new CsvSession(parseProps(properties));
  },
};

export default plugin;
