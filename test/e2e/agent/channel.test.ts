import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { CHANNEL_PATH, MAX_MESSAGE_BYTES } from '../../../src/protocol/channel.js';
import {
  ferry,
  getAgent,
  install,
  killAll,
  serviceUnderTest,
  until,
  untilStatus,
  workerPids,
  type ServiceUnderTest,
} from './harness.js';

describe('Agents on the channel: heartbeats, status moves, kill -9, bad messages', () => {
  let sut: ServiceUnderTest;
  let home: string;
  const agents: Array<{ agentId: string; dir: string }> = [];
  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    home = path.join(sut.dataDir, 'agents');
    agents.push(await install(sut, home), await install(sut, home), await install(sut, home));
  }, 120_000);
  afterEach(() => killAll());
  afterAll(async () => {
    killAll();
    await sut.dispose();
  });

  it(
    'three Agents run, heartbeat, and survive a kill -9 of one worker; a killed Agent turns HeartbeatLate, then HeartbeatFailed',
    { timeout: 180_000 },
    async () => {
      const runs = agents.map((_a, i) => ferry(['agent', 'run', '--home', home, '--instance', String(i + 1)]));
      for (const a of agents) await untilStatus(sut, a.agentId, 'Running');
      const [a1, a2, a3] = agents as [(typeof agents)[0], (typeof agents)[0], (typeof agents)[0]];
      const [r1, r2, r3] = runs as [(typeof runs)[0], (typeof runs)[0], (typeof runs)[0]];

      // Heartbeats move lastContactTime (every 200 ms, as the Service stated in its hello reply).
      const seen = (await getAgent(sut, a1.agentId)).lastContactTime;
      await until('a newer heartbeat', async () =>
        (await getAgent(sut, a1.agentId)).lastContactTime !== seen ? true : undefined,
      );

      // kill -9 of the worker: the supervisor replaces it and the Agent is Running again.
      const [firstWorker] = workerPids(r1);
      const firstStart = (await getAgent(sut, a1.agentId)).lastStartTime;
      process.kill(firstWorker as number, 'SIGKILL');
      await until('a new worker', () => (workerPids(r1).length >= 2 ? true : undefined));
      await until('a new start', async () => {
        const view = await getAgent(sut, a1.agentId);
        return view.status === 'Running' && view.lastStartTime !== firstStart ? true : undefined;
      });

      // kill -9 of a whole Agent (supervisor and worker): no goodbye, so the Service sees only silence.
      process.kill(-r2.pid, 'SIGKILL');
      await untilStatus(sut, a2.agentId, 'HeartbeatLate', 15_000);
      await untilStatus(sut, a2.agentId, 'HeartbeatFailed', 15_000);
      expect((await getAgent(sut, a3.agentId)).status).toBe('Running');

      // Started again, it comes back Running; a graceful stop reports Shutdown.
      const again = ferry(['agent', 'run', '--home', home, '--instance', '2']);
      await untilStatus(sut, a2.agentId, 'Running');
      expect(await again.stop()).toBe(0);
      const stopped = await untilStatus(sut, a2.agentId, 'Shutdown');
      expect(stopped.lastShutdownTime).not.toBeNull();
      expect(await r3.stop()).toBe(0);
      await untilStatus(sut, a3.agentId, 'Shutdown');
      expect(await r1.stop()).toBe(0);
    },
  );

  it(
    'bad messages are answered and logged without crashing the Service or the Agents',
    { timeout: 120_000 },
    async () => {
      const run = ferry(['agent', 'run', '--home', home, '--instance', '1']);
      await untilStatus(sut, agents[0]?.agentId ?? '', 'Running');
      const url = sut.url.replace('http:', 'ws:') + CHANNEL_PATH;

      // Unauthenticated: refused at the upgrade with 401.
      const status = await new Promise<number>((resolve) => {
        const ws = new WebSocket(url);
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('open', () => resolve(101));
        ws.on('error', () => undefined);
      });
      expect(status).toBe(401);

      // Authenticated as the second Agent (not running), then: malformed, invalid, oversized.
      const config = JSON.parse(fs.readFileSync(path.join(agents[1]?.dir ?? '', 'config.json'), 'utf8')) as {
        agentId: string;
        agentSecret: string;
      };
      const ws = new WebSocket(url, { headers: { authorization: `Bearer ${config.agentId}.${config.agentSecret}` } });
      const replies: unknown[] = [];
      ws.on('message', (d) => replies.push(JSON.parse((d as Buffer).toString('utf8'))));
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      });
      ws.send('{not json');
      ws.send(JSON.stringify({ id: 'x-1', type: 'nonsense' }));
      await until('an error reply to the invalid request', () =>
        replies.some((r) => (r as { re?: string }).re === 'x-1') ? true : undefined,
      );
      expect(replies).toContainEqual(
        expect.objectContaining({ re: 'x-1', ok: false, error: expect.objectContaining({ kind: 'config' }) }),
      );
      const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
      ws.send('x'.repeat(MAX_MESSAGE_BYTES + 10));
      expect(await closed).toBe(1009);

      // Both sides are still fine.
      expect((await sut.request('GET', `/v1/orgs/${sut.orgId}/agents`)).status).toBe(200);
      expect((await getAgent(sut, agents[0]?.agentId ?? '')).status).toBe('Running');
      expect(run.child.exitCode).toBeNull();
      expect(await run.stop()).toBe(0);
    },
  );
});
