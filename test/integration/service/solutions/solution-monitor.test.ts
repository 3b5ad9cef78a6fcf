import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReportBody } from '../../../../src/protocol/channel.js';
import type { MonitorSolutionResult } from '../../../../src/protocol/solutions.js';
import { connectPlayedAgent, OpenChannels, type TestAgent, type TestChannel } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface Monitor {
  solutionId: string;
  running: boolean;
  runId: string | null;
  startedAt: string | null;
  recordsProcessed: number;
  recordsFailed: number;
}

describe.each(STORE_TARGETS)('POST S/startmonitor on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let S: string;
  const channels = new OpenChannels();
  /** What the played Agent answers to monitorSolution: what it runs now. */
  let onAgent: MonitorSolutionResult = { running: false, processed: 0, failed: 0 };

  const send = async (report: ReportBody): Promise<void> => {
    expect(await ch.report(report)).toMatchObject({ ok: true });
  };
  const monitor = async (id: string): Promise<Monitor> => {
    const res = await svc.request<Monitor>('POST', `${S}/${id}/startmonitor`);
    expect(res.status, res.text).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    ({ agent, ch } = await connectPlayedAgent(svc, channels, {
      name: 'Monitored agent',
      reply: (cmd) => (cmd['type'] === 'monitorSolution' ? { re: cmd['id'], ok: true, result: onAgent } : undefined),
    }));
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it('answers zeros before the first run, the counts so far during a run, and the final counts of the last run after it', async () => {
    const res = await svc.request<{ id: string }>('POST', S, {
      body: { name: 'Watched', solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(res.status, res.text).toBe(201);
    const id = res.body.id;
    expect(await monitor(id)).toEqual({
      solutionId: id,
      running: false,
      runId: null,
      startedAt: null,
      recordsProcessed: 0,
      recordsFailed: 0,
    });

    for (const [processed, failed] of [
      [1_000, 2],
      [20_000, 3],
    ] as const) {
      const runId = randomUUID();
      const startedAt = new Date(Date.now() - 60_000).toISOString();
      await send({ kind: 'runStarted', runId, solutionId: id, trigger: 'start', at: startedAt });
      onAgent = { running: true, runId, startedAt, processed: 500, failed: 1 };
      expect(await monitor(id)).toEqual({
        solutionId: id,
        running: true,
        runId,
        startedAt,
        recordsProcessed: 500,
        recordsFailed: 1,
      });

      await send({
        kind: 'runFinished',
        runId,
        solutionId: id,
        trigger: 'start',
        startedAt,
        at: new Date().toISOString(),
        result: 'CompletedWithErrors',
        processed,
        failed,
        stopped: false,
        sourceDataLocal: true,
        statistics: [],
      });
      onAgent = { running: false, processed: 0, failed: 0 };
      expect(await monitor(id)).toEqual({
        solutionId: id,
        running: false,
        runId,
        startedAt,
        recordsProcessed: processed,
        recordsFailed: failed,
      });
    }
  });
});

describe.each(STORE_TARGETS)('watching a run within the rate limit on $name', (target) => {
  let svc: TestService;
  let ch: TestChannel;
  let S: string;
  const channels = new OpenChannels();

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off', rateLimitPerMinute: 5 });
    let agent: TestAgent;
    ({ agent, ch } = await connectPlayedAgent(svc, channels, {
      name: 'Watched agent',
      reply: (cmd) =>
        cmd['type'] === 'monitorSolution'
          ? { re: cmd['id'], ok: true, result: { running: false, processed: 0, failed: 0 } }
          : undefined,
    }));
    S = `/v1/orgs/${svc.orgId}/solutions`;
    const res = await svc.request<{ id: string }>('POST', S, {
      body: { name: 'Watched', solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(res.status, res.text).toBe(201);
    S = `${S}/${res.body.id}`;
    const runId = randomUUID();
    const at = new Date().toISOString();
    expect(await ch.report({ kind: 'runStarted', runId, solutionId: res.body.id, trigger: 'start', at })).toMatchObject(
      { ok: true },
    );
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it('counts startmonitor, History reads, the Solution and its prepare job in the polling bucket, not the per-minute one', async () => {
    const history = await svc.request<Array<{ id: number }>>('GET', `${S}/history`);
    const id = history.body[0]?.id;
    expect(id).toBeDefined();
    const watch: Array<[string, string, number]> = [
      ['POST', `${S}/startmonitor`, 200],
      ['GET', S, 200],
      ['GET', `${S}/history`, 200],
      ['GET', `${S}/history/${id}`, 200],
      ['GET', `${S}/history/${id}/statistics`, 200],
      ['GET', `${S}/history/${id}/errors`, 200],
      ['GET', `${S}/prepare/${randomUUID()}`, 404],
    ];
    // A person watching a run for a minute: far past the per-minute limit of 5.
    for (let round = 0; round < 5; round++) {
      for (const [method, path, status] of watch)
        expect((await svc.request(method, path)).status, `${method} ${path}`).toBe(status);
    }
    // The minute's calls are still there for the rest.
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}`)).status).toBe(200);
  });
});
