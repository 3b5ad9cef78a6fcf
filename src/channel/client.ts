import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import WebSocket, { type RawData } from 'ws';
import { FerryError, isFerryError } from '../errors/ferry-error.js';
import {
  CHANNEL_PATH,
  CLOSE,
  HelloResult,
  MAX_MESSAGE_BYTES,
  type AgentRequest,
  type ErrorData,
  type Heartbeat,
  type Hello,
  type Reply,
} from '../protocol/channel.js';
import { FromService, type ServiceRequest } from '../protocol/commands.js';
import { errorsOf, RUN_COMMITTED_FEATURE, SHARED_ERRORS_FEATURE, type RunErrorsReport } from '../protocol/solutions.js';
import { Backoff, sleep } from './backoff.js';
import type { Outbox, OutboxMessage } from './outbox.js';

/**
 * The Agent's one WebSocket to the Service (see the diagram in src/protocol/channel.ts):
 *
 *   connect (Bearer agentId.secret) ─▶ hello ─▶ ok ─┬─▶ heartbeat every heartbeatMs (stated by the Service)
 *        ▲                                         ├─▶ ping every pingMs; silent for 2·pingMs ⇒ terminate
 *        │                                         ├─▶ outbox pump: oldest report, await ack, delete, next
 *        │                                         └─◀ commands ─▶ handler ─▶ reply {re, ok, …}
 *        ├──── capped exponential back-off with full jitter ◀── close / error (4401, 4404, 4409: stop)
 *        └──── at once (within RESTART_SPREAD_MS) ◀── close 1012: the Service (a replica) is going
 */

/** What the client needs from the Agent. */
export interface ChannelClientOptions {
  readonly serviceUrl: string;
  readonly agentId: string;
  readonly agentSecret: string;
  readonly log: Logger;
  readonly outbox: Outbox;
  /** The hello's fields, read at each connect (status and connectors may have changed). */
  readonly hello: () => Omit<Hello, 'id' | 'type'>;
  readonly heartbeat: () => Omit<Heartbeat, 'id' | 'type' | 'at'>;
  /** Runs a Service command; its value is the reply's `result`, a thrown error its `error`. */
  readonly onCommand: (command: ServiceRequest) => Promise<unknown>;
  /** The Service refused this Agent for good (credentials, deleted, clone): the Agent must stop. */
  readonly onFatal: (err: FerryError) => void;
  readonly onConnected?: (hello: HelloResult) => void;
  readonly pingMs: number;
  readonly requestTimeoutMs: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  readonly random?: () => number;
}

/** Invalid messages tolerated within {@link BAD_WINDOW_MS} before the socket is closed with 4400. */
const BAD_MESSAGE_LIMIT = 10;
const BAD_WINDOW_MS = 60_000;
/** The widest pause before reconnecting after a Service restart close (1012). */
export const RESTART_SPREAD_MS = 250;

interface Pending {
  resolve: (reply: Reply) => void;
  reject: (err: FerryError) => void;
  timer: NodeJS.Timeout;
}

/** One connection's state; replaced on every reconnect. */
interface Session {
  readonly ws: WebSocket;
  readonly closed: Promise<{ code: number; reason: string }>;
  open: boolean;
  lastReceived: number;
  badMessages: number[];
}

/** The `Authorization` header value of an Agent (channel upgrade and uploads). */
export function bearer(agentId: string, agentSecret: string): string {
  return `Bearer ${agentId}.${agentSecret}`;
}

/** `http(s)://host/base` → `ws(s)://host/base/v1/agent/channel`. */
export function channelUrl(serviceUrl: string): string {
  const url = new URL(serviceUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.pathname = url.pathname.replace(/\/+$/, '') + CHANNEL_PATH;
  return url.toString();
}

export class ChannelClient {
  private readonly log: Logger;
  private readonly backoff: Backoff;
  /** How the last connection closed (undefined while one is open or when none opened). */
  private lastCloseCode: number | undefined;
  private readonly pending = new Map<string, Pending>();
  private readonly stopController = new AbortController();
  private session: Session | undefined;
  private ready = false;
  private heartbeatMs = 30_000;
  private loopDone: Promise<void> | undefined;
  private wakePump: (() => void) | undefined;
  private readonly unsubscribe: () => void;

  constructor(private readonly opts: ChannelClientOptions) {
    this.log = opts.log.child({ component: 'channel' });
    this.backoff = new Backoff(opts.backoffBaseMs, opts.backoffMaxMs, opts.random);
    this.unsubscribe = opts.outbox.onEnqueue(() => this.wakePump?.());
  }

  /** The features the Service stated in its last hello reply. */
  private features: ReadonlySet<string> = new Set();

  /** True between an accepted hello and the socket's close. */
  get connected(): boolean {
    return this.ready;
  }

  /** The heartbeat interval the Service stated in its hello reply. */
  get heartbeatInterval(): number {
    return this.heartbeatMs;
  }

  /** Starts connecting; reconnects until {@link stop}. */
  start(): void {
    this.loopDone ??= this.loop();
  }

  /** Closes the socket (1000) and stops reconnecting. */
  async stop(): Promise<void> {
    this.stopController.abort(new Error('stopping'));
    this.unsubscribe();
    this.wakePump?.();
    const s = this.session;
    if (s && s.ws.readyState !== WebSocket.CLOSED) {
      s.ws.close(1000, 'agent stopping');
      const timer = setTimeout(() => s.ws.terminate(), 2_000);
      await s.closed;
      clearTimeout(timer);
    }
    await this.loopDone;
  }

  /** Waits until the outbox is empty (true) or `timeoutMs` passed (false). */
  async flush(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.opts.outbox.size > 0) {
      if (Date.now() >= deadline) return false;
      await sleep(50);
    }
    return true;
  }

  /** Sends a request and resolves with its reply; rejects with CHN_TIMEOUT or CHN_DISCONNECTED. */
  request(message: AgentRequest, timeoutMs = this.opts.requestTimeoutMs): Promise<Reply> {
    return this.requestText(message.id, message.type, JSON.stringify(message), timeoutMs);
  }

  /** {@link request} of a message already serialized (`text`, whose ID is `id`). */
  private requestText(id: string, type: string, text: string, timeoutMs = this.opts.requestTimeoutMs): Promise<Reply> {
    const s = this.session;
    if (!s?.open) return Promise.reject(new FerryError('CHN_DISCONNECTED', 'The channel is not connected.'));
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new FerryError('CHN_TIMEOUT', `No reply to ${type} within ${timeoutMs} ms.`, { details: { type } }));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      try {
        this.sendText(s, text);
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(
          isFerryError(err)
            ? err
            : new FerryError('CHN_DISCONNECTED', 'The channel closed while sending.', { cause: err }),
        );
      }
    });
  }

  // ── connection loop ────────────────────────────────────────────────────────

  private async loop(): Promise<void> {
    const stop = this.stopController.signal;
    while (!stop.aborted) {
      let fatal: FerryError | undefined;
      try {
        fatal = await this.connectOnce();
      } catch (err) {
        this.log.warn({ err, code: isFerryError(err) ? err.code : undefined }, 'channel connection failed');
      }
      if (fatal) {
        this.log.error({ code: fatal.code }, fatal.message);
        this.opts.onFatal(fatal);
        return;
      }
      if (stop.aborted) return;
      const delay = this.#nextDelay();
      try {
        await sleep(delay, stop);
      } catch {
        return;
      }
    }
  }

  /**
   * The pause before the next connection: none to speak of after a Service said it is restarting
   * (a spread of up to RESTART_SPREAD_MS, so that a replica's Agents do not all arrive in the same
   * millisecond), the capped back-off after anything else.
   */
  #nextDelay(): number {
    if (this.lastCloseCode === CLOSE.serviceRestart) {
      const delay = Math.round((this.opts.random ?? Math.random)() * RESTART_SPREAD_MS);
      this.log.info({ delayMs: delay }, 'the Service is restarting: reconnecting now');
      return delay;
    }
    const delay = this.backoff.next();
    this.log.info({ delayMs: delay, attempt: this.backoff.attempts }, 'reconnecting after back-off');
    return delay;
  }

  /** One connection from upgrade to close; returns a fatal error when the Service refuses this Agent for good. */
  private async connectOnce(): Promise<FerryError | undefined> {
    this.lastCloseCode = undefined;
    const url = channelUrl(this.opts.serviceUrl);
    const ws = new WebSocket(url, {
      headers: { authorization: bearer(this.opts.agentId, this.opts.agentSecret) },
      maxPayload: MAX_MESSAGE_BYTES,
      handshakeTimeout: this.opts.requestTimeoutMs,
    });
    let refusedStatus: number | undefined;
    const closed = new Promise<{ code: number; reason: string }>((resolve) => {
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') }));
    });
    const s: Session = { ws, closed, open: false, lastReceived: Date.now(), badMessages: [] };
    this.session = s;
    ws.on('error', (err) => this.log.warn({ err }, 'channel socket error'));
    ws.on('unexpected-response', (_req, res) => {
      // The Service refused the upgrade with a plain HTTP answer.
      refusedStatus = res.statusCode;
      res.resume();
      ws.terminate();
    });
    ws.on('message', (data, isBinary) => this.onMessage(s, data, isBinary));
    const opened = await new Promise<boolean>((resolve) => {
      ws.once('open', () => resolve(true));
      void closed.then(() => resolve(false));
    });
    if (refusedStatus === 401 || refusedStatus === 403) return refusedError(CLOSE.unauthorized);
    if (refusedStatus === 409) return refusedError(CLOSE.clonedInstall);
    if (refusedStatus === 410) return refusedError(CLOSE.agentDeleted);
    if (!opened) {
      const { code } = await closed;
      this.log.warn({ status: refusedStatus, code }, 'channel did not open');
      return refusedError(code);
    }
    s.open = true;
    this.log.debug({ url }, 'channel open; saying hello');
    const timers: NodeJS.Timeout[] = [];
    try {
      const reply = await this.request({ id: randomUUID(), type: 'hello', ...this.opts.hello() });
      if (!reply.ok) {
        this.log.warn({ code: reply.error.code }, 'hello refused');
        const fatal = refusedError(FATAL_HELLO_CODES[reply.error.code] ?? 0);
        ws.close(1000, 'hello refused');
        if (fatal) {
          await closed;
          s.open = false;
          return fatal;
        }
      } else {
        const hello = HelloResult.parse(reply.result);
        this.heartbeatMs = hello.heartbeatMs;
        this.features = new Set(hello.features ?? []);
        this.ready = true;
        this.backoff.reset();
        this.log.info(
          { heartbeatMs: hello.heartbeatMs, orgId: hello.orgId, agentName: hello.agentName },
          'channel connected',
        );
        this.opts.onConnected?.(hello);
        timers.push(setInterval(() => this.beat(), hello.heartbeatMs));
        timers.push(setInterval(() => this.keepalive(s), this.opts.pingMs));
        void this.pump(s);
      }
    } catch (err) {
      this.log.warn({ err }, 'hello failed');
      ws.terminate();
    }
    const { code, reason } = await closed;
    this.lastCloseCode = code;
    for (const t of timers) clearInterval(t);
    s.open = false;
    this.ready = false;
    this.wakePump?.();
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new FerryError('CHN_DISCONNECTED', 'The channel closed before the reply arrived.'));
      this.pending.delete(id);
    }
    this.log.info({ code, reason }, 'channel closed');
    return refusedError(code);
  }

  // ── incoming ───────────────────────────────────────────────────────────────

  private onMessage(s: Session, data: RawData, isBinary: boolean): void {
    s.lastReceived = Date.now();
    const text = isBinary ? undefined : rawText(data);
    let json: unknown;
    try {
      if (text === undefined) throw new Error('binary frame');
      json = JSON.parse(text);
    } catch {
      this.bad(s, 'CHN_MALFORMED', undefined);
      return;
    }
    const parsed = FromService.safeParse(json);
    if (!parsed.success) {
      const id =
        typeof json === 'object' && json !== null && 'id' in json && typeof json.id === 'string' ? json.id : undefined;
      this.bad(
        s,
        'CHN_INVALID_MESSAGE',
        id,
        parsed.error.issues
          .slice(0, 5)
          .map((i) => `${i.path.join('.')}: ${i.message}`)
          .join('; '),
      );
      return;
    }
    const msg = parsed.data;
    if ('re' in msg) {
      const p = this.pending.get(msg.re);
      if (!p) {
        this.log.debug({ re: msg.re }, 'reply to no pending request (late or duplicate)');
        return;
      }
      clearTimeout(p.timer);
      this.pending.delete(msg.re);
      p.resolve(msg);
      return;
    }
    switch (msg.type) {
      case 'ping':
        this.trySend(s, { type: 'pong', at: new Date().toISOString() });
        return;
      case 'pong':
        return;
      default:
        void this.runCommand(s, msg);
    }
  }

  private async runCommand(s: Session, command: ServiceRequest): Promise<void> {
    const log = this.log.child({ commandId: command.id, command: command.type });
    log.debug('command received');
    let reply: Reply;
    try {
      const result = await this.opts.onCommand(command);
      reply = { re: command.id, ok: true, result };
    } catch (err) {
      const error = toChannelError(err);
      if (error.kind === 'system') log.error({ err }, 'command failed');
      else log.warn({ code: error.code }, 'command failed');
      reply = { re: command.id, ok: false, error };
    }
    // A reply after a reconnect would be for another socket's request: the command's own outcome goes to the outbox where it matters.
    this.trySend(s, reply);
  }

  /** Logs an invalid message, answers it when it had an ID, and closes the socket when they keep coming. */
  private bad(
    s: Session,
    code: 'CHN_MALFORMED' | 'CHN_INVALID_MESSAGE',
    id: string | undefined,
    detail?: string,
  ): void {
    this.log.warn({ code, id, detail }, 'invalid message on the channel');
    if (id)
      this.trySend(s, {
        re: id,
        ok: false,
        error: { code, kind: 'config', message: detail ?? 'The message does not match the protocol.' },
      });
    const now = Date.now();
    s.badMessages = s.badMessages.filter((t) => now - t < BAD_WINDOW_MS);
    s.badMessages.push(now);
    if (s.badMessages.length > BAD_MESSAGE_LIMIT) {
      this.log.warn({ count: s.badMessages.length }, 'too many invalid messages; closing the channel');
      s.ws.close(CLOSE.protocolError, 'too many invalid messages');
    }
  }

  // ── outgoing ───────────────────────────────────────────────────────────────

  private send(s: Session, message: object): void {
    this.sendText(s, JSON.stringify(message));
  }

  private sendText(s: Session, text: string): void {
    if (Buffer.byteLength(text) > MAX_MESSAGE_BYTES) {
      throw new FerryError('CHN_TOO_LARGE', `A ${Buffer.byteLength(text)}-byte message exceeds the channel's limit.`);
    }
    if (s.ws.readyState !== WebSocket.OPEN) throw new FerryError('CHN_DISCONNECTED', 'The channel is not open.');
    s.ws.send(text);
  }

  private trySend(s: Session, message: object): void {
    try {
      this.send(s, message);
    } catch (err) {
      this.log.debug({ err }, 'could not send on the channel');
    }
  }

  private beat(): void {
    const message: Heartbeat = {
      id: randomUUID(),
      type: 'heartbeat',
      at: new Date().toISOString(),
      ...this.opts.heartbeat(),
    };
    this.request(message).then(
      (reply) => {
        if (!reply.ok) this.log.warn({ code: reply.error.code }, 'heartbeat refused');
      },
      (err: unknown) => this.log.warn({ code: isFerryError(err) ? err.code : undefined }, 'heartbeat not answered'),
    );
  }

  /** Application-level keepalive: a half-open TCP connection shows no error, only silence. */
  private keepalive(s: Session): void {
    if (Date.now() - s.lastReceived > 2 * this.opts.pingMs) {
      this.log.warn(
        { silentMs: Date.now() - s.lastReceived },
        'no message from the Service; dropping the half-open socket',
      );
      s.ws.terminate();
      return;
    }
    this.trySend(s, { type: 'ping', at: new Date().toISOString() });
  }

  /**
   * Sends outbox rows one at a time, oldest first, so the Service sees reports in the order they
   * happened. A row goes as the text the outbox stored, not parsed and serialized again.
   */
  private async pump(s: Session): Promise<void> {
    const outbox = this.opts.outbox;
    while (s.open && this.ready) {
      let next: OutboxMessage | undefined;
      try {
        next = outbox.next();
      } catch (err) {
        // The outbox file cannot be read now (disk full, locked): keep the Agent up and try again.
        this.log.error({ err }, 'the outbox could not be read');
        await sleep(this.opts.backoffBaseMs);
        continue;
      }
      if (!next) {
        await new Promise<void>((resolve) => (this.wakePump = resolve));
        continue;
      }
      if (next.kind === 'runCommitted' && !this.features.has(RUN_COMMITTED_FEATURE)) {
        // A Service that does not take corrections keeps the counts the run's end gave.
        this.log.debug({ reportId: next.id }, 'a runCommitted report dropped: the Service does not take it');
        outbox.acknowledge(next.id);
        continue;
      }
      try {
        // Stored with shared fields; a Service that does not take them gets every error whole.
        const text =
          next.kind === 'runErrors' && !this.features.has(SHARED_ERRORS_FEATURE)
            ? withWholeErrors(next.text)
            : next.text;
        const reply = await this.requestText(next.id, 'report', text);
        if (reply.ok) {
          outbox.acknowledge(next.id);
        } else if (reply.error.kind === 'config') {
          this.log.error(
            { reportId: next.id, code: reply.error.code },
            'the Service refused a report; kept in outbox_dead',
          );
          outbox.reject(next.id, JSON.stringify(reply.error));
        } else {
          this.log.warn({ reportId: next.id, code: reply.error.code }, 'report not accepted yet; retrying');
          await sleep(this.opts.backoffBaseMs);
        }
      } catch (err) {
        if (isFerryError(err) && err.code === 'CHN_TOO_LARGE') {
          // It never fits a message: sent again and again it would hold back every later report.
          this.log.error(
            { reportId: next.id, code: err.code },
            'a report exceeds the channel message limit; kept in outbox_dead',
          );
          outbox.reject(next.id, JSON.stringify(toChannelError(err)));
          continue;
        }
        // Timed out or disconnected: the row stays and goes again, on this socket or the next.
        this.log.debug({ code: isFerryError(err) ? err.code : undefined }, 'report not acknowledged');
        if (s.open) await sleep(this.opts.backoffBaseMs);
      }
    }
  }
}

/** A stored runErrors message with its errors whole (without `shared`), as protocol version 1 first had them. */
function withWholeErrors(text: string): string {
  const message = JSON.parse(text) as { report: RunErrorsReport };
  const report = message.report;
  if (!report.shared) return text;
  const { shared: _shared, ...rest } = report;
  return JSON.stringify({ ...message, report: { ...rest, errors: errorsOf(report) } });
}

/** Hello refusals that mean the same as their close codes (the close may arrive after our own). */
const FATAL_HELLO_CODES: Readonly<Record<string, number>> = {
  AGT_UNAUTHORIZED: CLOSE.unauthorized,
  AGT_DELETED: CLOSE.agentDeleted,
  AGT_CLONED_INSTALL: CLOSE.clonedInstall,
};

/** Maps a close code to the fatal error it means, or undefined when reconnecting may help. */
function refusedError(code: number): FerryError | undefined {
  switch (code) {
    case CLOSE.unauthorized:
      return new FerryError(
        'AGT_UNAUTHORIZED',
        'The Service refused the Agent credentials (close 4401): the Agent stops. Reinstall it with a new installation key.',
      );
    case CLOSE.agentDeleted:
      return new FerryError(
        'AGT_DELETED',
        'The Agent was deleted in the Service (close 4404): the Agent stops. Uninstall it.',
      );
    case CLOSE.clonedInstall:
      return new FerryError(
        'AGT_CLONED_INSTALL',
        'The Service saw another installation with this Agent identity (close 4409): the Agent stops. Install a new instance instead of copying one.',
      );
    default:
      return undefined;
  }
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

/** An error as it crosses the channel: plain data with a code. */
export function toChannelError(err: unknown): ErrorData {
  if (isFerryError(err))
    return { code: err.code, kind: err.kind, message: err.message, ...(err.details ? { details: err.details } : {}) };
  return { code: 'SVC_INTERNAL', kind: 'system', message: err instanceof Error ? err.message : String(err) };
}
