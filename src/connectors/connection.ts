import type { ConnectorManifest } from '../protocol/connector-manifest.js';
import { Filter } from '../protocol/filter.js';
import { FerryError } from '../errors/ferry-error.js';
import { guardBatches, guardCall, guardIterable, type CallOptions, type CallScope } from './guard.js';
import { metadataFingerprint, type MetadataCache } from './metadata-cache.js';
import { consumeGuarded } from './consume.js';
import type { ConsumeOptions, Consumption, MessageSource } from './consume-types.js';
import {
  DEFAULT_BATCH_SIZE,
  WRITE_ACTIONS,
  type ChangeBatch,
  type ChangeCaptureSetup,
  type ChangeCaptureStatus,
  type ReadChangesOptions,
  type ConnectionMetadata,
  type ConnectionProperties,
  type ConnectorRecord,
  type ConnectorSession,
  type EnsureEntityOptions,
  type EnsureEntityResult,
  type EntityMetadata,
  isPackedBatch,
  type PackedBatch,
  type QueryOptions,
  recordMaker,
  unpackRecords,
  type RecordBatch,
  type Value,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
} from './sdk.js';

/**
 * How long an aborted write waits for its plugin to stop: the time to cancel its statement on the
 * server (a connection of its own to send the cancel), so that nothing of it commits after the run
 * has ended; a plugin that ignores its signal costs the caller this much at most.
 */
const WRITE_SETTLE_MS = 2_000;

type Verb = 'test' | 'metadata' | 'write' | 'ensureEntity' | 'disconnect';

export interface HostConnectionInit {
  manifest: ConnectorManifest;
  connectionId: string;
  properties: ConnectionProperties;
  session: ConnectorSession;
  scope: (verb: string) => CallScope;
  cache: MetadataCache;
  timeouts: Record<Verb, number>;
  onClose: (c: HostConnection) => void;
  /** Told of every plugin write call (the Agent's metrics: write latency, records written and refused). */
  onWrite?: WriteObserver | undefined;
}

/** One plugin write call: its time, its records, how many the datastore refused, whether the call as a whole failed. */
export type WriteObserver = (call: { seconds: number; records: number; refused: number; ok: boolean }) => void;

/** Query options as callers give them: `batchSize` defaults to min(2000, bulkLimit). */
export type HostQueryOptions = Partial<QueryOptions> & CallOptions;

/**
 * One open Connection, as the Agent's commands and the Map runtime use it. Every method is
 * contained (a plugin failure is a `CON_` FerryError for that call only), takes CallOptions
 * (signal, timeoutMs, onProgress), and enforces the SDK contract: batches no larger than asked,
 * one write result per record in order, writes split at the plugin's bulkLimit.
 */
export class HostConnection {
  readonly manifest: ConnectorManifest;
  readonly connectionId: string;
  private readonly init: HostConnectionInit;
  private closed = false;

  constructor(init: HostConnectionInit) {
    this.init = init;
    this.manifest = init.manifest;
    this.connectionId = init.connectionId;
  }

  /** Most records per batch and per write call the plugin accepts. */
  get bulkLimit(): number {
    return this.manifest.bulkLimit;
  }

  private live(verb: string): CallScope {
    if (this.closed)
      throw new FerryError('CON_CLOSED', `The connection ${this.connectionId} is closed.`, {
        details: { connectionId: this.connectionId, verb },
      });
    return this.init.scope(verb);
  }

  private timeout(verb: Verb, opts: CallOptions): CallOptions {
    return { timeoutMs: this.init.timeouts[verb], ...opts };
  }

  /** Proves the connection works; throws a FerryError (CON_AUTH_FAILED, CON_UNREACHABLE, …) if not. */
  async test(opts: CallOptions = {}): Promise<void> {
    const s = this.init.session;
    await guardCall(this.live('test'), this.timeout('test', opts), (ctx) => s.test(ctx));
  }

  /** The Connection's metadata, from the cache unless `reload` (or the properties changed). */
  async metadata(opts: CallOptions & { reload?: boolean } = {}): Promise<ConnectionMetadata> {
    const scope = this.live('metadata');
    const { reload, ...callOpts } = opts;
    if (reload) this.init.cache.invalidate(this.connectionId);
    const fp = metadataFingerprint(this.manifest.id, this.manifest.version, this.init.properties);
    const s = this.init.session;
    return this.init.cache.get(this.connectionId, fp, async () => {
      const md = await guardCall(scope, this.timeout('metadata', callOpts), (ctx) => s.metadata(ctx));
      if (!md || !Array.isArray(md.entities)) {
        throw new FerryError(
          'CON_PROTOCOL_VIOLATION',
          `The ${this.manifest.name} connector's metadata has no entities list.`,
          { details: { connector: this.manifest.name } },
        );
      }
      return md;
    });
  }

  /** One entity's metadata by fullName (from the cached metadata); `CON_ENTITY_NOT_FOUND` if absent. */
  async entity(fullName: string, opts: CallOptions & { reload?: boolean } = {}): Promise<EntityMetadata> {
    const md = await this.metadata(opts);
    const e =
      md.entities.find((x) => x.fullName === fullName) ??
      md.entities.find((x) => x.fullName.toLowerCase() === fullName.toLowerCase());
    if (!e)
      throw new FerryError('CON_ENTITY_NOT_FOUND', `The ${this.manifest.name} connection has no entity ${fullName}.`, {
        details: { connectionId: this.connectionId, entity: fullName },
      });
    return e;
  }

  private batchSize(asked: number | undefined): number {
    const size = asked ?? Math.min(DEFAULT_BATCH_SIZE, this.bulkLimit);
    if (!Number.isInteger(size) || size < 1)
      throw new FerryError('CON_QUERY_INVALID', `The batch size ${size} is not a positive whole number.`);
    return Math.min(size, this.bulkLimit);
  }

  /**
   * The records of an entity as a stream of batches (filter and options per the SDK). Time-outs
   * apply to each pull, not to the whole stream; pass a signal to stop it.
   */
  query(entity: string, filter?: Filter, opts: HostQueryOptions = {}): AsyncIterable<RecordBatch> {
    const scope = this.live('query');
    const { options, callOpts } = this.queryCall(filter, opts);
    const s = this.init.session;
    return guardIterable(scope, callOpts, options.batchSize, (ctx) => s.query(entity, filter, options, ctx));
  }

  /**
   * The records of an entity as packed batches (packed.ts), when the plugin reads this query
   * packed; else undefined, and the caller uses {@link query}. Otherwise as `query`.
   */
  queryPacked(entity: string, filter?: Filter, opts: HostQueryOptions = {}): AsyncIterable<PackedBatch> | undefined {
    const s = this.init.session;
    const { options, callOpts } = this.queryCall(filter, opts);
    if (typeof s.queryPacked !== 'function' || typeof s.readsPacked !== 'function' || s.readsPacked(options) !== true)
      return undefined;
    const scope = this.live('query');
    const run = s.queryPacked.bind(s);
    return guardBatches(
      scope,
      callOpts,
      options.batchSize,
      (ctx) => run(entity, filter, options, ctx),
      (b) => (isPackedBatch(b) ? b.rows : undefined),
      'rows',
    );
  }

  /** A query's options for the plugin and its call options; `CON_QUERY_INVALID` for a filter that is not one. */
  private queryCall(
    filter: Filter | undefined,
    opts: HostQueryOptions,
  ): { options: QueryOptions; callOpts: CallOptions } {
    const { signal, timeoutMs, onProgress, batchSize, ...rest } = opts;
    if (filter !== undefined) {
      const parsed = Filter.safeParse(filter);
      if (!parsed.success) {
        throw new FerryError(
          'CON_QUERY_INVALID',
          `The filter is not valid: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
        );
      }
    }
    return {
      options: { ...rest, batchSize: this.batchSize(batchSize) },
      callOpts: {
        ...(signal ? { signal } : {}),
        ...(timeoutMs ? { timeoutMs } : {}),
        ...(onProgress ? { onProgress } : {}),
      },
    };
  }

  /**
   * Writes a packed batch as {@link write} writes its records: through the plugin's writePacked
   * when it has one, else as records.
   */
  async writePacked(
    action: WriteAction,
    entity: string,
    batch: PackedBatch,
    opts: WriteOptions & CallOptions = {},
  ): Promise<WriteResult[]> {
    const s = this.init.session;
    if (
      typeof s.writePacked !== 'function' ||
      batch.rows > this.bulkLimit ||
      batch.rows === 0 ||
      opts.checkpoint ||
      !(WRITE_ACTIONS as readonly string[]).includes(action)
    ) {
      return this.write(action, entity, unpackRecords(batch, recordMaker(batch.fields)), opts);
    }
    const scope = this.live('write');
    const { keyFields, signal, timeoutMs, onProgress } = opts;
    const writeOpts: WriteOptions = keyFields ? { keyFields } : {};
    const callOpts = this.timeout('write', {
      ...(signal ? { signal } : {}),
      ...(timeoutMs ? { timeoutMs } : {}),
      ...(onProgress ? { onProgress } : {}),
      settleMs: WRITE_SETTLE_MS,
    });
    const run = s.writePacked.bind(s);
    return this.checkResults(
      await this.observed(batch.rows, () =>
        guardCall(scope, callOpts, (ctx) => run(action, entity, batch, writeOpts, ctx)),
      ),
      batch.rows,
      action,
      entity,
    );
  }

  /** A plugin write call, timed for {@link HostConnectionInit.onWrite} when one listens. */
  private async observed(records: number, call: () => Promise<unknown>): Promise<unknown> {
    const onWrite = this.init.onWrite;
    if (!onWrite) return call();
    const t0 = performance.now();
    let refused = records;
    let ok = false;
    try {
      const results = await call();
      refused = Array.isArray(results)
        ? results.filter((r) => isWriteResult(r) && (r as WriteResult).ok === false).length
        : 0;
      ok = true;
      return results;
    } finally {
      onWrite({ seconds: (performance.now() - t0) / 1000, records, refused, ok });
    }
  }

  /** A write's results as the SDK promises them: one well-formed result per record. */
  private checkResults(results: unknown, records: number, action: WriteAction, entity: string): WriteResult[] {
    if (!Array.isArray(results) || results.length !== records || !results.every(isWriteResult)) {
      throw new FerryError(
        'CON_PROTOCOL_VIOLATION',
        `The ${this.manifest.name} connector's write returned ${Array.isArray(results) ? `${results.length} results (each needs ok: true | false)` : 'no results'} for ${records} records.`,
        { details: { connector: this.manifest.name, connectionId: this.connectionId, action, entity } },
      );
    }
    return results as WriteResult[];
  }

  /** Runs a statement in the datastore's own language; `CON_UNSUPPORTED` where the plugin has none. */
  nativeQuery(
    statement: string,
    params: readonly Value[] = [],
    opts: CallOptions & { batchSize?: number } = {},
  ): AsyncIterable<RecordBatch> {
    const scope = this.live('nativeQuery');
    const s = this.init.session;
    if (typeof s.nativeQuery !== 'function') {
      throw new FerryError('CON_UNSUPPORTED', `The ${this.manifest.name} connector has no native query.`, {
        details: { connector: this.manifest.name },
      });
    }
    const { batchSize, ...callOpts } = opts;
    const size = this.batchSize(batchSize);
    const run = s.nativeQuery.bind(s);
    return guardIterable(scope, callOpts, size, (ctx) => run(statement, params, { batchSize: size }, ctx));
  }

  /**
   * Writes records for an action. A batch larger than the plugin's bulkLimit is split; the result
   * has exactly one entry per record, in input order. Throws only when the whole call failed.
   */
  async write(
    action: WriteAction,
    entity: string,
    records: readonly ConnectorRecord[],
    opts: WriteOptions & CallOptions = {},
  ): Promise<WriteResult[]> {
    const scope = this.live('write');
    if (!(WRITE_ACTIONS as readonly string[]).includes(action)) {
      throw new FerryError('CON_UNSUPPORTED', `${String(action)} is not a write action.`, { details: { action } });
    }
    const { keyFields, checkpoint, signal, timeoutMs, onProgress } = opts;
    if (checkpoint) this.checkCheckpoint(action, records.length);
    const writeOpts: WriteOptions = { ...(keyFields ? { keyFields } : {}), ...(checkpoint ? { checkpoint } : {}) };
    const callOpts = this.timeout('write', {
      ...(signal ? { signal } : {}),
      ...(timeoutMs ? { timeoutMs } : {}),
      ...(onProgress ? { onProgress } : {}),
      settleMs: WRITE_SETTLE_MS,
    });
    const s = this.init.session;
    const out: WriteResult[] = [];
    // A checkpoint with no records is saved alone (a copy starting over resets its checkpoint).
    if (records.length === 0 && checkpoint)
      await guardCall(scope, callOpts, (ctx) => s.write(action, entity, records, writeOpts, ctx));
    for (let i = 0; i < records.length; i += this.bulkLimit) {
      const part = i === 0 && records.length <= this.bulkLimit ? records : records.slice(i, i + this.bulkLimit);
      const results = this.checkResults(
        await this.observed(part.length, () =>
          guardCall(scope, callOpts, (ctx) => s.write(action, entity, part, writeOpts, ctx)),
        ),
        part.length,
        action,
        entity,
      );
      for (const r of results) out.push(r);
    }
    return out;
  }

  /**
   * Whether the plugin keeps checkpoints in its datastore, committed with a Create batch
   * (`write(…, { checkpoint })`) and read back with {@link readCheckpoint}.
   */
  /** Whether the plugin writes packed batches itself (writePacked); else the host writes their records. */
  get writesPacked(): boolean {
    return typeof this.init.session.writePacked === 'function';
  }

  get transactionalCheckpoints(): boolean {
    return typeof this.init.session.readCheckpoint === 'function';
  }

  /** Whether each query reads one consistent snapshot (ConnectorSession.snapshotQueries). */
  get snapshotQueries(): boolean {
    return this.init.session.snapshotQueries === true;
  }

  /** The checkpoint a Create batch last saved under `key`, or null; `CON_UNSUPPORTED` where the plugin keeps none. */
  async readCheckpoint(key: string, opts: CallOptions = {}): Promise<string | null> {
    const scope = this.live('readCheckpoint');
    const s = this.init.session;
    if (typeof s.readCheckpoint !== 'function') {
      throw new FerryError('CON_UNSUPPORTED', `The ${this.manifest.name} connector keeps no checkpoints.`, {
        details: { connector: this.manifest.name },
      });
    }
    const run = s.readCheckpoint.bind(s);
    const value = await guardCall(scope, this.timeout('metadata', opts), (ctx) => run(key, ctx));
    if (value !== null && typeof value !== 'string') {
      throw new FerryError('CON_PROTOCOL_VIOLATION', `The ${this.manifest.name} connector's checkpoint is not text.`, {
        details: { connector: this.manifest.name },
      });
    }
    return value;
  }

  /** A checkpoint commits with its batch only when the plugin keeps them, for Create, in one plugin call. */
  private checkCheckpoint(action: WriteAction, records: number): void {
    if (!this.transactionalCheckpoints || action !== 'Create') {
      throw new FerryError(
        'CON_UNSUPPORTED',
        `The ${this.manifest.name} connector cannot save a checkpoint with a ${action} batch.`,
        { details: { connector: this.manifest.name, action } },
      );
    }
    // Split into several calls, the batch would commit in parts and the checkpoint with the last only.
    if (records > this.bulkLimit) {
      throw new FerryError(
        'CON_UNSUPPORTED',
        `A batch with a checkpoint holds at most ${this.bulkLimit} records (the connector's bulkLimit); it has ${records}.`,
        { details: { connector: this.manifest.name, records } },
      );
    }
  }

  /**
   * Consumes a message broker's queue or stream (consume.ts); `CON_UNSUPPORTED` for a plugin that
   * is not a broker. Closing the connection ends the consumption too.
   */
  consume(source: MessageSource, options: ConsumeOptions, opts: CallOptions = {}): Promise<Consumption> {
    return consumeGuarded(this.live('consume'), this.init.session, source, options, this.timeout('test', opts));
  }

  /** Creates or widens a target entity to match a source entity; `CON_UNSUPPORTED` where the plugin cannot. */
  async ensureEntity(
    source: EntityMetadata,
    opts: EnsureEntityOptions & CallOptions = {},
  ): Promise<EnsureEntityResult> {
    const scope = this.live('ensureEntity');
    const s = this.init.session;
    if (typeof s.ensureEntity !== 'function') {
      throw new FerryError('CON_UNSUPPORTED', `The ${this.manifest.name} connector cannot create entities.`, {
        details: { connector: this.manifest.name },
      });
    }
    const { entity, ...callOpts } = opts;
    const run = s.ensureEntity.bind(s);
    const res = await guardCall(scope, this.timeout('ensureEntity', callOpts), (ctx) =>
      run(source, entity ? { entity } : {}, ctx),
    );
    // The entity list changed: the next metadata call reloads.
    this.init.cache.invalidate(this.connectionId);
    return res;
  }

  /** Whether the plugin reads changes from the datastore's log (ConnectorSession.setupChangeCapture). */
  get capturesChanges(): boolean {
    const s = this.init.session;
    return (
      typeof s.setupChangeCapture === 'function' &&
      typeof s.readChanges === 'function' &&
      typeof s.confirmChanges === 'function'
    );
  }

  private captureSession(
    verb: string,
  ): Required<
    Pick<
      ConnectorSession,
      'setupChangeCapture' | 'readChanges' | 'confirmChanges' | 'changeCaptureStatus' | 'dropChangeCapture'
    >
  > {
    const s = this.init.session;
    if (
      !this.capturesChanges ||
      typeof s.changeCaptureStatus !== 'function' ||
      typeof s.dropChangeCapture !== 'function'
    ) {
      throw new FerryError(
        'CON_UNSUPPORTED',
        `The ${this.manifest.name} connector cannot capture changes from its log (${verb}); replicate it by net change.`,
        { details: { connector: this.manifest.name } },
      );
    }
    return s as Required<
      Pick<
        ConnectorSession,
        'setupChangeCapture' | 'readChanges' | 'confirmChanges' | 'changeCaptureStatus' | 'dropChangeCapture'
      >
    >;
  }

  /** Makes or checks the change capture `name` of these entities (docs/change-capture.md). */
  async setupChangeCapture(
    name: string,
    entities: readonly string[],
    opts: CallOptions = {},
  ): Promise<ChangeCaptureSetup> {
    const s = this.captureSession('setup');
    const scope = this.live('setupChangeCapture');
    return guardCall(scope, this.timeout('ensureEntity', opts), (ctx) => s.setupChangeCapture(name, entities, ctx));
  }

  /** The capture's changes in commit order, batches of at most `options.batchSize` changes. */
  readChanges(name: string, options: ReadChangesOptions, opts: CallOptions = {}): AsyncIterable<ChangeBatch> {
    const s = this.captureSession('read');
    const scope = this.live('readChanges');
    return guardBatches(
      scope,
      opts,
      options.batchSize,
      (ctx) => s.readChanges(name, options, ctx),
      (b) => (Array.isArray(b?.changes) && typeof b.position === 'string' ? b.changes.length : undefined),
      'changes',
    );
  }

  async confirmChanges(name: string, position: string, opts: CallOptions = {}): Promise<void> {
    const s = this.captureSession('confirm');
    await guardCall(this.live('confirmChanges'), this.timeout('write', opts), (ctx) =>
      s.confirmChanges(name, position, ctx),
    );
  }

  async changeCaptureStatus(name: string, opts: CallOptions = {}): Promise<ChangeCaptureStatus> {
    const s = this.captureSession('status');
    return guardCall(this.live('changeCaptureStatus'), this.timeout('metadata', opts), (ctx) =>
      s.changeCaptureStatus(name, ctx),
    );
  }

  async dropChangeCapture(name: string, opts: CallOptions = {}): Promise<void> {
    const s = this.captureSession('drop');
    await guardCall(this.live('dropChangeCapture'), this.timeout('ensureEntity', opts), (ctx) =>
      s.dropChangeCapture(name, ctx),
    );
  }

  /** Disconnects; idempotent, never throws (a failing disconnect is logged). */
  async close(opts: CallOptions = {}): Promise<void> {
    if (this.closed) return;
    const scope = this.init.scope('disconnect');
    this.closed = true;
    this.init.onClose(this);
    const s = this.init.session;
    try {
      await guardCall(scope, this.timeout('disconnect', opts), (ctx) => s.disconnect(ctx));
    } catch {
      // logged by guardCall; a disconnect failure must not fail the caller's work
    }
  }
}

function isWriteResult(r: unknown): boolean {
  if (typeof r !== 'object' || r === null) return false;
  const x = r as { ok?: unknown; error?: { code?: unknown } };
  return x.ok === true || (x.ok === false && typeof x.error?.code === 'string');
}
