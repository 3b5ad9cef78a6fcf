/**
 * Commands to Agents across Service replicas on one PostgreSQL (DESIGN.md "Scale"; docs/deploy.md).
 * Every replica holds the channels of the Agents that connected to it; this bus lets a call on any
 * replica reach an Agent wherever it is connected, through the database alone:
 *
 *   channels   a replica records each channel it holds in `agent_channels` with a lease it renews
 *              (every `renewMs`, for `leaseMs`, by the database's clock); it announces the change
 *              on `ferry_channels`, so that every replica's view of who is connected follows at once
 *              (and is read again in full every `pollMs`, which drops the leases of a dead replica)
 *
 *   commands   sender                                  holder (the channel's replica)
 *              INSERT agent_commands (pending) ───NOTIFY ferry_r_<holder>──▶ take it (pending → taken),
 *                                                                         send it on the channel,
 *              the reply, from the wake-up ◀──NOTIFY ferry_r_<sender>── write the reply (done)
 *              (or read, when too long for one)
 *
 * Three statements on a command's path, each one round trip: the sender's (the holder's lease, the
 * row and the wake-up), the holder's claim, the holder's reply with its wake-up. A NOTIFY rides only
 * in these statements of the bus's own, never in a transaction others wait on (a NOTIFY takes a
 * global lock at commit time), and `agent_commands` is UNLOGGED, so none of them waits for a disk
 * flush. A wake-up lost with a dropped listening connection costs at most `pollMs`: both sides also
 * look for their rows every `pollMs`. A command whose holder does not answer within its time-out
 * fails with CHN_TIMEOUT, as on one process.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import pg from 'pg';
import { sql } from 'kysely';
import type { ErrorCode } from '../../src/errors/codes.js';
import { ERROR_CODES } from '../../src/errors/codes.js';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import type { Store } from '../store/store.js';
import { DB_NOW_MS } from '../store/sql.js';
import { replicaLeaseName } from '../jobs/claims.js';
import { notConnected, type AgentCommand } from './agent-command.js';
import type { AgentSession } from './agent-session.js';
import type { CommandBus, SessionRegistry } from './command-bus.js';

export interface ReplicaBusOptions {
  /** The Service's store: PostgreSQL. */
  store: Store;
  /** The same database, for the connection that listens (LISTEN needs one of its own). */
  databaseUrl: string;
  /** This replica's channels. */
  registry: SessionRegistry;
  log: Logger;
  /** This replica's ID (default: a new UUID). */
  replicaId?: string;
  /** How long a lease lasts unless renewed (default 15 s): how long a dead replica's Agents still count as connected. */
  leaseMs?: number;
  /** How often this replica renews its leases (default a third of leaseMs). */
  renewMs?: number;
  /** How often both sides look for rows a lost wake-up left (default 1 s). */
  pollMs?: number;
}

/** A command's reply as the holder writes it. */
type Reply =
  | { ok: true; result: unknown }
  | { ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };

/** A replica's view of who holds an Agent's channel: it counts while the holder's own lease runs. */
interface Held {
  replicaId: string;
  channelId: string;
}

/** How every replica's liveness lease is named in service_leases (replicaLeaseName). */
const REPLICA_PREFIX = replicaLeaseName('');
/** The channel every replica listens on for changes of who holds which channel. */
const CHANNELS = 'ferry_channels';
/** How long after its time-out a command's row may stay before any replica deletes it. */
const STALE_MS = 10 * 60_000;
/** How much longer than the holder's own time-out the sender waits, for the reply to travel. */
const REPLY_MARGIN_MS = 2_000;
/** How often the whole table of holders is read again, besides the wake-ups and listener reconnects. */
const RESYNC_MS = 30_000;

export class ReplicaCommandBus implements CommandBus {
  readonly replicaId: string;
  readonly #opts: ReplicaBusOptions;
  readonly #log: Logger;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #renewMs: number;
  /** Who holds each Agent's channel, as last read (this replica's own sessions included). */
  readonly #held = new Map<string, Held>();
  /** Until when each replica's liveness lease runs, as last read, by this process's clock. */
  readonly #alive = new Map<string, number>();
  /** When the table of holders was last read whole (Date.now()). */
  #resyncedAt = 0;
  /** A token per channel ID, stable while the channel lasts (channelOf). */
  readonly #tokens = new Map<string, object>();
  /** This replica's sessions' channel IDs. */
  readonly #channelIds = new WeakMap<AgentSession, string>();
  /** The write of each session's lease, awaited before the lease is removed. */
  readonly #recording = new WeakMap<AgentSession, Promise<void>>();
  /** Commands this replica sent and waits on. */
  readonly #waiting = new Map<string, { resolve: (r: Reply) => void; timer: NodeJS.Timeout }>();
  /** Commands this replica is carrying out. */
  readonly #taking = new Set<string>();
  #listener: pg.Client | undefined;
  #timers: NodeJS.Timeout[] = [];
  /** Timed passes in progress, waited for by stop(). */
  readonly #ticks = new Set<Promise<void>>();
  #stopped = false;

  constructor(opts: ReplicaBusOptions) {
    this.#opts = opts;
    this.replicaId = opts.replicaId ?? randomUUID();
    this.#log = opts.log.child({ component: 'replica-bus', replicaId: this.replicaId });
    this.#leaseMs = opts.leaseMs ?? 15_000;
    this.#renewMs = opts.renewMs ?? Math.max(100, Math.floor(this.#leaseMs / 3));
    // Renewals are not announced: the others read them at their polls, which must come as often.
    this.#pollMs = opts.pollMs ?? Math.min(1_000, this.#renewMs);
  }

  /** The channel this replica listens on for its commands and replies. */
  get #inbox(): string {
    return `ferry_r_${this.replicaId.replace(/[^a-z0-9]/gi, '').toLowerCase()}`;
  }

  async start(): Promise<void> {
    await this.#renewAlive();
    await this.#listen();
    await this.#readAlive();
    await this.#readHolders();
    this.#every(this.#renewMs, () => this.#renew(), 'channel lease renewal failed');
    this.#every(this.#pollMs, () => this.#poll(), 'replica command poll failed');
  }

  /** Stops listening and gives up this replica's leases (its channels close with it). */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await Promise.all(this.#ticks);
    for (const [id, w] of this.#waiting) {
      clearTimeout(w.timer);
      w.resolve({ ok: false, error: { code: 'AGT_NOT_CONNECTED', message: 'The Service replica is stopping.' } });
      this.#waiting.delete(id);
    }
    await this.#db
      .deleteFrom('agentChannels')
      .where('replicaId', '=', this.replicaId)
      .execute()
      .catch((err: unknown) => this.#log.warn({ err }, 'channel leases not given up'));
    await this.#db
      .deleteFrom('serviceLeases')
      .where('name', '=', replicaLeaseName(this.replicaId))
      .execute()
      .catch((err: unknown) => this.#log.warn({ err }, 'replica lease not given up'));
    await this.#notify(CHANNELS, '*').catch(() => undefined);
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.end().catch(() => undefined);
  }

  /** Records that this replica now holds `session`'s channel; resolves once every replica can see it. */
  async held(session: AgentSession): Promise<void> {
    const channelId = randomUUID();
    this.#channelIds.set(session, channelId);
    const { agentId } = session;
    const recorded = sql`INSERT INTO agent_channels (agent_id, replica_id, channel_id, lease_until_ms)
      VALUES (${agentId}, ${this.replicaId}, ${channelId}, ${DB_NOW_MS} + ${this.#leaseMs})
      ON CONFLICT (agent_id) DO UPDATE SET replica_id = excluded.replica_id, channel_id = excluded.channel_id,
        lease_until_ms = excluded.lease_until_ms`.execute(this.#db);
    // A close while the row is on its way removes it only after it landed (released waits for it).
    this.#recording.set(
      session,
      recorded.then(
        () => undefined,
        () => undefined,
      ),
    );
    await recorded;
    this.#held.set(agentId, { replicaId: this.replicaId, channelId });
    await this.#notify(CHANNELS, this.#changed(agentId));
  }

  /** `session`'s channel closed: its lease goes, unless a newer channel of the Agent replaced it. */
  async released(session: AgentSession): Promise<void> {
    const channelId = this.#channelIds.get(session);
    if (channelId === undefined) return;
    const { agentId } = session;
    await this.#recording.get(session);
    await this.#db
      .deleteFrom('agentChannels')
      .where('agentId', '=', agentId)
      .where('channelId', '=', channelId)
      .execute();
    if (this.#held.get(agentId)?.channelId === channelId) this.#held.delete(agentId);
    this.#tokens.delete(channelId);
    await this.#notify(CHANNELS, this.#changed(agentId));
  }

  async send(agentId: string, command: AgentCommand, timeoutMs: number): Promise<unknown> {
    const local = this.#opts.registry.get(agentId);
    if (local) return local.request(command, timeoutMs);
    const id = randomUUID();
    const replied = new Promise<Reply>((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        resolve({
          ok: false,
          error: {
            code: 'CHN_TIMEOUT',
            message: `Agent ${agentId} did not answer the ${command.type} command within ${Math.round(timeoutMs / 1000)} seconds; check its status and try again.`,
            details: { agentId },
          },
        });
      }, timeoutMs + REPLY_MARGIN_MS);
      this.#waiting.set(id, { resolve, timer });
    });
    try {
      // One round trip: the holder whose lease runs now, the command for it, and its wake-up.
      const sent = await sql<{ holder: string }>`WITH h AS (
          SELECT c.replica_id FROM agent_channels c
          JOIN service_leases l ON l.name = ${REPLICA_PREFIX} || c.replica_id AND l.until_ms > ${DB_NOW_MS}
          WHERE c.agent_id = ${agentId} AND c.lease_until_ms > ${DB_NOW_MS} AND c.replica_id <> ${this.replicaId}
        ), c AS (
          INSERT INTO agent_commands (id, agent_id, holder, sender, command, timeout_ms, state, created_ms)
          SELECT ${id}, ${agentId}, replica_id, ${this.replicaId}, ${JSON.stringify(command)}, ${timeoutMs}, 'pending', ${DB_NOW_MS}
          FROM h RETURNING holder
        )
        SELECT holder, pg_notify(${INBOX_SQL('holder')}, ${id}) FROM c`.execute(this.#db);
      if (sent.rows.length === 0) throw notConnected(agentId);
      const reply = await replied;
      if (reply.ok) return reply.result;
      throw toFerryError(reply.error);
    } finally {
      const w = this.#waiting.get(id);
      if (w) clearTimeout(w.timer);
      this.#waiting.delete(id);
      // Off the caller's path: the answer is in hand, the row only waits for its delete.
      this.#db
        .deleteFrom('agentCommands')
        .where('id', '=', id)
        .execute()
        .catch(() => undefined);
    }
  }

  isConnected(agentId: string): boolean {
    if (this.#opts.registry.get(agentId)) return true;
    return this.#heldNow(agentId) !== undefined;
  }

  /** Who holds the Agent's channel, if that replica's liveness lease still runs. */
  #heldNow(agentId: string): Held | undefined {
    const h = this.#held.get(agentId);
    return h !== undefined && (this.#alive.get(h.replicaId) ?? 0) > Date.now() ? h : undefined;
  }

  channelOf(agentId: string): object | undefined {
    const local = this.#opts.registry.get(agentId);
    if (local) return local;
    const h = this.#heldNow(agentId);
    if (!h) return undefined;
    let token = this.#tokens.get(h.channelId);
    if (!token) this.#tokens.set(h.channelId, (token = {}));
    return token;
  }

  disconnect(agentId: string, code: number, reason: string): void {
    const local = this.#opts.registry.get(agentId);
    if (local) {
      local.close(code, reason);
      return;
    }
    const h = this.#held.get(agentId);
    if (!h) return;
    this.#notify(inboxOf(h.replicaId), JSON.stringify({ disconnect: agentId, code, reason })).catch((err: unknown) =>
      this.#log.warn({ err, agentId }, 'disconnect not passed to the replica holding the channel'),
    );
  }

  get #db(): Store['db'] {
    return this.#opts.store.db;
  }

  #every(ms: number, tick: () => Promise<void>, failed: string): void {
    let busy: Promise<void> | undefined;
    const t = setInterval(() => {
      if (busy || this.#stopped) return;
      busy = tick()
        .catch((err: unknown) => this.#log.warn({ err }, failed))
        .finally(() => {
          this.#ticks.delete(busy as Promise<void>);
          busy = undefined;
        });
      this.#ticks.add(busy);
    }, ms);
    t.unref();
    this.#timers.push(t);
  }

  /** Opens the listening connection; a lost one is opened again on the next poll. */
  async #listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#opts.databaseUrl });
    client.on('error', (err) => {
      this.#log.warn({ err }, 'the replica bus lost its listening connection; it opens another');
      if (this.#listener === client) this.#listener = undefined;
      client.end().catch(() => undefined);
    });
    client.on('notification', (n) => this.#onNotification(n.channel, n.payload ?? ''));
    await client.connect();
    await client.query(`LISTEN ${this.#inbox}`);
    await client.query(`LISTEN ${CHANNELS}`);
    if (this.#stopped) {
      await client.end();
      return;
    }
    // Wake-ups sent while no connection listened are lost: the next poll reads every holder again.
    this.#resyncedAt = 0;
    this.#listener = client;
  }

  #onNotification(channel: string, payload: string): void {
    if (channel === CHANNELS) {
      const [agentId = '', by] = payload.split(' ');
      // This replica's own changes are in its map already.
      if (by === this.replicaId) return;
      const read = agentId === '*' ? this.#readHolders() : this.#readHolder(agentId);
      read.catch((err: unknown) => this.#log.warn({ err }, 'channel holders not read'));
      return;
    }
    if (payload.startsWith('{')) {
      this.#onControl(payload);
      return;
    }
    const space = payload.indexOf(' ');
    const id = space < 0 ? payload : payload.slice(0, space);
    if (!this.#waiting.has(id)) this.#take(id).catch(this.#warn('command not carried out'));
    else if (space < 0) this.#readReplies([id]).catch(this.#warn('command reply not read'));
    else this.#resolve(id, payload.slice(space + 1));
  }

  #onControl(payload: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(payload);
    } catch {
      return;
    }
    if (typeof msg !== 'object' || msg === null) return;
    const { disconnect, code, reason } = msg as Record<string, unknown>;
    if (typeof disconnect === 'string' && typeof code === 'number')
      this.#opts.registry.get(disconnect)?.close(code, typeof reason === 'string' ? reason : '');
  }

  #warn(what: string): (err: unknown) => void {
    return (err) => this.#log.warn({ err }, what);
  }

  async #readHolder(agentId: string): Promise<void> {
    // With the holder's own lease: a replica that started since the last poll counts at once.
    const row = await this.#db
      .selectFrom('agentChannels as c')
      .innerJoin('serviceLeases as l', (j) => j.on('l.name', '=', sql<string>`${REPLICA_PREFIX} || c.replica_id`))
      .select([
        'c.replicaId',
        'c.channelId',
        sql<number>`c.lease_until_ms - ${DB_NOW_MS}`.as('leftMs'),
        sql<number>`l.until_ms - ${DB_NOW_MS}`.as('aliveMs'),
      ])
      .where('c.agentId', '=', agentId)
      .executeTakeFirst();
    if (row && Number(row.leftMs) > 0) {
      this.#held.set(agentId, { replicaId: row.replicaId, channelId: row.channelId });
      this.#alive.set(row.replicaId, Date.now() + Number(row.aliveMs));
    } else this.#held.delete(agentId);
  }

  async #readHolders(): Promise<void> {
    this.#resyncedAt = Date.now();
    const rows = await this.#db
      .selectFrom('agentChannels')
      .select(['agentId', 'replicaId', 'channelId'])
      .where('leaseUntilMs', '>', DB_NOW_MS)
      .execute();
    this.#held.clear();
    for (const r of rows) this.#held.set(r.agentId, { replicaId: r.replicaId, channelId: r.channelId });
  }

  /** Every replica's liveness lease: a replica whose lease passed holds no channel any more. */
  async #readAlive(): Promise<void> {
    const rows = await this.#db
      .selectFrom('serviceLeases')
      .select(['holder', sql<number>`until_ms - ${DB_NOW_MS}`.as('leftMs')])
      .where('name', 'like', `${REPLICA_PREFIX}%`)
      .execute();
    const now = Date.now();
    this.#alive.clear();
    for (const r of rows) this.#alive.set(r.holder, now + Number(r.leftMs));
  }

  /** This replica's own lease: while it lasts, the prepare jobs it runs are not abandoned. */
  async #renewAlive(): Promise<void> {
    await sql`INSERT INTO service_leases (name, holder, until_ms)
      VALUES (${replicaLeaseName(this.replicaId)}, ${this.replicaId}, ${DB_NOW_MS} + ${this.#leaseMs})
      ON CONFLICT (name) DO UPDATE SET until_ms = excluded.until_ms`.execute(this.#db);
  }

  /**
   * Renews the leases of the channels this replica holds, and drops its own leases that passed
   * unrenewed. Only passed ones: a lease written by a hello after the list of channels was taken is
   * current, and must not go with the stale list.
   */
  async #renew(): Promise<void> {
    await this.#renewAlive();
    const ids = this.#opts.registry.all().map((session) => session.agentId);
    if (ids.length)
      await sql`UPDATE agent_channels SET lease_until_ms = ${DB_NOW_MS} + ${this.#leaseMs}
        WHERE replica_id = ${this.replicaId} AND agent_id = ANY(${ids})`.execute(this.#db);
    const dropped = await this.#db
      .deleteFrom('agentChannels')
      .where('replicaId', '=', this.replicaId)
      .where('leaseUntilMs', '<', DB_NOW_MS)
      .returning('agentId')
      .execute();
    // The others read holders whole only now and then: tell them of each lease that went.
    for (const { agentId } of dropped) {
      if (this.#held.get(agentId)?.replicaId === this.replicaId) this.#held.delete(agentId);
      await this.#notify(CHANNELS, this.#changed(agentId));
    }
  }

  /** What a lost wake-up would have told: commands for this replica, replies for it, who holds what. */
  async #poll(): Promise<void> {
    if (!this.#listener && !this.#stopped) await this.#listen();
    const pending = await this.#db
      .selectFrom('agentCommands')
      .select('id')
      .where('holder', '=', this.replicaId)
      .where('state', '=', 'pending')
      .execute();
    for (const { id } of pending) this.#take(id).catch(this.#warn('command not carried out'));
    if (this.#waiting.size) await this.#readReplies([...this.#waiting.keys()]);
    await this.#readAlive();
    if (Date.now() - this.#resyncedAt >= RESYNC_MS) await this.#readHolders();
    await this.#db
      .deleteFrom('agentCommands')
      .where('createdMs', '<', sql<number>`${DB_NOW_MS} - ${STALE_MS}`)
      .execute();
  }

  /** Carries out a command another replica sent to an Agent whose channel this one holds. */
  async #take(id: string): Promise<void> {
    if (this.#taking.has(id)) return;
    this.#taking.add(id);
    try {
      const row = await this.#db
        .updateTable('agentCommands')
        .set({ state: 'taken' })
        .where('id', '=', id)
        .where('holder', '=', this.replicaId)
        .where('state', '=', 'pending')
        .returning(['agentId', 'sender', 'command', 'timeoutMs'])
        .executeTakeFirst();
      if (!row) return;
      const session = this.#opts.registry.get(row.agentId);
      let reply: Reply;
      try {
        if (!session) throw notConnected(row.agentId);
        reply = { ok: true, result: await session.request(JSON.parse(row.command) as AgentCommand, row.timeoutMs) };
      } catch (err) {
        reply = { ok: false, error: errorOf(err) };
      }
      // The reply and its wake-up in one round trip; the wake-up carries the reply when it fits.
      await sql`WITH d AS (
          UPDATE agent_commands SET state = 'done', reply = ${JSON.stringify(reply)} WHERE id = ${id} RETURNING sender, reply
        )
        SELECT pg_notify(${INBOX_SQL('sender')},
          CASE WHEN octet_length(reply) <= ${MAX_INLINE_REPLY} THEN ${id} || ' ' || reply ELSE ${id} END) FROM d`.execute(
        this.#db,
      );
    } finally {
      this.#taking.delete(id);
    }
  }

  async #readReplies(ids: string[]): Promise<void> {
    const rows = await this.#db
      .selectFrom('agentCommands')
      .select(['id', 'reply'])
      .where('id', 'in', ids)
      .where('state', '=', 'done')
      .execute();
    for (const r of rows) if (r.reply !== null) this.#resolve(r.id, r.reply);
  }

  /** Hands a reply to the call waiting on it, if one still does. */
  #resolve(id: string, reply: string): void {
    const w = this.#waiting.get(id);
    if (!w) return;
    this.#waiting.delete(id);
    clearTimeout(w.timer);
    w.resolve(JSON.parse(reply) as Reply);
  }

  /** The wake-up payload of a change of who holds `agentId`'s channel, made by this replica. */
  #changed(agentId: string): string {
    return `${agentId} ${this.replicaId}`;
  }

  /** A wake-up, as a statement of its own (see the module comment). */
  async #notify(channel: string, payload: string): Promise<void> {
    await sql`SELECT pg_notify(${channel}, ${payload})`.execute(this.#db);
  }
}

const inboxOf = (replicaId: string): string => `ferry_r_${replicaId.replace(/[^a-z0-9]/gi, '').toLowerCase()}`;

/** inboxOf in SQL, of the column `column`. */
const INBOX_SQL = (column: 'holder' | 'sender') =>
  sql<string>`'ferry_r_' || lower(regexp_replace(${sql.ref(column)}, '[^a-zA-Z0-9]', '', 'g'))`;

/** The longest reply a wake-up carries (a NOTIFY payload holds under 8,000 bytes); longer ones are read. */
const MAX_INLINE_REPLY = 7_000;

/** An error as a reply carries it. */
function errorOf(err: unknown): { code: string; message: string; details?: Record<string, unknown> } {
  if (isFerryError(err))
    return { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) };
  return { code: 'SVC_INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

/** The error a reply carried, as the holder's process had it. */
function toFerryError(e: { code: string; message: string; details?: Record<string, unknown> }): FerryError {
  const code: ErrorCode = e.code in ERROR_CODES ? (e.code as ErrorCode) : 'SVC_INTERNAL';
  return new FerryError(code, e.message, e.details ? { details: e.details } : {});
}
