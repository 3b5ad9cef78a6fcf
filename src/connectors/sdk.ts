/**
 * The Connector SDK: what a Connector plugin implements and the only part of Ferry it imports.
 *
 *   connectors/<folder>/manifest.json   checked by the host before any plugin code runs
 *   connectors/<folder>/index.ts        `export default plugin satisfies ConnectorPlugin`
 *
 *   host ── preconnect(props) ───────────▶ plugin          form check or OAuth step
 *   host ── connect(props) ──────────────▶ plugin ──▶ session
 *   host ── session.test / metadata / query / write / nativeQuery / ensureEntity ──▶ datastore
 *   host ── session.disconnect() ─────────▶ plugin
 *
 * Every call gets a {@link CallContext}: a logger, an AbortSignal and a progress callback. The host
 * wraps every call: a throw, a rejected promise or a hang (past its time-out or abort) fails that
 * call with a `CON_` error and never the Agent. Write results come back one per input record, in
 * input order. Values follow the value model of `./value.ts` (docs/connectors.md).
 *
 * Beside the types, the SDK exports a few helpers every plugin needs alike (value coercion,
 * fullNames, filter evaluation and SQL translation, errors, a worker thread run from source text).
 */
import { randomUUID } from 'node:crypto';
import type { Filter } from '../protocol/filter.js';
import type {
  Action,
  ActionName,
  ConnectionMetadata,
  EntityMetadata,
  Relationship,
  WriteAction,
} from '../protocol/metadata.js';
import type { ConnectorRecord, PropertyType, RecordBatch, Value } from './value.js';
import type { PackedBatch } from './packed.js';
import type { ConsumeOptions, Consumption, MessageSource } from './consume-types.js';
import { ConnectorError } from './connector-error.js';

export type { Filter, FilterValue, ComparisonOp } from '../protocol/filter.js';
export { filterFields } from '../protocol/filter.js';
export type { ConnectorManifest, UiDecoration, SolutionRole } from '../protocol/connector-manifest.js';
export * from './value.js';
export * from './connector-error.js';
export { compileFilter, likeToRegExp } from './filter-eval.js';
export { filterToSql, escapeLike, type SqlFilterDialect } from './sql-filter.js';
export { toFullName, uniqueFullNames, isFullName } from './names.js';
export { processAlive } from '../util/process.js';
export {
  WorkerThread,
  WorkerThreadError,
  workerFailure,
  type Answer,
  type WorkerFailure,
  type WorkerThreadOptions,
} from '../util/worker-thread.js';
export * from './packed.js';
export type {
  ConsumeOptions,
  Consumption,
  Delivery,
  MessageSource,
  NatsSource,
  RabbitMqSource,
} from './consume-types.js';

/** The SDK version plugins declare a range against in `manifest.json` (`sdkVersion`). */
export const SDK_VERSION = '1.0.0';
/** Records per batch unless the caller or the plugin's `bulkLimit` says otherwise. */
export const DEFAULT_BATCH_SIZE = 2000;

// ── context ────────────────────────────────────────────────────────────────────

type LogFn = (objOrMsg: object | string, msg?: string) => void;

/** A pino-compatible logger. Constant messages, data in fields: `log.debug({ rows }, 'batch read')`. */
export interface ConnectorLog {
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): ConnectorLog;
}

export interface Progress {
  /** Records handled so far in this call. */
  records?: number;
  message?: string;
}

/** Handed to every plugin call. */
export interface CallContext {
  /** Carries connector, connection and verb; protected properties are redacted by path. */
  readonly log: ConnectorLog;
  /** Fires on cancellation or time-out. Check it between units of work; pass it to drivers that take one. */
  readonly signal: AbortSignal;
  /** Reports progress of a long call (cheap; call it per batch, not per record). */
  progress(update: Progress): void;
}

// ── connection properties ──────────────────────────────────────────────────────

/**
 * The Connection's properties as the user entered them (decrypted by the Agent), keyed by the
 * manifest's `uiDecorations[].propertyName`. Protected ones (inputType Password) must never be
 * logged or put into error messages.
 */
export type ConnectionProperties = Readonly<Record<string, string>>;

/** Result of {@link ConnectorPlugin.preconnect}. */
export interface PreconnectResult {
  /** `SUCCESS`, or a message for the user. */
  reply: string;
  /** Properties to store on the Connection (for example tokens of an OAuth step). */
  properties?: Record<string, string>;
  /** Where the user must go next (OAuth authorization). */
  authorizationUrl?: string;
}

// ── metadata (SPEC.md "Entity, Field, Relationship, Action") ───────────────────

// The metadata types are the channel's contract (src/protocol/metadata.ts): what a plugin answers
// is what the Agent sends and the Service caches and serves.
export { WRITE_ACTIONS } from '../protocol/metadata.js';
export type {
  Action,
  ActionName,
  ConnectionMetadata,
  EntityMetadata,
  Field,
  Relationship,
  WriteAction,
} from '../protocol/metadata.js';

// ── query ──────────────────────────────────────────────────────────────────────

/** Net change: records whose `field` (a date or datetime) is at or after `since`, ascending by it. */
export interface NetChange {
  field: string;
  /** ISO-8601; records with `field >= since` (at-least-once: the boundary instant is read again). */
  since: string;
}

export interface OrderBy {
  field: string;
  direction?: 'asc' | 'desc';
}

export interface QueryOptions {
  /** Fields to return (fullNames); absent = all. */
  fields?: string[];
  netChange?: NetChange;
  /** Ignored when `netChange` is given (which orders by its field). */
  orderBy?: OrderBy[];
  /** Most records to return in all. */
  limit?: number;
  /** Most records per yielded batch; the host sets it (≤ the plugin's bulkLimit). */
  batchSize: number;
}

export interface NativeQueryOptions {
  batchSize: number;
}

// ── write ──────────────────────────────────────────────────────────────────────

export const RECORD_ERROR_CODES = [
  /** A unique or primary key already holds the value. */
  'DuplicateKey',
  /** Update / Delete: no record matches the key. */
  'NotFound',
  /** A foreign key, not-null or check constraint refused the record. */
  'ConstraintViolation',
  /** A value does not fit the field (type, format, length, range). */
  'InvalidValue',
  /** The record names a field the entity does not have. */
  'UnknownField',
  /** The record lacks a value for a key field the action needs. */
  'MissingKey',
  /** The datastore refused the record for another reason (see nativeCode). */
  'DatastoreError',
] as const;
export type RecordErrorCode = (typeof RECORD_ERROR_CODES)[number];

export interface RecordError {
  code: RecordErrorCode;
  message: string;
  /** The driver's code: SQLSTATE, SQLite extended code, errno. */
  nativeCode?: string;
  field?: string;
}

/**
 * The outcome for one input record. Results may be shared frozen objects (a batch of successful
 * Creates returns the same `{ ok: true, affected: 1 }` many times): never mutate them.
 */
export type WriteResult =
  | { readonly ok: true; readonly affected: number; readonly key?: Readonly<ConnectorRecord> }
  | { readonly ok: false; readonly error: RecordError };

export interface WriteOptions {
  /**
   * The fields that identify a record for Update, UpdateInsert and Delete (lookup conditions) and
   * the conflict target of Upsert; default the entity's primary key.
   */
  keyFields?: string[];
  /**
   * Only for sessions that implement {@link ConnectorSession.readCheckpoint}, and only with Create:
   * saved in the same transaction as the batch's records, so the batch and its checkpoint commit
   * together or not at all (replication into a table without a key; docs/solutions.md).
   */
  checkpoint?: Checkpoint;
}

/**
 * The table a plugin keeps {@link Checkpoint}s in, beside the caller's tables (and hidden from its
 * metadata): `key` text primary key, `value` text, `saved_at` text.
 */
export const CHECKPOINT_TABLE = '_ferry_checkpoints';

/** A caller's checkpoint kept in the target datastore itself: an opaque value under a key. */
export interface Checkpoint {
  /** At most 500 characters. */
  key: string;
  value: string;
}

// ── ensureEntity (replication targets) ─────────────────────────────────────────

export interface EnsureEntityOptions {
  /** fullName of the target entity; default the source's fullName. */
  entity?: string;
}

export interface EnsureEntityResult {
  entity: EntityMetadata;
  created: boolean;
  /** Fields added to an existing entity. */
  addedFields: string[];
  /** Fields present on both sides whose types differ; left as they are (never narrowed or dropped). */
  mismatchedFields: { field: string; sourceType: PropertyType; targetType: PropertyType }[];
}

// ── change capture (a Replication reading the source's log; docs/change-capture.md) ──

/** The capture a Replication keeps in the source (a slot and a publication), as set up for a run. */
export interface ChangeCaptureSetup {
  /** The capture was made by this call (or made anew): the entities need their first copy. */
  readonly created: boolean;
  /** Where its changes begin: every change committed after it is read, those before are in a copy made from now on. */
  readonly position: string;
}

/** One row's change: its new values (an insert or update; fields left out kept their values) or its key (a delete). */
export interface CapturedChange {
  readonly entity: string;
  readonly op: 'upsert' | 'delete';
  readonly record: ConnectorRecord;
}

/** Changes in commit order, up to a transaction's end or part of a large one. */
export interface ChangeBatch {
  readonly changes: readonly CapturedChange[];
  /**
   * The position to confirm once the target has these changes: the end of the last transaction
   * they complete (unchanged while a large transaction is read in parts).
   */
  readonly position: string;
}

export interface ReadChangesOptions {
  /** Read changes committed after this position (or after the capture's confirmed one, if later). */
  from: string;
  /** Stop once every change up to the source's position at the call is read; absent: until the signal. */
  untilNow: boolean;
  /** The most changes in one batch. */
  batchSize: number;
  /** How long changes are gathered into a batch before it is given as it is. */
  maxWaitMs: number;
}

/** The health of a capture: the log the source keeps for it. */
export interface ChangeCaptureStatus {
  readonly exists: boolean;
  /** Bytes of log the source keeps for the capture (what it has not confirmed yet). */
  readonly retainedBytes: number;
  /** The source dropped the log the capture needed: it cannot go on without a new first copy. */
  readonly lost: boolean;
  readonly confirmed: string | null;
}

// ── the plugin ─────────────────────────────────────────────────────────────────

/** An open connection to one datastore. */
export interface ConnectorSession {
  /** Proves the connection works (reach, credentials, permission); throws a ConnectorError if not. */
  test(ctx: CallContext): Promise<void>;
  /** Entities, fields, relationships and actions, referenced by fullName. */
  metadata(ctx: CallContext): Promise<ConnectionMetadata>;
  /**
   * Records of an entity as a stream of batches of at most `options.batchSize`: pulled one at a
   * time, never the whole result in memory. Breaking out of the loop must release the datastore
   * (cursor, file handle).
   */
  query(
    entity: string,
    filter: Filter | undefined,
    options: QueryOptions,
    ctx: CallContext,
  ): AsyncIterable<RecordBatch>;
  /**
   * Writes a batch (at most the plugin's bulkLimit) and returns exactly one result per record, in
   * input order. A failing record fails alone; a thrown error means the whole call failed.
   */
  write(
    action: WriteAction,
    entity: string,
    batch: readonly ConnectorRecord[],
    options: WriteOptions,
    ctx: CallContext,
  ): Promise<WriteResult[]>;
  /**
   * Packed batches (optional; packed.ts): the same rows as `query` with the same arguments, in
   * {@link PackedBatch}es of at most `options.batchSize` rows. Called only when
   * {@link readsPacked} says so. Breaking out must release the datastore.
   */
  queryPacked?(
    entity: string,
    filter: Filter | undefined,
    options: QueryOptions,
    ctx: CallContext,
  ): AsyncIterable<PackedBatch>;
  /** Whether a query with these options is read packed (queryPacked); else the caller uses `query`. */
  readsPacked?(options: QueryOptions): boolean;
  /**
   * Writes a packed batch (optional): exactly as `write` of its records (unpackRecords) would,
   * one result per row in order, typically by encoding the cells straight into a bulk format.
   */
  writePacked?(
    action: WriteAction,
    entity: string,
    batch: PackedBatch,
    options: WriteOptions,
    ctx: CallContext,
  ): Promise<WriteResult[]>;
  /** The datastore's own query language, with bound parameters; records keyed by column fullName. */
  nativeQuery?(
    statement: string,
    params: readonly Value[],
    options: NativeQueryOptions,
    ctx: CallContext,
  ): AsyncIterable<RecordBatch>;
  /** Replication targets: creates the entity to match `source`, or adds the fields it lacks. */
  ensureEntity?(source: EntityMetadata, options: EnsureEntityOptions, ctx: CallContext): Promise<EnsureEntityResult>;
  /**
   * Transactional checkpoints (optional): the value last saved under `key` by a write with
   * `options.checkpoint`, or null. A session that has it must honour `checkpoint` on Create
   * writes (and may refuse it, as Unsupported, on other actions).
   */
  readCheckpoint?(key: string, ctx: CallContext): Promise<string | null>;
  /**
   * True when every `query` call reads one consistent snapshot of the datastore from its first
   * batch to its last (a read transaction for the query's whole life): a change committed while
   * the query runs is not seen by it. A Replication's first copy then reads in key order and needs
   * no sort by the modification stamp (docs/solutions.md "Replication").
   */
  readonly snapshotQueries?: boolean;
  /**
   * Change capture (optional, with the four below): makes or checks the capture `name` of the
   * entities (a replication slot and a publication in PostgreSQL), covering exactly these entities.
   */
  setupChangeCapture?(name: string, entities: readonly string[], ctx: CallContext): Promise<ChangeCaptureSetup>;
  /** The capture's changes in commit order; breaking out ends the read. */
  readChanges?(name: string, options: ReadChangesOptions, ctx: CallContext): AsyncIterable<ChangeBatch>;
  /** Confirms a position the target has: the source may drop the log before it. */
  confirmChanges?(name: string, position: string, ctx: CallContext): Promise<void>;
  changeCaptureStatus?(name: string, ctx: CallContext): Promise<ChangeCaptureStatus>;
  /** Drops the capture (nothing when there is none). */
  dropChangeCapture?(name: string, ctx: CallContext): Promise<void>;
  /**
   * Message brokers (optional; consume-types.ts): consumes the queue or stream `source` names,
   * handing each delivery to `options.deliver` until the consumption is closed or lost. Resolves
   * once consuming has begun (the queue or stream found, the credentials accepted).
   */
  consume?(source: MessageSource, options: ConsumeOptions, ctx: CallContext): Promise<Consumption>;
  disconnect(ctx: CallContext): Promise<void>;
}

/** The module's default export. */
export interface ConnectorPlugin {
  /** Checks a connection form (or runs an OAuth step) before the Connection is saved. */
  preconnect?(properties: ConnectionProperties, ctx: CallContext): Promise<PreconnectResult>;
  connect(properties: ConnectionProperties, ctx: CallContext): Promise<ConnectorSession>;
}

// ── helpers for plugins ────────────────────────────────────────────────────────

const LABELS: Record<ActionName, string> = {
  Query: 'Query',
  NativeQuery: 'Native Query',
  Create: 'Create',
  Update: 'Update',
  UpdateInsert: 'Update/Insert',
  Upsert: 'Upsert',
  Delete: 'Delete',
};

/** An Action with the flags a bulk-capable datastore sets for it. */
export function action(
  name: ActionName,
  flags: Partial<Omit<Action, 'action' | 'operationName' | 'blockType'>> = {},
): Action {
  const isQuery = name === 'Query' || name === 'NativeQuery';
  const keyed = name === 'Update' || name === 'UpdateInsert' || name === 'Delete' || name === 'Upsert';
  return {
    action: name,
    operationName: LABELS[name],
    blockType: isQuery ? 'Starter' : 'Operation',
    supportsBulk: true,
    supportsConstraints: name === 'Query',
    supportsInput: !isQuery && name !== 'Delete',
    supportsLookupConditions: keyed,
    supportsRelations: false,
    supportsMultipleRecordOperations: keyed,
    supportsSequences: false,
    ...flags,
  };
}

/** The Actions of a relational table, a view, and a relational Connection (its tables' plus Native Query). */
export const SQL_TABLE_ACTIONS: readonly Action[] = [
  action('Query', { supportsRelations: true }),
  action('Create'),
  action('Update'),
  action('UpdateInsert'),
  action('Upsert'),
  action('Delete'),
];
export const SQL_VIEW_ACTIONS: readonly Action[] = [action('Query')];
export const SQL_CONNECTION_ACTIONS: readonly Action[] = [
  ...SQL_TABLE_ACTIONS,
  action('NativeQuery', { supportsBulk: false }),
];

/** What a SQL plugin knows of a column, for its Field (see {@link sqlEntity}). */
export interface SqlColumnFacts {
  name: string;
  fullName: string;
  description: string;
  /** 1-based position in the primary key; 0 when not part of it. */
  pk: number;
  notNull: boolean;
  size: number;
  scale?: number;
  type: PropertyType;
  /** The datastore's own name of the type (`numeric(12,2)`, `varchar(50)`). */
  nativeType: string;
  hasDefault: boolean;
  /** Generated, identity ALWAYS: cannot be written. */
  readOnly: boolean;
}

/** What a SQL plugin knows of a table or view, for its Entity. */
export interface SqlTableFacts {
  id: string;
  name: string;
  fullName: string;
  originalName: string;
  description: string;
  view: boolean;
  columns: readonly SqlColumnFacts[];
}

/**
 * The Entity of a relational table or view: the SQL actions (Query only for a view), a Field per
 * column (writable unless generated or in a view, required when NOT NULL without a default), and
 * the relationships of its foreign keys.
 */
export function sqlEntity(t: SqlTableFacts, relationships: Relationship[]): EntityMetadata {
  return {
    id: t.id,
    name: t.name,
    fullName: t.fullName,
    originalName: t.originalName,
    description: t.description,
    isHidden: false,
    actions: t.view ? [...SQL_VIEW_ACTIONS] : [...SQL_TABLE_ACTIONS],
    fields: t.columns.map((c, i) => ({
      name: c.name,
      fullName: c.fullName,
      originalName: c.name,
      description: c.description,
      isPrimaryKey: c.pk > 0,
      nullable: !c.notNull,
      size: c.size,
      ...(c.scale !== undefined ? { scale: c.scale } : {}),
      ordinal: i + 1,
      propertyType: c.type,
      nativeType: c.nativeType,
      hasDefault: c.hasDefault,
      requiredInActionInput: c.notNull && !c.hasDefault,
      usedInLookupCondition: true,
      usedInActionInput: !c.readOnly && !t.view,
      usedInQueryConstraint: true,
      usedInQuerySelect: true,
    })),
    relationships,
  };
}

/**
 * Reads Connection properties for a plugin's parser: `text(k)` trimmed, undefined when empty;
 * `int(k, default, min, max)` a whole number in range, or InvalidProperties naming the property.
 */
export function propertyReader(p: ConnectionProperties): {
  text: (k: string) => string | undefined;
  int: (k: string, dflt: number, min: number, max: number) => number;
} {
  const text = (k: string): string | undefined => {
    const v = p[k]?.trim();
    return v ? v : undefined;
  };
  const int = (k: string, dflt: number, min: number, max: number): number => {
    const v = text(k);
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new ConnectorError('InvalidProperties', `The property ${k} must be a whole number from ${min} to ${max}.`);
    return n;
  };
  return { text, int };
}

/**
 * The columns a keyed write finds its records by: the lookup fields given, else the primary key in
 * its order. Create needs none.
 */
export function keyColumns<C extends { fullName: string; pk: number }>(
  writeAction: WriteAction,
  entity: string,
  columns: readonly C[],
  byName: ReadonlyMap<string, C>,
  keyFields: readonly string[] | undefined,
): C[] {
  if (writeAction === 'Create') return [];
  const names =
    keyFields ??
    columns
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.fullName);
  if (names.length === 0)
    throw new ConnectorError(
      'Unsupported',
      `${writeAction} on ${entity} needs key fields: the table has no primary key, give lookup fields.`,
    );
  return names.map((n) => {
    const c = byName.get(n);
    if (!c) throw new ConnectorError('FieldNotFound', `The entity ${entity} has no field ${n}.`);
    return c;
  });
}

/** The successful result of a write that touched one record; shared and frozen. */
export const OK_ONE: WriteResult = Object.freeze({ ok: true, affected: 1 });

/**
 * A function that makes records of the fields `names` from arrays of their values: one object
 * literal compiled once per field list, several times faster per record than setting the fields
 * one by one (each such store looks its name up again). The names enter the generated code only
 * as JSON string literals; a list with `__proto__` (which a literal would take as the prototype)
 * gets the field-by-field maker instead.
 */
export function recordMaker(names: readonly string[]): (values: ArrayLike<Value>) => ConnectorRecord {
  if (names.includes('__proto__')) {
    return (values) => {
      const rec: ConnectorRecord = {};
      for (let i = 0; i < names.length; i++)
        Object.defineProperty(rec, names[i] as string, {
          value: values[i] ?? null,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      return rec;
    };
  }
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- see above: names are JSON literals
  return new Function('v', `return { ${names.map((n, i) => `${JSON.stringify(n)}: v[${i}]`).join(', ')} };`) as (
    values: ArrayLike<Value>,
  ) => ConnectorRecord;
}

/** A failed result. */
export function failed(
  code: RecordErrorCode,
  message: string,
  extra: Omit<RecordError, 'code' | 'message'> = {},
): WriteResult {
  return { ok: false, error: { code, message, ...extra } };
}

/** A successful result touching `affected` records. */
export function succeeded(affected: number, key?: ConnectorRecord): WriteResult {
  if (affected === 1 && !key) return OK_ONE;
  return key ? { ok: true, affected, key } : { ok: true, affected };
}

/** A foreign key of the datastore's catalogue, by fullNames. */
export interface ForeignKey {
  /** The constraint's fullName. */
  name: string;
  /** The entity holding the key (the child). */
  entity: string;
  fields: string[];
  /** The referenced entity (the parent). */
  relatedEntity: string;
  relatedFields: string[];
}

/**
 * Both sides of a foreign key as Relationships: `ManyToOne` on the child (fullName = the
 * constraint's), `OneToMany` on the parent (fullName = child entity + constraint).
 */
export function foreignKeyRelationships(fk: ForeignKey): { child: Relationship; parent: Relationship } {
  const child: Relationship = {
    name: fk.name,
    fullName: fk.name,
    description: `${fk.entity}(${fk.fields.join(', ')}) references ${fk.relatedEntity}(${fk.relatedFields.join(', ')})`,
    path: `${fk.entity}.${fk.relatedEntity}`,
    thisEntityFullName: fk.entity,
    relatedEntityFullName: fk.relatedEntity,
    thisProperties: fk.fields,
    relatedProperties: fk.relatedFields,
    relationshipType: 'ManyToOne',
    parentId: fk.entity,
    uniqueId: randomUUID(),
  };
  const parentName = `${fk.entity}_${fk.name}`;
  const parent: Relationship = {
    ...child,
    name: parentName,
    fullName: parentName,
    path: `${fk.relatedEntity}.${fk.entity}`,
    thisEntityFullName: fk.relatedEntity,
    relatedEntityFullName: fk.entity,
    thisProperties: fk.relatedFields,
    relatedProperties: fk.fields,
    relationshipType: 'OneToMany',
    parentId: fk.relatedEntity,
    uniqueId: randomUUID(),
  };
  return { child, parent };
}

/** Every foreign key as its two Relationships, grouped by the fullName of the entity that holds each. */
export function relationshipsByEntity(foreignKeys: Iterable<ForeignKey>): Map<string, Relationship[]> {
  const byEntity = new Map<string, Relationship[]>();
  const add = (entity: string, r: Relationship): void =>
    void byEntity.set(entity, [...(byEntity.get(entity) ?? []), r]);
  for (const fk of foreignKeys) {
    const { child, parent } = foreignKeyRelationships(fk);
    add(fk.entity, child);
    add(fk.relatedEntity, parent);
  }
  return byEntity;
}

/**
 * The session of a message broker Connector (docs/connectors.md "rabbitmq", "nats"): no entities,
 * no queries, no writes; `test`, `consume` of its own kind of message source, and `disconnect`.
 * A broker is the message source of an Event Solution's Message Map, not a datastore.
 */
export abstract class BrokerSession<K extends MessageSource['type']> implements ConnectorSession {
  /**
   * @param kind the `type` of the message sources it consumes
   * @param name the Connector's name, as errors say it (`NATS JetStream`)
   */
  constructor(
    private readonly kind: K,
    private readonly name: string,
  ) {}

  abstract test(ctx: CallContext): Promise<void>;
  abstract disconnect(ctx: CallContext): Promise<void>;
  /** Starts consuming a source of this broker's kind. */
  protected abstract consumeOwn(
    source: Extract<MessageSource, { type: K }>,
    options: ConsumeOptions,
  ): Promise<Consumption>;

  metadata(_ctx: CallContext): Promise<ConnectionMetadata> {
    return Promise.resolve({ entities: [], actions: [] });
  }

  // eslint-disable-next-line require-yield -- a broker has no records to query
  async *query(): AsyncGenerator<RecordBatch, void, undefined> {
    throw this.#unsupported('read records by a query');
  }

  write(): Promise<WriteResult[]> {
    return Promise.reject(this.#unsupported('write records'));
  }

  consume(source: MessageSource, options: ConsumeOptions, _ctx: CallContext): Promise<Consumption> {
    if (source.type !== this.kind)
      return Promise.reject(
        new ConnectorError('Unsupported', `A ${this.name} Connection cannot consume a ${source.type} message source.`),
      );
    return this.consumeOwn(source as Extract<MessageSource, { type: K }>, options);
  }

  #unsupported(what: string): ConnectorError {
    return new ConnectorError(
      'Unsupported',
      `The ${this.name} connector cannot ${what}: it is the message source of an Event Solution's Message Map (docs/events.md).`,
    );
  }
}
