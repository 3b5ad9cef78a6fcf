import type http from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { WebSocketServer, type WebSocket } from 'ws';
import { FerryError } from '../../src/errors/ferry-error.js';
import {
  CHANNEL_PATH,
  CLOSE,
  MAX_MESSAGE_BYTES,
  PROTOCOL_VERSION,
  type Heartbeat,
  type Hello,
  type HelloResult,
  type Report,
} from '../../src/protocol/channel.js';
import { RUN_COMMITTED_FEATURE, SHARED_ERRORS_FEATURE } from '../../src/protocol/solutions.js';
import { authenticateAgent } from '../auth/agent-auth.js';
import type { ServiceConfig } from '../config.js';
import { PROBLEM_CONTENT_TYPE, problemOf } from '../util/problem.js';
import { getAgentById, recordReport, updateAgent } from '../store/repos/agents.repo.js';
import type { AgentRow } from '../store/schema.js';
import type { Store } from '../store/store.js';
import { nowIso } from '../util/values.js';
import { AgentSession, type ChannelObserver, type SessionHandlers } from './agent-session.js';
import { heartbeatPatch, helloPatch, reportPatch } from './agent-state.js';
import type { SessionRegistry } from './command-bus.js';
import type { ReportHandlers } from './report-handlers.js';

/** The protocol features this Service states in its hello reply (HelloResult.features). */
const SERVICE_FEATURES = [SHARED_ERRORS_FEATURE, RUN_COMMITTED_FEATURE];
/** How long after its upgrade a hello is checked against the record the upgrade read, not a new read. */
const FRESH_UPGRADE_MS = 2_000;

export interface GatewayOptions {
  store: Store;
  config: ServiceConfig;
  log: FastifyBaseLogger;
  registry: SessionRegistry;
  /** What each kind of durable report does beyond the Agent's record (filled in by the composition root). */
  reports: ReportHandlers;
  /** Called once an Agent's hello was accepted, with its record as the hello left it (the Connector installs reconcile it). */
  onConnected?: (agentId: string, agent: AgentRow) => void;
  /**
   * Where the channels this process holds are recorded for the other replicas (gateway/replica-bus.ts):
   * told of each channel once it is attached (the hello is answered after) and once it closed.
   */
  leases?: { held(session: AgentSession): Promise<void>; released(session: AgentSession): Promise<void> };
  /** What the metrics count of the channels (service/metrics): messages, command round trips, each heartbeat. */
  metrics?: ChannelObserver & { heartbeat(agentId: string, heartbeat: Heartbeat): void };
  /** Application-level ping interval (default a third of FERRY_AGENT_CHANNEL_TIMEOUT: 20 s). */
  pingIntervalMs?: number;
  /** A socket without any traffic this long is terminated as half-open (default FERRY_AGENT_CHANNEL_TIMEOUT: 60 s). */
  idleTimeoutMs?: number;
}

/**
 * The Agent channel endpoint: authenticates the HTTP upgrade on {@link CHANNEL_PATH} with the
 * Agent's bearer secret, then hands the socket to an {@link AgentSession} and answers its
 * hello, heartbeats and durable reports against the store.
 *
 *   HTTP upgrade ─▶ path? ─▶ Bearer <agentId>.<secret> ─▶ ws handshake ─▶ AgentSession
 *        │ no           │ wrong: 401 problem, socket destroyed     │
 *        └ 404          └ (the Agent stops: do not retry)          ├ hello: fingerprint, replace old socket
 *                                                                  ├ heartbeat: lastContactTime, status
 *                                                                  └ report: dedupe by ID, patch, its kind's handlers, ack
 *
 * The gateway knows no domain. A report is recorded (deduplicated by its ID), patches the Agent's
 * record, and runs the handlers registered for its kind in {@link GatewayOptions.reports}, all in
 * one transaction; the composition root registers them (the Marketplace's Connector installs, the
 * Agent log archives, …). A connect is told to the one `onConnected` callback, after the hello is
 * answered and outside any transaction, since what follows it (commands to the Agent) must not
 * hold the hello up.
 */
export class AgentGateway {
  readonly #opts: GatewayOptions;
  readonly #log: FastifyBaseLogger;
  readonly #wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
    clientTracking: false,
  });
  readonly #sockets = new Map<WebSocket, AgentSession>();
  /** The record each channel's upgrade was authenticated with, until its hello. */
  readonly #upgraded = new WeakMap<AgentSession, { agent: AgentRow; at: number }>();
  readonly #pingIntervalMs: number;
  readonly #idleTimeoutMs: number;
  #server: http.Server | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closing = false;
  readonly #onUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => this.#upgrade(req, socket, head);

  constructor(opts: GatewayOptions) {
    this.#opts = opts;
    this.#log = opts.log.child({ component: 'gateway' });
    // A live Agent answers every ping, so a channel silent through three ping intervals has lost its peer.
    this.#idleTimeoutMs = opts.idleTimeoutMs ?? opts.config.agentChannelTimeout * 1000;
    this.#pingIntervalMs = opts.pingIntervalMs ?? this.#idleTimeoutMs / 3;
  }

  /** Starts answering upgrades on the server and the keepalive. */
  attach(server: http.Server): void {
    this.#server = server;
    server.on('upgrade', this.#onUpgrade);
    const tick = Math.max(10, Math.min(5_000, Math.floor(this.#idleTimeoutMs / 12)));
    this.#timer = setInterval(() => this.#keepalive(), tick);
    this.#timer.unref();
  }

  /**
   * Stops accepting, closes every socket with 1012 (the Agents reconnect at once, through the load
   * balancer to a replica that stays, or to this Service when it is back), and terminates those
   * that do not finish the close handshake quickly.
   */
  async close(): Promise<void> {
    this.#closing = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#server?.off('upgrade', this.#onUpgrade);
    const sockets = [...this.#sockets.keys()];
    const closed = sockets.map(
      (ws) =>
        new Promise<void>((resolve) => (ws.readyState === ws.CLOSED ? resolve() : ws.once('close', () => resolve()))),
    );
    for (const session of this.#sockets.values()) session.close(CLOSE.serviceRestart, 'Service restarting');
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(closed), new Promise<void>((resolve) => (timeout = setTimeout(resolve, 2_000)))]);
    clearTimeout(timeout);
    for (const ws of sockets) if (ws.readyState !== ws.CLOSED) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }

  #upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', (err) => this.#log.debug({ err }, 'upgrade socket error'));
    let pathname: string;
    try {
      pathname = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '').toLowerCase();
    } catch {
      pathname = '';
    }
    if (this.#closing || pathname !== CHANNEL_PATH.toLowerCase()) {
      refuse(
        socket,
        this.#closing ? 503 : 404,
        this.#closing
          ? new FerryError('SVC_UNAVAILABLE', 'The Service is shutting down.')
          : new FerryError('API_ROUTE_NOT_FOUND', `There is no WebSocket endpoint at ${pathname || '/'}.`),
      );
      return;
    }
    authenticateAgent(this.#opts.store.db, req.headers.authorization).then(
      (agent) => {
        if (!agent) {
          this.#log.warn(
            { ip: req.socket.remoteAddress, code: 'AGT_UNAUTHORIZED' },
            'agent channel refused: bad credentials',
          );
          refuse(
            socket,
            401,
            new FerryError(
              'AGT_UNAUTHORIZED',
              'Send Authorization: Bearer <agentId>.<secret> with the credentials the Agent received at registration.',
            ),
          );
          return;
        }
        if (this.#closing || socket.destroyed) return void socket.destroy();
        this.#wss.handleUpgrade(req, socket, head, (ws) => this.#connected(ws, agent, req));
      },
      (err: unknown) => {
        this.#log.error({ err }, 'agent channel authentication failed');
        refuse(socket, 503, new FerryError('SVC_UNAVAILABLE', 'The Service cannot check credentials now; retry.'));
      },
    );
  }

  #connected(ws: WebSocket, agent: AgentRow, req: http.IncomingMessage): void {
    const log = this.#log.child({ agentId: agent.id, orgId: agent.orgId });
    const session = new AgentSession(ws, {
      agentId: agent.id,
      orgId: agent.orgId,
      origin: this.#origin(req),
      log,
      handlers: this.#handlers,
      observer: this.#opts.metrics,
    });
    this.#sockets.set(ws, session);
    this.#upgraded.set(session, { agent, at: Date.now() });
    ws.on('message', (data, isBinary) => {
      // Whatever an Agent sends, it must not take the Service down.
      try {
        session.receive(data, isBinary);
      } catch (err) {
        log.error({ err }, 'agent message handling failed');
      }
    });
    ws.on('error', (err: Error & { code?: string }) => {
      const tooLarge = err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH';
      log.warn(
        { code: tooLarge ? 'CHN_TOO_LARGE' : 'CHN_INVALID_MESSAGE', err: { message: err.message, code: err.code } },
        tooLarge ? 'agent message too large: socket closed (1009)' : 'agent socket error',
      );
    });
    ws.on('close', (code) => {
      this.#sockets.delete(ws);
      session.onClosed(code);
    });
    log.debug('agent channel open');
  }

  /** The origin the Agent reached us at: FERRY_PUBLIC_URL, else scheme and Host of the upgrade. */
  #origin(req: http.IncomingMessage): string {
    if (this.#opts.config.publicUrl) return new URL(this.#opts.config.publicUrl).origin;
    const host = req.headers.host ?? '';
    const encrypted = 'encrypted' in req.socket && req.socket.encrypted === true;
    const forwarded = this.#opts.config.trustProxy
      ? String(req.headers['x-forwarded-proto'] ?? '')
          .split(',')[0]
          ?.trim()
      : undefined;
    const scheme = forwarded === 'https' || forwarded === 'http' ? forwarded : encrypted ? 'https' : 'http';
    if (/^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:\d{1,5})?$/.test(host))
      return `${scheme}://${host}`;
    const addr = req.socket.localAddress ?? '127.0.0.1';
    return `${scheme}://${addr.includes(':') ? `[${addr}]` : addr}:${req.socket.localPort ?? 80}`;
  }

  #keepalive(): void {
    const now = Date.now();
    for (const session of this.#sockets.values()) {
      if (!session.greeted && now - session.connectedAt >= this.#idleTimeoutMs) {
        session.close(CLOSE.protocolError, 'no hello');
        continue;
      }
      session.keepalive(now, this.#pingIntervalMs, this.#idleTimeoutMs);
    }
  }

  readonly #handlers: SessionHandlers = {
    hello: async (session: AgentSession, msg: Hello): Promise<HelloResult> => {
      const { db } = this.#opts.store;
      if (msg.protocolVersion !== PROTOCOL_VERSION) {
        session.closeAfterReply(CLOSE.protocolError, 'unsupported protocol version');
        throw new FerryError(
          'CHN_PROTOCOL_VERSION',
          `This Service speaks channel protocol ${PROTOCOL_VERSION}, the Agent ${msg.protocolVersion}; install the Agent version that matches the Service.`,
        );
      }
      // The record the upgrade was authenticated with, when the hello follows it at once (as it does).
      const upgraded = this.#upgraded.get(session);
      this.#upgraded.delete(session);
      const agent =
        upgraded && Date.now() - upgraded.at < FRESH_UPGRADE_MS
          ? upgraded.agent
          : await getAgentById(db, session.agentId);
      if (!agent) {
        session.closeAfterReply(CLOSE.agentDeleted, 'agent deleted');
        throw new FerryError('AGT_DELETED', `Agent ${session.agentId} was deleted in the Service; uninstall it.`);
      }
      if (agent.fingerprint !== null && agent.fingerprint !== msg.fingerprint) {
        this.#log.warn(
          {
            agentId: agent.id,
            orgId: agent.orgId,
            code: 'AGT_CLONED_INSTALL',
            machineName: msg.machineName,
            serviceName: msg.serviceName,
          },
          'cloned agent installation refused',
        );
        session.closeAfterReply(CLOSE.clonedInstall, 'cloned installation');
        throw new FerryError(
          'AGT_CLONED_INSTALL',
          `This installation is a copy of Agent ${agent.id} (its fingerprint differs from the registered one); install a new Agent with a new installation key.`,
        );
      }
      const now = nowIso();
      const patch = helloPatch(agent, msg, now);
      await updateAgent(db, agent.id, patch);
      const previous = this.#opts.registry.attach(session);
      previous?.close(CLOSE.replaced, 'replaced by a newer connection');
      await this.#opts.leases?.held(session);
      this.#log.info(
        {
          agentId: agent.id,
          orgId: agent.orgId,
          version: msg.version,
          status: msg.status,
          replaced: previous !== undefined,
        },
        'agent connected',
      );
      // After the hello is answered, so that the Agent is ready for commands.
      const onConnected = this.#opts.onConnected;
      if (onConnected) setImmediate(() => onConnected(agent.id, { ...agent, ...patch }));
      return {
        serverTime: now,
        heartbeatMs: this.#opts.config.agentHeartbeatMs,
        agentName: agent.name,
        orgId: agent.orgId,
        features: SERVICE_FEATURES,
      };
    },

    heartbeat: async (session: AgentSession, msg: Heartbeat) => {
      const agent = await getAgentById(this.#opts.store.db, session.agentId);
      const now = nowIso();
      if (!agent) {
        // Deleted while connected (with its Organization, say): tell it, so it stops for good.
        session.closeAfterReply(CLOSE.agentDeleted, 'agent deleted');
        throw new FerryError('AGT_DELETED', `Agent ${session.agentId} was deleted in the Service; uninstall it.`);
      }
      await updateAgent(this.#opts.store.db, agent.id, heartbeatPatch(agent, msg, now));
      this.#opts.metrics?.heartbeat(agent.id, msg);
      return { serverTime: now };
    },

    report: async (session: AgentSession, msg: Report) => {
      const now = nowIso();
      const stored = await this.#opts.store.db.transaction().execute(async (tx) => {
        const fresh = await recordReport(tx, {
          agentId: session.agentId,
          messageId: msg.id,
          kind: msg.report.kind,
          body: JSON.stringify(msg),
          receivedAt: now,
        });
        if (!fresh) return false;
        const agent = await getAgentById(tx, session.agentId);
        if (!agent) return true;
        const patch = reportPatch(agent, msg.report, now);
        if (patch) await updateAgent(tx, agent.id, patch);
        await this.#opts.reports.apply(tx, agent, msg.report, now);
        return true;
      });
      this.#log.debug(
        { agentId: session.agentId, messageId: msg.id, kind: msg.report.kind, duplicate: !stored },
        stored ? 'agent report stored' : 'duplicate agent report acknowledged again',
      );
    },

    closed: (session: AgentSession, code: number) => {
      this.#opts.registry.detach(session);
      this.#opts.leases
        ?.released(session)
        .catch((err: unknown) => this.#log.warn({ err, agentId: session.agentId }, 'channel lease not given up'));
      this.#log.info({ agentId: session.agentId, code }, 'agent disconnected');
    },
  };
}

/** Answers a refused upgrade with a problem document and closes the socket. */
function refuse(socket: Duplex, status: number, err: FerryError): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(problemOf(err, CHANNEL_PATH));
  const reason = status === 401 ? 'Unauthorized' : status === 404 ? 'Not Found' : 'Service Unavailable';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `${status === 401 ? 'WWW-Authenticate: Bearer realm="Ferry Agent"\r\n' : ''}Connection: close\r\n\r\n${body}`,
  );
}
