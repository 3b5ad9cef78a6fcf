import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import WebSocket from 'ws';
import { CHANNEL_PATH, PROTOCOL_VERSION, type Hello, type ReportBody } from '../../src/protocol/channel.js';
import type { RegisterResponse } from '../../src/protocol/registration.js';
import type { TestService } from './service.js';

/** A registered Agent identity, as `ferry agent install` would keep it. */
export interface TestAgent extends RegisterResponse {
  fingerprint: string;
  machineName: string;
}

/**
 * Provisions a key in the Organization and registers with it over HTTP, like the installer, as
 * Agent version `version` (default 1.2.3).
 */
export async function registerTestAgent(
  svc: TestService,
  opts: { orgId?: number; machineName?: string; name?: string; version?: string } = {},
): Promise<TestAgent> {
  const orgId = opts.orgId ?? svc.orgId;
  const key = await svc.request<{ agentInstallationKey: string }>(
    'POST',
    `/v1/orgs/${orgId}/agents/provision_onpremise_agent`,
  );
  if (key.status !== 200) throw new Error(`provision failed: ${key.status} ${key.text}`);
  const fingerprint = `fp-${randomUUID()}`;
  const machineName = opts.machineName ?? `host-${randomUUID().slice(0, 8)}`;
  const res = await svc.request<RegisterResponse>('POST', '/v1/agent/register', {
    auth: null,
    body: {
      agentInstallationKey: key.body.agentInstallationKey,
      machineName,
      serviceName: 'ferry-agent-1',
      version: opts.version ?? '1.2.3',
      fingerprint,
      ...(opts.name ? { name: opts.name } : {}),
    },
  });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${res.text}`);
  return { ...res.body, fingerprint, machineName };
}

export interface Incoming {
  [key: string]: unknown;
}

/**
 * A real `ws` client speaking the channel protocol by hand, so tests can send exactly what they
 * want (also bad frames) and see every frame the Service sends.
 */
export class TestChannel {
  readonly received: Incoming[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  #waiters: Array<{ match: (m: Incoming) => boolean; resolve: (m: Incoming) => void }> = [];
  /** Answers commands automatically (after recording them) when set. */
  autoReply: ((cmd: Incoming) => Incoming | undefined) | undefined;

  private constructor(readonly ws: WebSocket) {
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })),
    );
    ws.on('error', () => undefined);
    ws.on('message', (data: Buffer) => {
      let msg: Incoming;
      try {
        msg = JSON.parse(data.toString('utf8')) as Incoming;
      } catch {
        return;
      }
      this.received.push(msg);
      // A live Agent answers the Service's keepalive; a channel that stays silent is dropped.
      if (msg['type'] === 'ping') this.send({ type: 'pong', at: new Date().toISOString() });
      if (this.autoReply && typeof msg['type'] === 'string' && typeof msg['id'] === 'string') {
        const answer = this.autoReply(msg);
        if (answer) this.send(answer);
      }
      for (const w of [...this.#waiters]) {
        if (w.match(msg)) {
          this.#waiters.splice(this.#waiters.indexOf(w), 1);
          w.resolve(msg);
        }
      }
    });
  }

  /** Opens the channel; resolves with the socket open, or rejects with the HTTP status of a refused upgrade. */
  static open(svc: TestService, authorization: string | undefined): Promise<TestChannel> {
    const url = svc.url.replace(/^http/, 'ws') + CHANNEL_PATH;
    const ws = new WebSocket(url, { headers: authorization ? { authorization } : {} });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new TestChannel(ws)));
      ws.once('unexpected-response', (_req, res) => {
        res.resume();
        reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode }));
      });
      ws.once('error', reject);
    });
  }

  static connect(svc: TestService, agent: Pick<TestAgent, 'agentId' | 'agentSecret'>): Promise<TestChannel> {
    return TestChannel.open(svc, `Bearer ${agent.agentId}.${agent.agentSecret}`);
  }

  send(message: unknown): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** The next frame (or one already received) that matches. */
  next(match: (m: Incoming) => boolean, timeoutMs = 10_000): Promise<Incoming> {
    const seen = this.received.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no matching message arrived')), timeoutMs);
      this.#waiters.push({
        match,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  }

  /** Sends a request and waits for its reply. */
  async request(message: Incoming & { type: string }): Promise<Incoming> {
    const id = typeof message['id'] === 'string' ? message['id'] : randomUUID();
    this.send({ ...message, id });
    return this.next((m) => m['re'] === id);
  }

  hello(agent: Pick<TestAgent, 'fingerprint' | 'machineName'>, extra: Partial<Hello> = {}): Promise<Incoming> {
    return this.request({ type: 'hello', ...helloOf(agent), ...extra });
  }

  heartbeat(status = 'Running'): Promise<Incoming> {
    return this.request({ type: 'heartbeat', at: new Date().toISOString(), status, rssBytes: 1000, runningWork: 0 });
  }

  report(report: ReportBody, id: string = randomUUID()): Promise<Incoming> {
    return this.request({ id, type: 'report', at: new Date().toISOString(), report });
  }

  close(): Promise<{ code: number; reason: string }> {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING)
      this.ws.close(1000, 'test done');
    return this.closed;
  }
}

/** What a registered test Agent says in its hello: a Running Agent with no Connector installed. */
export function helloOf(agent: Pick<TestAgent, 'fingerprint' | 'machineName'>): Omit<Hello, 'id' | 'type'> {
  return {
    protocolVersion: PROTOCOL_VERSION,
    version: '1.2.3',
    machineName: agent.machineName,
    serviceName: 'ferry-agent-1',
    fingerprint: agent.fingerprint,
    pid: process.pid,
    startedAt: new Date().toISOString(),
    status: 'Running',
    installedConnectors: [],
  };
}

/** The channels a suite opens on one Service, closed together when it ends (as its `afterAll`). */
export class OpenChannels {
  readonly #open: TestChannel[] = [];

  /** `TestChannel.connect`, keeping the channel to close at the end. */
  async connect(svc: TestService, agent: Pick<TestAgent, 'agentId' | 'agentSecret'>): Promise<TestChannel> {
    const ch = await TestChannel.connect(svc, agent);
    this.#open.push(ch);
    return ch;
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.#open.map((c) => c.close()));
  }
}

/**
 * Registers an Agent named `name` and connects it through `channels` as one the test plays: it
 * answers every command as done, holding every Solution it is assigned, with `results` (command
 * type → result) for the commands a suite reads the answer of, unless `reply` answers first;
 * `hello` adds to its hello (the Connectors it has installed, say).
 */
export async function connectPlayedAgent(
  svc: TestService,
  channels: OpenChannels,
  opts: {
    name: string;
    results?: Record<string, unknown>;
    reply?: (cmd: Incoming) => Incoming | undefined;
    hello?: Partial<Hello>;
  },
): Promise<{ agent: TestAgent; ch: TestChannel }> {
  const agent = await registerTestAgent(svc, { name: opts.name });
  const ch = await channels.connect(svc, agent);
  const results: Record<string, unknown> = { assignSolutions: { need: [] }, ...opts.results };
  ch.autoReply = (cmd) => opts.reply?.(cmd) ?? { re: cmd['id'], ok: true, result: results[String(cmd['type'])] ?? {} };
  expect(await ch.hello(agent, opts.hello)).toMatchObject({ ok: true });
  return { agent, ch };
}

/** Polls `check` until it returns a value that is not undefined, or fails at the deadline. */
export async function until<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
