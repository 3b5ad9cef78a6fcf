import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { ErrorCode } from '../../src/errors/codes.js';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import {
  AgentRequest,
  CLOSE,
  MAX_MESSAGE_BYTES,
  Ping,
  Pong,
  Reply,
  type ErrorData,
  type Heartbeat,
  type Hello,
  type HelloResult,
  type Report,
} from '../../src/protocol/channel.js';
import type { FromService } from '../../src/protocol/commands.js';
import type { z } from 'zod';
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from '../util/json-depth.js';
import { commandFailed, notConnected, type AgentCommand } from './agent-command.js';

/** The part of a `ws` WebSocket a session uses (a stand-in implements it in unit tests). */
export interface ChannelSocket {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
}

/** What the gateway does with the requests of a session. */
export interface SessionHandlers {
  hello(session: AgentSession, msg: Hello): Promise<HelloResult>;
  heartbeat(session: AgentSession, msg: Heartbeat): Promise<unknown>;
  report(session: AgentSession, msg: Report): Promise<void>;
  /** The socket closed (any reason); pending commands are already rejected. */
  closed(session: AgentSession, code: number): void;
}

/** What the metrics see of a channel (service/metrics): message types (a bounded set) and command round trips. */
export interface ChannelObserver {
  message(type: string, direction: 'in' | 'out'): void;
  commandDone(command: string, outcome: 'ok' | 'failed' | 'timeout' | 'disconnected', seconds: number): void;
}

export interface SessionOptions {
  agentId: string;
  orgId: number;
  /** Origin the Agent connected to (`https://host:port`): relative URLs in commands resolve against it. */
  origin: string;
  log: FastifyBaseLogger;
  handlers: SessionHandlers;
  /** Bad messages tolerated within `badWindowMs`; the one that reaches the limit closes the socket with 4400. */
  badMessageLimit?: number;
  badWindowMs?: number;
  observer?: ChannelObserver | undefined;
}

interface Pending {
  type: string;
  /** performance.now() at send, for the round-trip time. */
  sentAt: number;
  resolve: (result: unknown) => void;
  reject: (err: FerryError) => void;
  timer: NodeJS.Timeout;
}

const OPEN = 1;

/**
 * One Agent's WebSocket, after authentication: parses and validates every frame, answers
 * requests in arrival order, correlates command replies by ID with time-outs, counts bad
 * messages, and keeps the application-level keepalive.
 */
export class AgentSession {
  readonly agentId: string;
  readonly orgId: number;
  readonly origin: string;
  readonly connectedAt = Date.now();
  readonly #socket: ChannelSocket;
  readonly #opts: Required<Pick<SessionOptions, 'badMessageLimit' | 'badWindowMs'>> & SessionOptions;
  readonly #log: FastifyBaseLogger;
  readonly #pending = new Map<string, Pending>();
  #badTimes: number[] = [];
  #greeted = false;
  #closed = false;
  #closeAfterReply: { code: number; reason: string } | undefined;
  #lastTraffic = Date.now();
  #lastPing = Date.now();
  /** Requests are handled one after another, so a report never overtakes the hello before it. */
  #chain: Promise<void> = Promise.resolve();

  constructor(socket: ChannelSocket, opts: SessionOptions) {
    this.#socket = socket;
    this.#opts = { badMessageLimit: 20, badWindowMs: 60_000, ...opts };
    this.agentId = opts.agentId;
    this.orgId = opts.orgId;
    this.origin = opts.origin;
    this.#log = opts.log;
  }

  /** True once the hello was accepted. */
  get greeted(): boolean {
    return this.#greeted;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Feed one frame from the socket. Never throws: a bad frame is answered or counted. */
  receive(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
    this.#lastTraffic = Date.now();
    if (this.#closed) return;
    if (isBinary) return this.#bad('CHN_MALFORMED', undefined, 'binary frames are not part of the protocol');
    const text = (
      Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)
    ).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return this.#bad('CHN_MALFORMED', undefined, 'the frame is not JSON');
    }
    const obj =
      json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
    const id = typeof obj?.['id'] === 'string' && obj['id'].length <= 100 ? obj['id'] : undefined;
    // JSON.parse reads any depth, but what handles a message (JSON.stringify when it is stored,
    // the HTTP answer a reply feeds) recurses: refuse a deep message here, answering its ID so
    // that the Agent sets the report aside instead of sending it again.
    if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) {
      const detail = `the message nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`;
      const re = typeof obj?.['re'] === 'string' && obj['re'].length <= 100 ? obj['re'] : undefined;
      if (re !== undefined)
        this.#settle({ re, ok: false, error: { code: 'CHN_INVALID_MESSAGE', kind: 'config', message: detail } });
      return this.#bad('CHN_INVALID_MESSAGE', re === undefined ? id : undefined, detail);
    }

    if (obj && 're' in obj) {
      const reply = Reply.safeParse(json);
      if (!reply.success) return this.#bad('CHN_INVALID_MESSAGE', undefined, summarize(reply.error));
      this.#observe('reply');
      return this.#settle(reply.data);
    }
    if (obj?.['type'] === 'ping' || obj?.['type'] === 'pong') {
      const keep = (obj['type'] === 'ping' ? Ping : Pong).safeParse(json);
      if (!keep.success) return this.#bad('CHN_INVALID_MESSAGE', undefined, summarize(keep.error));
      this.#observe(keep.data.type);
      if (keep.data.type === 'ping') this.send({ type: 'pong', at: new Date().toISOString() });
      return;
    }
    const request = AgentRequest.safeParse(json);
    if (!request.success) return this.#bad('CHN_INVALID_MESSAGE', id, summarize(request.error));
    const msg = request.data;
    this.#observe(msg.type);
    this.#chain = this.#chain
      .then(() => this.#handle(msg))
      .catch((err: unknown) => this.#log.error({ err, type: msg.type }, 'agent request handling failed'));
  }

  /** Sends a command and waits for the Agent's reply. */
  request(command: AgentCommand, timeoutMs: number): Promise<unknown> {
    if (this.#closed) return Promise.reject(notConnected(this.agentId));
    const id = randomUUID();
    const message = {
      ...command,
      id,
      ...('uploadUrl' in command ? { uploadUrl: this.resolveUrl(command.uploadUrl) } : {}),
      ...('packageUrl' in command ? { packageUrl: this.resolveUrl(command.packageUrl) } : {}),
    } as FromService;
    const sentAt = performance.now();
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        this.#commandDone(command.type, 'timeout', sentAt);
        reject(
          new FerryError(
            'CHN_TIMEOUT',
            `Agent ${this.agentId} did not answer the ${command.type} command within ${Math.round(timeoutMs / 1000)} seconds; check its status and try again.`,
            { details: { agentId: this.agentId } },
          ),
        );
      }, timeoutMs);
      this.#pending.set(id, { type: command.type, sentAt, resolve, reject, timer });
      if (!this.send(message)) {
        clearTimeout(timer);
        this.#pending.delete(id);
        reject(notConnected(this.agentId));
      }
    });
  }

  /** A Service-relative path (`/v1/…`) becomes an absolute URL on the origin the Agent connected to. */
  resolveUrl(url: string): string {
    return url.startsWith('/') ? new URL(url, this.origin).toString() : url;
  }

  /** Sends one message; false when the socket is not open or the message is too large. */
  send(message: FromService): boolean {
    if (this.#closed || this.#socket.readyState !== OPEN) return false;
    const text = JSON.stringify(message);
    if (Buffer.byteLength(text) > MAX_MESSAGE_BYTES) {
      this.#log.error(
        { code: 'CHN_TOO_LARGE', type: 'type' in message ? message.type : 'reply' },
        'outgoing channel message too large',
      );
      return false;
    }
    this.#socket.send(text);
    this.#opts.observer?.message('type' in message ? message.type : 'reply', 'out');
    return true;
  }

  /**
   * The application-level keepalive, called periodically by the gateway: pings after
   * `pingIntervalMs` without one, terminates a socket silent for `idleTimeoutMs` (half-open).
   */
  keepalive(nowMs: number, pingIntervalMs: number, idleTimeoutMs: number): void {
    if (this.#closed) return;
    if (nowMs - this.#lastTraffic >= idleTimeoutMs) {
      this.#log.warn({ silentMs: nowMs - this.#lastTraffic }, 'agent channel silent: terminated');
      this.#socket.terminate();
      this.onClosed(1006);
      return;
    }
    if (nowMs - this.#lastPing >= pingIntervalMs) {
      this.#lastPing = nowMs;
      this.send({ type: 'ping', at: new Date(nowMs).toISOString() });
    }
  }

  /** Closes the socket with an application close code. */
  close(code: number, reason: string): void {
    if (this.#closed) return;
    try {
      this.#socket.close(code, reason.slice(0, 120));
    } catch (err) {
      this.#log.debug({ err }, 'close failed; terminating');
      this.#socket.terminate();
    }
    this.onClosed(code);
  }

  /** Closes the socket with `code` right after the reply to the request being handled. */
  closeAfterReply(code: number, reason: string): void {
    this.#closeAfterReply = { code, reason };
  }

  /** The socket closed: reject what waits for a reply, tell the gateway. Idempotent. */
  onClosed(code: number): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const [id, p] of this.#pending) {
      clearTimeout(p.timer);
      this.#commandDone(p.type, 'disconnected', p.sentAt);
      p.reject(notConnected(this.agentId, `disconnected before answering the ${p.type} command`));
      this.#pending.delete(id);
    }
    this.#opts.handlers.closed(this, code);
  }

  async #handle(msg: z.infer<typeof AgentRequest>): Promise<void> {
    if (this.#closed) return;
    if (!this.#greeted && msg.type !== 'hello') {
      this.#replyError(msg.id, new FerryError('CHN_HELLO_REQUIRED', `Send hello before ${msg.type}.`));
      return;
    }
    try {
      let result: unknown;
      if (msg.type === 'hello') {
        result = await this.#opts.handlers.hello(this, msg);
        if (!this.#closeAfterReply) this.#greeted = true;
      } else if (msg.type === 'heartbeat') {
        result = await this.#opts.handlers.heartbeat(this, msg);
      } else {
        await this.#opts.handlers.report(this, msg);
      }
      this.send(result === undefined ? { re: msg.id, ok: true } : { re: msg.id, ok: true, result });
    } catch (err) {
      if (isFerryError(err)) {
        this.#log.warn({ code: err.code, type: msg.type }, 'agent request refused');
        this.#replyError(msg.id, err);
      } else {
        this.#log.error({ err, type: msg.type }, 'agent request failed');
        this.#replyError(
          msg.id,
          new FerryError('SVC_UNAVAILABLE', 'The Service could not process the message now; send it again.'),
        );
      }
    }
    const after = this.#closeAfterReply;
    if (after) this.close(after.code, after.reason);
  }

  #settle(reply: z.infer<typeof Reply>): void {
    const pending = this.#pending.get(reply.re);
    if (!pending) {
      this.#log.debug({ re: reply.re }, 'reply to no pending command (late or unknown)');
      return;
    }
    clearTimeout(pending.timer);
    this.#pending.delete(reply.re);
    this.#commandDone(pending.type, reply.ok ? 'ok' : 'failed', pending.sentAt);
    if (reply.ok) pending.resolve(reply.result);
    else {
      pending.reject(commandFailed(this.agentId, pending.type, reply.error));
    }
  }

  /** A message from the Agent, of a type the protocol knows (an unreadable one counts as `invalid`). */
  #observe(type: string): void {
    this.#opts.observer?.message(type, 'in');
  }

  #commandDone(type: string, outcome: Parameters<ChannelObserver['commandDone']>[1], sentAt: number): void {
    this.#opts.observer?.commandDone(type, outcome, (performance.now() - sentAt) / 1000);
  }

  #replyError(id: string, err: FerryError): void {
    const error: ErrorData = { code: err.code, kind: err.kind, message: err.message };
    if (err.details) error.details = err.details;
    this.send({ re: id, ok: false, error });
  }

  /** Counts a bad message, answers it when it has an ID, and closes the socket at the limit. */
  #bad(code: ErrorCode, id: string | undefined, detail: string): void {
    const now = Date.now();
    this.#badTimes = this.#badTimes.filter((t) => now - t < this.#opts.badWindowMs);
    this.#badTimes.push(now);
    this.#log.warn({ code, detail, count: this.#badTimes.length }, 'bad agent channel message');
    this.#observe('invalid');
    if (id !== undefined) this.#replyError(id, new FerryError(code, `The message is not valid: ${detail}`));
    if (this.#badTimes.length >= this.#opts.badMessageLimit) {
      this.#log.warn(
        { code: 'CHN_TOO_MANY_BAD_MESSAGES', count: this.#badTimes.length },
        'too many bad agent messages: closing',
      );
      this.close(CLOSE.protocolError, 'too many bad messages');
    }
  }
}

/** The first issues of a zod error, short enough for a reply and a log line. */
function summarize(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(message)'}: ${i.message}`)
    .join('; ')
    .slice(0, 1000);
}
