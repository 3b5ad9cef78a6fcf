import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { startService } from '../../../helpers/service.js';

describe('a closing Service', () => {
  it('answers a request that still reaches it (pipelined on a busy connection) with a problem telling the caller to retry', async () => {
    const svc = await startService({ name: 'sqlite' });
    const { hostname, port } = new URL(svc.url);
    const socket = net.connect(Number(port), hostname);
    try {
      const received: Buffer[] = [];
      socket.on('data', (c: Buffer) => received.push(c));
      const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      // A request whose body has not all arrived keeps the connection busy, so closing waits for it.
      socket.write(
        'POST /v1/agent/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{',
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      const closing = svc.service.app.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
      socket.write('}GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await closing;
      await ended;
      const text = Buffer.concat(received).toString('utf8');
      const answers = text.split(/(?=HTTP\/1\.1 )/);
      const last = answers.at(-1) ?? '';
      expect(last, text).toMatch(/^HTTP\/1\.1 503/);
      expect(last).toMatch(/content-type: application\/problem\+json/i);
      expect(last).toMatch(/retry-after: 5/i);
      expect(last).toMatch(/"code":"SVC_UNAVAILABLE"/);
    } finally {
      socket.destroy();
      await svc.close();
    }
  });
});
