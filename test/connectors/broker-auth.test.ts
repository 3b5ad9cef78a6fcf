/**
 * The broker Connectors' credentials: a NATS server of the test's own (a child nats-server on a free
 * loopback port, with a token, then with a user and password, JetStream on) takes the Connector's
 * token and user/password properties; a wrong one is `CON_AUTH_FAILED`, a server that is not there
 * is `CON_UNREACHABLE`, and no message or detail holds the secret. RabbitMQ: the test broker's user
 * with a wrong password the same.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../src/connectors/host.js';
import { NATS_SKIP, RABBITMQ_SKIP, rabbitProperties } from '../helpers/brokers.js';
import { CONNECTORS_DIR } from './conformance.js';

const NATS_SERVER = '/usr/sbin/nats-server';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** A nats-server with JetStream on a free loopback port, with the given auth arguments; ready once it listens. */
async function natsServer(auth: string[]): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-nats-auth-'));
  const child: ChildProcess = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir, ...auth], {
    stdio: 'ignore',
  });
  const deadline = Date.now() + 15_000;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`nats-server did not start on ${port}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode === null) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await gone;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The error a connection test ends with (undefined when it passed). */
async function testError(
  host: ConnectorHost,
  connectorId: string,
  properties: Record<string, string>,
): Promise<{ code: string; text: string } | undefined> {
  try {
    await host.testConnection({ connectorId, connectionId: `auth-${Math.random()}`, properties });
    return undefined;
  } catch (err) {
    const e = err as { code?: string; message?: string; details?: unknown };
    return { code: String(e.code), text: `${e.message ?? ''} ${JSON.stringify(e.details ?? {})}` };
  }
}

describe('broker Connectors: credentials', () => {
  let host: ConnectorHost;
  beforeAll(async () => {
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
  });
  afterAll(async () => {
    await host?.close();
  });

  describe.skipIf(NATS_SKIP !== undefined || !fs.existsSync(NATS_SERVER))('NATS JetStream', () => {
    it('takes a token; a wrong or missing one is CON_AUTH_FAILED without the token in what it says', async () => {
      const server = await natsServer(['--auth', 'tok-right-5150']);
      try {
        expect(
          await testError(host, 'NATS JetStream', { servers: server.url, token: 'tok-right-5150' }),
        ).toBeUndefined();
        const wrong = await testError(host, 'NATS JetStream', {
          servers: server.url,
          token: 'tok-wrong-8812',
          connectTimeoutSeconds: '5',
        });
        expect(wrong?.code).toBe('CON_AUTH_FAILED');
        expect(wrong?.text).not.toContain('tok-wrong-8812');
        expect(wrong?.text).not.toContain('tok-right-5150');
        const none = await testError(host, 'NATS JetStream', { servers: server.url, connectTimeoutSeconds: '5' });
        expect(none?.code).toBe('CON_AUTH_FAILED');
      } finally {
        await server.stop();
      }
    });

    it('takes a user and password; a wrong password is CON_AUTH_FAILED, a stopped server CON_UNREACHABLE', async () => {
      const server = await natsServer(['--user', 'ferry', '--pass', 'pw-right-7734']);
      try {
        expect(
          await testError(host, 'NATS JetStream', { servers: server.url, user: 'ferry', password: 'pw-right-7734' }),
        ).toBeUndefined();
        const wrong = await testError(host, 'NATS JetStream', {
          servers: server.url,
          user: 'ferry',
          password: 'pw-wrong-1209',
          connectTimeoutSeconds: '5',
        });
        expect(wrong?.code).toBe('CON_AUTH_FAILED');
        expect(wrong?.text).not.toContain('pw-wrong-1209');
      } finally {
        await server.stop();
      }
      const gone = await testError(host, 'NATS JetStream', {
        servers: server.url,
        user: 'ferry',
        password: 'pw-right-7734',
        connectTimeoutSeconds: '3',
      });
      expect(gone?.code).toBe('CON_UNREACHABLE');
      expect(gone?.text).not.toContain('pw-right-7734');
    });

    it('refuses credentials in the server URL, naming the properties they belong in', async () => {
      const e = await testError(host, 'NATS JetStream', { servers: 'nats://ferry:pw-in-url-3301@127.0.0.1:4222' });
      expect(e?.code).toBe('CON_PROPERTIES_INVALID');
      expect(e?.text).toContain('user, password or token');
      expect(e?.text).not.toContain('pw-in-url-3301');
    });
  });

  describe.skipIf(RABBITMQ_SKIP !== undefined)('RabbitMQ', () => {
    it('a wrong password is CON_AUTH_FAILED without the password in what it says', async () => {
      const props = rabbitProperties();
      expect(await testError(host, 'RabbitMQ', props)).toBeUndefined();
      const wrong = await testError(host, 'RabbitMQ', { ...props, password: 'rb-wrong-6620' });
      expect(wrong?.code).toBe('CON_AUTH_FAILED');
      expect(wrong?.text).not.toContain('rb-wrong-6620');
    });
  });
});
