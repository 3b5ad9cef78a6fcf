import type { ClientConfig, Pool, PoolConfig } from 'pg';
import { LogicalReplicationService, PgoutputPlugin, type Pgoutput } from 'pg-logical-replication';
import {
  ConnectorError,
  type CallContext,
  type CapturedChange,
  type ChangeBatch,
  type ChangeCaptureSetup,
  type ChangeCaptureStatus,
  type ConnectorRecord,
  type ReadChangesOptions,
  type Value,
} from '../../src/connectors/sdk.js';
import { qualified, quoteIdent, type PgTable } from './catalogue.js';
import { checkout } from './cursor.js';
import { callError } from './errors.js';
import { pgTypes } from './types.js';

/**
 * Change capture from PostgreSQL's log (docs/change-capture.md): a publication of the Replication's
 * tables and a logical replication slot with the server's `pgoutput` plugin, both named after the
 * capture; changes streamed over a replication connection (pg-logical-replication), decoded with
 * the same text parsers as queries (types.ts), in commit order.
 *
 *   setup ─▶ publication (the tables, exactly) + slot (made once: its position starts the changes)
 *   read  ─▶ START_REPLICATION from the caller's position ─▶ batches ending on a commit (or part of a
 *            large transaction, its position unchanged) ─▶ confirm(position) once the target has them
 *   idle  ─▶ a keepalive with nothing unconfirmed is confirmed: the slot keeps moving without changes
 */

/** A capture's name is its slot's and its publication's: lowercase letters, digits and underscores. */
function checkName(name: string): string {
  if (!/^[a-z0-9_]{1,63}$/.test(name))
    throw new ConnectorError('InvalidProperties', `A change capture name is 1–63 of a–z, 0–9, _; got ${name}.`);
  return name;
}

/** Compares two LSNs (`X/Y`, hexadecimal). */
export function compareLsn(a: string, b: string): number {
  const [ah = '0', al = '0'] = a.split('/');
  const [bh = '0', bl = '0'] = b.split('/');
  const d = parseInt(ah, 16) - parseInt(bh, 16);
  return d !== 0 ? Math.sign(d) : Math.sign(parseInt(al, 16) - parseInt(bl, 16));
}

/** The tables of a capture: each a table with a primary key (an update or delete names its row by it). */
function captured(tables: readonly PgTable[]): void {
  for (const t of tables) {
    if (t.kind !== 'table')
      throw new ConnectorError('Unsupported', `${t.fullName} is a view: change capture reads tables only.`);
    if (!t.columns.some((c) => c.pk > 0))
      throw new ConnectorError(
        'Unsupported',
        `${t.fullName} has no primary key: change capture needs one to apply updates and deletes. Add a key, or replicate it by net change.`,
      );
  }
}

const SLOT =
  'SELECT confirmed_flush_lsn::text AS lsn, wal_status, plugin, database, active FROM pg_replication_slots WHERE slot_name = $1';

export async function setupCapture(
  pool: Pool,
  name: string,
  tables: readonly PgTable[],
  ctx: CallContext,
): Promise<ChangeCaptureSetup> {
  checkName(name);
  captured(tables);
  const list = tables.map(qualified).join(', ');
  const { client, release } = await checkout(pool, ctx);
  try {
    const pub = await client.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [name]);
    await client.query(
      pub.rowCount
        ? `ALTER PUBLICATION ${quoteIdent(name)} SET TABLE ${list}`
        : `CREATE PUBLICATION ${quoteIdent(name)} FOR TABLE ${list}`,
    );
    const slot = await client.query<{
      lsn: string | null;
      wal_status: string | null;
      plugin: string | null;
      database: string;
      active: boolean;
    }>(SLOT, [name]);
    let row = slot.rows[0];
    // A slot still held by the connection of a process that was just killed: the server notices within moments.
    for (let waited = 0; row?.active && waited < 15_000; waited += 250) {
      await new Promise((r) => setTimeout(r, 250));
      row = (await client.query<typeof row>(SLOT, [name])).rows[0];
    }
    if (row?.active)
      throw new ConnectorError(
        'Datastore',
        `The replication slot ${name} is in use by another connection (another run of the Solution?); it is read again when free.`,
      );
    const db = (await client.query<{ db: string }>('SELECT current_database() AS db')).rows[0]?.db;
    if (row && row.database !== db)
      throw new ConnectorError(
        'InvalidProperties',
        `The replication slot ${name} belongs to the database ${row.database}, not ${db}: the Solution's source changed database. Drop the slot (SELECT pg_drop_replication_slot('${name}') in ${row.database}) to capture from ${db}.`,
      );
    if (row) {
      if (row.wal_status === 'lost') throw lostSlot(name);
      if (row.plugin !== 'pgoutput')
        throw new ConnectorError(
          'Unsupported',
          `The replication slot ${name} exists with the plugin ${row.plugin}, not pgoutput.`,
        );
      release();
      return { created: false, position: row.lsn ?? '0/0' };
    }
    const made = await client.query<{ lsn: string }>(
      "SELECT lsn::text AS lsn FROM pg_create_logical_replication_slot($1, 'pgoutput')",
      [name],
    );
    release();
    return { created: true, position: made.rows[0]?.lsn ?? '0/0' };
  } catch (err) {
    release(err as Error);
    throw callError(err, 'The change capture cannot be set up', client);
  }
}

export function lostSlot(name: string): ConnectorError {
  return new ConnectorError(
    'CaptureLost',
    `The replication slot ${name} was invalidated: the server dropped WAL it still needed (max_slot_wal_keep_size), so changes were lost. ` +
      `Re-snapshot: SELECT pg_drop_replication_slot('${name}'); then run the Solution, which copies every entity again.`,
  );
}

export async function captureStatus(pool: Pool, name: string, ctx: CallContext): Promise<ChangeCaptureStatus> {
  checkName(name);
  const { client, release } = await checkout(pool, ctx);
  try {
    const r = await client.query<{ retained: string | null; wal_status: string | null; lsn: string | null }>(
      `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::text AS retained, wal_status,
              confirmed_flush_lsn::text AS lsn
         FROM pg_replication_slots WHERE slot_name = $1`,
      [name],
    );
    release();
    const row = r.rows[0];
    if (!row) return { exists: false, retainedBytes: 0, lost: false, confirmed: null };
    return {
      exists: true,
      retainedBytes: Math.max(0, Number(row.retained ?? 0)),
      lost: row.wal_status === 'lost',
      confirmed: row.lsn,
    };
  } catch (err) {
    release(err as Error);
    throw callError(err, 'The change capture status cannot be read', client);
  }
}

export async function dropCapture(pool: Pool, name: string, ctx: CallContext): Promise<void> {
  checkName(name);
  const { client, release } = await checkout(pool, ctx);
  try {
    // A slot still held by a walsender that is going away: ended first, so the drop does not fail.
    await client.query(
      'SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL',
      [name],
    );
    await client.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1', [
      name,
    ]);
    await client.query(`DROP PUBLICATION IF EXISTS ${quoteIdent(name)}`);
    release();
  } catch (err) {
    release(err as Error);
    throw callError(err, 'The change capture cannot be dropped', client);
  }
}

/** The replication connection's settings: the pool's, as one plain connection. */
function replicationConfig(pool: PoolConfig): ClientConfig {
  const { max: _max, idleTimeoutMillis: _idle, types: _types, ...rest } = pool;
  return { ...rest, application_name: 'ferry-capture' };
}

/** The parser pgoutput's relation columns use: this Connector's (types.ts), not pg's global ones. */
function useOwnParsers(plugin: PgoutputPlugin): void {
  const parser = (plugin as unknown as { parser: { readRelationColumn(r: unknown): Pgoutput.RelationColumn } }).parser;
  const read = parser.readRelationColumn.bind(parser);
  parser.readRelationColumn = (r: unknown) => {
    const c = read(r);
    c.parser = pgTypes.getTypeParser(c.typeOid) as (raw: unknown) => unknown;
    return c;
  };
}

/** The capture streams open in this session, by name: confirm() goes through the stream's connection. */
export type OpenStreams = Map<string, { confirm(position: string): Promise<void> }>;

/** Reads a capture's changes (see the top of the file). */
export async function* readChanges(
  pool: Pool,
  config: PoolConfig,
  name: string,
  options: ReadChangesOptions,
  tableOf: (schema: string, table: string) => PgTable | undefined,
  streams: OpenStreams,
  ctx: CallContext,
): AsyncGenerator<ChangeBatch, void, undefined> {
  checkName(name);
  const until = options.untilNow ? await currentLsn(pool, ctx) : undefined;
  const reader = new ChangeReader(options, until, tableOf);
  const service = new LogicalReplicationService(replicationConfig(config), {
    acknowledge: { auto: false, timeoutSeconds: 10 },
    flowControl: { enabled: true },
  });
  const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: [name] });
  useOwnParsers(plugin);
  service.on('data', (_lsn: string, msg: Pgoutput.Message) => reader.message(msg));
  service.on('heartbeat', (lsn: string) => {
    if (reader.idleAt(lsn)) void service.acknowledge(lsn).catch(() => undefined);
  });
  service.on('error', (err: Error) => reader.fail(streamError(err, name)));
  streams.set(name, {
    confirm: async (position) => {
      reader.confirmed(position);
      await service.acknowledge(position);
    },
  });
  const onAbort = (): void => reader.fail(new ConnectorError('Aborted', 'The change read was stopped.'));
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  // Asks the server where it is while nothing comes: the keepalive's answer ends a read up to now.
  const ping = setInterval(
    () => {
      if (reader.quiet()) void service.acknowledge(reader.lastConfirmed, true).catch(() => undefined);
      reader.tick();
    },
    Math.max(10, options.maxWaitMs / 4),
  );
  service.subscribe(plugin, name, options.from).catch((err: unknown) => reader.fail(streamError(err, name)));
  try {
    for (;;) {
      const batch = await reader.next();
      if (batch === undefined) return;
      yield batch;
    }
  } finally {
    clearInterval(ping);
    ctx.signal.removeEventListener('abort', onAbort);
    streams.delete(name);
    await service.destroy().catch(() => undefined);
  }
}

async function currentLsn(pool: Pool, ctx: CallContext): Promise<string> {
  const { client, release } = await checkout(pool, ctx);
  try {
    const r = await client.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
    release();
    return r.rows[0]?.lsn ?? '0/0';
  } catch (err) {
    release(err as Error);
    throw callError(err, 'The server position cannot be read', client);
  }
}

function streamError(err: unknown, name: string): Error {
  const code = (err as { code?: unknown }).code;
  if (code === '55006')
    return new ConnectorError(
      'Datastore',
      `The replication slot ${name} is in use by another connection (another run of the Solution?); it is read again when free.`,
      { nativeCode: code, cause: err },
    );
  if (
    typeof code === 'string' &&
    /object_not_in_prerequisite_state|55000/.test(code) &&
    /invalidated|lost/i.test(String(err))
  )
    return lostSlot(name);
  if (/can no longer get changes from replication slot|has been invalidated/i.test(String((err as Error).message)))
    return lostSlot(name);
  const mapped = callError(err, 'The change stream failed');
  if (mapped instanceof ConnectorError) return mapped;
  return new ConnectorError('Unreachable', `The change stream failed: ${(err as Error).message ?? String(err)}`, {
    cause: err,
  });
}

/**
 * Turns pgoutput messages into batches: changes gathered until a commit fills the batch, the wait
 * passes, or (a large transaction) the batch is full mid-transaction; at most two batches wait for
 * the caller (the stream is paused meanwhile: flow control).
 */
class ChangeReader {
  #pending: CapturedChange[] = [];
  readonly #ready: ChangeBatch[] = [];
  #inTxn = false;
  /** The end of the last whole transaction read. */
  #commit: string;
  #yielded: string;
  lastConfirmed: string;
  #failed: Error | undefined;
  #done = false;
  #wake: (() => void) | undefined;
  #space: (() => void) | undefined;
  /** When the oldest change waiting to be batched came. */
  #firstPending = 0;

  constructor(
    private readonly options: ReadChangesOptions,
    private readonly until: string | undefined,
    private readonly tableOf: (schema: string, table: string) => PgTable | undefined,
  ) {
    this.#commit = options.from;
    this.#yielded = options.from;
    this.lastConfirmed = options.from;
  }

  async message(msg: Pgoutput.Message): Promise<void> {
    // Read up to where the source was: what comes after is the next read's.
    if (this.#done || this.#failed) return;
    switch (msg.tag) {
      case 'begin':
        this.#inTxn = true;
        break;
      case 'insert':
        this.#push(msg.relation, 'upsert', msg.new);
        break;
      case 'update': {
        const t = this.#table(msg.relation);
        // The key changed: the old row goes, the new one comes.
        if (this.#pending.length === 0) this.#firstPending = Date.now();
        if (msg.key) this.#pending.push({ entity: t.fullName, op: 'delete', record: recordOf(t, msg.key) });
        this.#pending.push({ entity: t.fullName, op: 'upsert', record: recordOf(t, msg.new) });
        break;
      }
      case 'delete':
        this.#push(msg.relation, 'delete', msg.key ?? msg.old ?? {});
        break;
      case 'truncate':
        this.fail(
          new ConnectorError(
            'Unsupported',
            `${msg.relations.map((r) => `${r.schema}.${r.name}`).join(', ')} was truncated: a truncate is not applied row by row. Re-snapshot the Replication (docs/change-capture.md).`,
          ),
        );
        return;
      case 'commit':
        this.#inTxn = false;
        if (msg.commitEndLsn) this.#commit = msg.commitEndLsn;
        if (this.until !== undefined && compareLsn(this.#commit, this.until) >= 0) {
          this.#flush();
          this.#finish();
          return;
        }
        break;
      default:
        break;
    }
    if (this.#pending.length >= this.options.batchSize) this.#flush();
    while (this.#ready.length >= 2 && !this.#failed && !this.#done)
      await new Promise<void>((resolve) => (this.#space = resolve));
  }

  #table(rel: Pgoutput.MessageRelation): PgTable {
    const t = this.tableOf(rel.schema, rel.name);
    if (!t) {
      const err = new ConnectorError(
        'EntityNotFound',
        `A change came for ${rel.schema}.${rel.name}, which is not captured.`,
      );
      this.fail(err);
      throw err;
    }
    return t;
  }

  #push(rel: Pgoutput.MessageRelation, op: 'upsert' | 'delete', values: Record<string, unknown>): void {
    const t = this.#table(rel);
    if (this.#pending.length === 0) this.#firstPending = Date.now();
    this.#pending.push({ entity: t.fullName, op, record: recordOf(t, values) });
  }

  #flush(): void {
    if (this.#pending.length === 0) return;
    const changes = this.#pending.splice(0, this.options.batchSize);
    this.#ready.push({ changes, position: this.#commit });
    if (this.#pending.length >= this.options.batchSize) this.#flush();
    this.#wake?.();
  }

  #finish(): void {
    this.#done = true;
    this.#wake?.();
  }

  /** The oldest change waited long enough: what is gathered goes as it is (a steady stream is not held for a full batch). */
  tick(): void {
    if (this.#pending.length > 0 && Date.now() - this.#firstPending >= this.options.maxWaitMs) this.#flush();
  }

  /** Nothing read and unconfirmed: a keepalive may be confirmed, or asked for. */
  quiet(): boolean {
    return (
      !this.#inTxn &&
      this.#pending.length === 0 &&
      this.#ready.length === 0 &&
      compareLsn(this.lastConfirmed, this.#yielded) >= 0
    );
  }

  /** A keepalive at `lsn`: whether it may be confirmed (and a read up to now ends there). */
  idleAt(lsn: string): boolean {
    if (!this.quiet()) return false;
    if (this.until !== undefined && compareLsn(lsn, this.until) >= 0) this.#finish();
    return compareLsn(lsn, this.lastConfirmed) > 0;
  }

  confirmed(position: string): void {
    if (compareLsn(position, this.lastConfirmed) > 0) this.lastConfirmed = position;
  }

  fail(err: Error): void {
    this.#failed ??= err;
    this.#wake?.();
    this.#space?.();
  }

  async next(): Promise<ChangeBatch | undefined> {
    for (;;) {
      const b = this.#ready.shift();
      if (b) {
        this.#yielded = b.position;
        this.#space?.();
        this.#space = undefined;
        return b;
      }
      if (this.#failed) throw this.#failed;
      if (this.#done) return undefined;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }
}

/** A row's values by field fullName; columns pgoutput left out (an unchanged TOAST value) are left out. */
function recordOf(t: PgTable, values: Record<string, unknown>): ConnectorRecord {
  const out: Record<string, Value> = {};
  for (const c of t.columns) {
    const v = values[c.name];
    if (v !== undefined) out[c.fullName] = v as Value;
  }
  return out;
}
