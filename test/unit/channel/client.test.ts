import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { ChannelClient, channelUrl } from '../../../src/channel/client.js';
import { Outbox } from '../../../src/channel/outbox.js';
import type { FerryError } from '../../../src/errors/ferry-error.js';
import { CLOSE, FromAgent } from '../../../src/protocol/channel.js';
import type { ServiceRequest } from '../../../src/protocol/commands.js';
import {
  errorsOf,
  RUN_COMMITTED_FEATURE,
  SHARED_ERRORS_FEATURE,
  shareErrorFields,
  type RunErrorsReport,
} from '../../../src/protocol/solutions.js';

/** A stand-in Service: answers hello and reports, and lets a test script the socket. */
class FakeService {
  readonly server = http.createServer();
  readonly wss = new WebSocketServer({ noServer: true });
  readonly received: FromAgent[] = [];
  readonly authorizations: string[] = [];
  sockets: WebSocket[] = [];
  /** When false, the Service stays silent (a half-open connection as the Agent sees it). */
  answer = true;
  dropFirstReportAck = false;
  refuseUpgrade: number | undefined;
  onHello: ((ws: WebSocket, id: string) => void) | undefined;
  /** The features stated in the hello reply (none: a Service from before them). */
  features: string[] | undefined;
  /** Every message's text as it arrived. */
  readonly texts: string[] = [];
  url = '';

  async start(): Promise<void> {
    this.server.on('upgrade', (req, socket, head) => {
      this.authorizations.push(req.headers.authorization ?? '');
      if (this.refuseUpgrade) {
        socket.end(`HTTP/1.1 ${this.refuseUpgrade} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => this.connected(ws));
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    const addr = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${addr.port}`;
  }

  private connected(ws: WebSocket): void {
    this.sockets.push(ws);
    ws.on('message', (data) => {
      this.texts.push((data as Buffer).toString('utf8'));
      const msg = FromAgent.parse(JSON.parse((data as Buffer).toString('utf8')));
      this.received.push(msg);
      if (!this.answer) return;
      if ('re' in msg) return;
      if (msg.type === 'ping') return void ws.send(JSON.stringify({ type: 'pong', at: new Date().toISOString() }));
      if (msg.type === 'pong') return;
      if (msg.type === 'hello') {
        if (this.onHello) return this.onHello(ws, msg.id);
        return void ws.send(
          JSON.stringify({
            re: msg.id,
            ok: true,
            result: {
              serverTime: new Date().toISOString(),
              heartbeatMs: 40,
              agentName: 'a',
              orgId: 1,
              ...(this.features ? { features: this.features } : {}),
            },
          }),
        );
      }
      if (msg.type === 'report' && this.dropFirstReportAck) {
        this.dropFirstReportAck = false;
        return void ws.terminate();
      }
      ws.send(JSON.stringify({ re: msg.id, ok: true }));
    });
  }

  reports(): string[] {
    return this.received.flatMap((m) => ('type' in m && m.type === 'report' ? [m.id] : []));
  }

  count(type: string): number {
    return this.received.filter((m) => 'type' in m && m.type === type).length;
  }

  async close(): Promise<void> {
    for (const ws of this.sockets) ws.terminate();
    this.wss.close();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('the channel client', () => {
  let dir: string;
  let service: FakeService;
  let outbox: Outbox;
  let client: ChannelClient | undefined;
  let commands: ServiceRequest[];
  let fatal: FerryError[];

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-client-'));
    service = new FakeService();
    await service.start();
    outbox = new Outbox(path.join(dir, 'outbox.db'));
    commands = [];
    fatal = [];
  });

  afterEach(async () => {
    await client?.stop();
    client = undefined;
    outbox.close();
    await service.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const connect = (over: { pingMs?: number; backoffBaseMs?: number } = {}) => {
    client = new ChannelClient({
      serviceUrl: service.url,
      agentId: 'agent-1',
      agentSecret: 's3cret',
      log: pino({ level: 'silent' }),
      outbox,
      hello: () => ({
        protocolVersion: 1,
        version: '0.1.0',
        machineName: 'm',
        serviceName: 'ferry-agent-1',
        fingerprint: 'f'.repeat(64),
        pid: 1,
        startedAt: new Date().toISOString(),
        status: 'Running',
        installedConnectors: [],
      }),
      heartbeat: () => ({ status: 'Running', rssBytes: 1, runningWork: 0 }),
      onCommand: async (c) => {
        commands.push(c);
        return { accepted: true };
      },
      onFatal: (e) => fatal.push(e),
      pingMs: over.pingMs ?? 1000,
      requestTimeoutMs: 500,
      backoffBaseMs: over.backoffBaseMs ?? 20,
      backoffMaxMs: Math.max(100, over.backoffBaseMs ?? 0),
    });
    client.start();
    return client;
  };

  it('maps the Service URL to the channel URL', () => {
    expect(channelUrl('http://h:1')).toBe('ws://h:1/v1/agent/channel');
    expect(channelUrl('https://h/base/')).toBe('wss://h/base/v1/agent/channel');
  });

  it('authenticates, says hello, heartbeats at the interval the Service states, and empties the outbox in order', async () => {
    const first = outbox.enqueue({ kind: 'started', at: 'now', version: '1' });
    const c = connect();
    await until(() => c.connected);
    expect(service.authorizations[0]).toBe('Bearer agent-1.s3cret');
    expect(c.heartbeatInterval).toBe(40);
    const second = outbox.enqueue({ kind: 'status', status: 'Running', at: 'now' });
    await until(() => outbox.size === 0);
    expect(service.reports()).toEqual([first.id, second.id]);
    await until(() => service.count('heartbeat') >= 3);
  });

  it('sends a report as the message the outbox stored, and sets aside one too large for a message instead of sending it again and again', async () => {
    const runId = randomUUID();
    const errors = Array.from({ length: 200 }, () => ({
      id: randomUUID(),
      mapName: 'm',
      sourceEntity: 'e',
      code: 'RUN_WRITE_FAILED',
      errorMessage: 'x'.repeat(10_000),
      errorDetail: '{}',
      canReprocess: false,
    }));
    outbox.enqueue({ kind: 'runErrors', runId, solutionId: randomUUID(), errors });
    const next = outbox.enqueue({ kind: 'status', status: 'Running', at: 'now' });
    connect();
    await until(() => outbox.size === 0);
    expect(service.reports()).toEqual([next.id]);
    expect(service.received).toContainEqual(next);
    // Kept for the operator in outbox_dead: the run is still named there.
    expect(outbox.runsReported([runId])).toEqual(new Set([runId]));
  });

  it('sends record errors with shared fields to a Service that takes them, and whole to one that does not', async () => {
    const runId = randomUUID();
    const solutionId = randomUUID();
    const errors = Array.from({ length: 3 }, (_, i) => ({
      id: randomUUID(),
      mapName: 'm',
      sourceEntity: 'e',
      code: 'CON_WRITE_REFUSED',
      errorMessage: 'refused',
      errorDetail: '{}',
      canReprocess: true,
      failedRecordId: `f${i}`,
    }));
    const stored = outbox.enqueue({ kind: 'runErrors', runId, solutionId, ...shareErrorFields(errors) });
    connect();
    await until(() => outbox.size === 0);
    // No features stated: the errors go whole, as protocol version 1 first had them.
    const whole = JSON.parse(service.texts.find((t) => t.includes(stored.id)) ?? '{}') as {
      id: string;
      report: Record<string, unknown>;
    };
    expect(whole).toMatchObject({ id: stored.id, report: { kind: 'runErrors', runId, solutionId, errors } });
    expect(whole.report).not.toHaveProperty('shared');
    await client?.stop();

    service.features = [SHARED_ERRORS_FEATURE];
    service.texts.length = 0;
    const again = outbox.enqueue({ kind: 'runErrors', runId, solutionId, ...shareErrorFields(errors) });
    connect();
    await until(() => outbox.size === 0);
    const shared = JSON.parse(service.texts.find((t) => t.includes(again.id)) ?? '{}') as { report: RunErrorsReport };
    expect(shared.report.shared).toEqual({
      mapName: 'm',
      sourceEntity: 'e',
      code: 'CON_WRITE_REFUSED',
      errorMessage: 'refused',
      errorDetail: '{}',
      canReprocess: true,
    });
    expect(shared.report.errors).toEqual(errors.map((e) => ({ id: e.id, failedRecordId: e.failedRecordId })));
    expect(errorsOf(shared.report)).toEqual(errors);
  });

  it("sends a killed run's corrected counts only to a Service that takes them", async () => {
    const correction = {
      kind: 'runCommitted' as const,
      runId: randomUUID(),
      solutionId: randomUUID(),
      mapId: 7,
      mapName: 'm',
      processed: 4_000,
      failed: 0,
      at: new Date().toISOString(),
    };
    const dropped = outbox.enqueue(correction);
    const after = outbox.enqueue({ kind: 'status', status: 'Running', at: 'now' });
    connect();
    await until(() => outbox.size === 0);
    // No features stated: acknowledged without sending, and what follows is not held back.
    expect(service.reports()).toEqual([after.id]);
    expect(service.reports()).not.toContain(dropped.id);
    await client?.stop();

    service.features = [RUN_COMMITTED_FEATURE];
    const sent = outbox.enqueue(correction);
    connect();
    await until(() => outbox.size === 0);
    expect(service.reports()).toContain(sent.id);
  });

  it('sends a report again after a lost acknowledgement, with the same ID, and reconnects', async () => {
    service.dropFirstReportAck = true;
    const report = outbox.enqueue({ kind: 'status', status: 'Running', at: 'now' });
    connect();
    await until(() => outbox.size === 0);
    expect(service.reports()).toEqual([report.id, report.id]);
    expect(service.count('hello')).toBe(2);
  });

  it('answers malformed and invalid messages without dropping the connection, and runs commands', async () => {
    const c = connect();
    await until(() => c.connected);
    const ws = service.sockets[0] as WebSocket;
    ws.send('this is not json');
    ws.send(JSON.stringify({ id: 'bad-1', type: 'launchMissiles' }));
    ws.send(JSON.stringify({ id: 'cmd-1', type: 'restart', restartNow: false }));
    await until(() => service.received.some((m) => 're' in m && m.re === 'cmd-1'));
    const replies = service.received.filter((m) => 're' in m);
    expect(replies).toContainEqual(
      expect.objectContaining({
        re: 'bad-1',
        ok: false,
        error: expect.objectContaining({ code: 'CHN_INVALID_MESSAGE' }),
      }),
    );
    expect(replies).toContainEqual({ re: 'cmd-1', ok: true, result: { accepted: true } });
    expect(commands).toEqual([{ id: 'cmd-1', type: 'restart', restartNow: false }]);
    expect(c.connected).toBe(true);
    expect(service.count('hello')).toBe(1);
  });

  it('drops a silent (half-open) connection within two ping intervals and reconnects', async () => {
    const c = connect({ pingMs: 100 });
    await until(() => c.connected);
    service.answer = false;
    const started = Date.now();
    await until(() => service.count('hello') >= 2, 3000);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(service.count('ping')).toBeGreaterThan(0);
  });

  it('closes after too many invalid messages with 4400, then reconnects', async () => {
    const c = connect();
    await until(() => c.connected);
    const ws = service.sockets[0] as WebSocket;
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    for (let i = 0; i < 12; i++) ws.send('{');
    expect(await closed).toBe(CLOSE.protocolError);
    await until(() => service.count('hello') >= 2);
  });

  it('reconnects at once, without its back-off, when the Service closes with 1012 (a replica draining)', async () => {
    const c = connect({ backoffBaseMs: 5_000 });
    await until(() => c.connected);
    const began = Date.now();
    (service.sockets[0] as WebSocket).close(CLOSE.serviceRestart, 'Service restarting');
    await until(() => service.count('hello') >= 2, 2_000);
    expect(Date.now() - began).toBeLessThan(1_000);
  });

  it('waits for its back-off after any other close (1001)', async () => {
    const c = connect({ backoffBaseMs: 5_000 });
    await until(() => c.connected);
    (service.sockets[0] as WebSocket).close(1001, 'going away');
    await until(() => !c.connected);
    // The first back-off is at least half the base: no second hello within a second.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(service.count('hello')).toBe(1);
  });

  it('stops for good on close 4409 (a cloned installation)', async () => {
    service.onHello = (ws, id) => {
      ws.send(
        JSON.stringify({ re: id, ok: false, error: { code: 'AGT_CLONED_INSTALL', kind: 'config', message: 'clone' } }),
      );
      ws.close(CLOSE.clonedInstall, 'cloned installation');
    };
    connect();
    await until(() => fatal.length > 0);
    expect(fatal[0]?.code).toBe('AGT_CLONED_INSTALL');
    await new Promise((r) => setTimeout(r, 200));
    expect(service.count('hello')).toBe(1);
  });

  it('stops for good when the upgrade is refused with 401', async () => {
    service.refuseUpgrade = 401;
    connect();
    await until(() => fatal.length > 0);
    expect(fatal[0]?.code).toBe('AGT_UNAUTHORIZED');
    expect(service.authorizations).toHaveLength(1);
  });

  it('retries with back-off while the Service is unreachable', async () => {
    service.refuseUpgrade = 503;
    connect();
    await until(() => service.authorizations.length >= 3);
    service.refuseUpgrade = undefined;
    await until(() => client?.connected === true);
    expect(fatal).toEqual([]);
  });
});
