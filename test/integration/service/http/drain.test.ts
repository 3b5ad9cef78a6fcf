/**
 * A Service that drains (SIGTERM; docs/deploy.md "Rolling restart"): `/readyz` turns 503 at once
 * while every other request is still served for the drain delay, then its Agents are told to
 * reconnect at once (close 1012) and it stops. Real Services on both stores, a real channel.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CLOSE } from '../../../../src/protocol/channel.js';
import { registerTestAgent, TestChannel } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

describe.each(STORE_TARGETS)('a Service that drains on $name', (target) => {
  let svc: TestService | undefined;
  afterEach(async () => {
    await svc?.close();
    svc = undefined;
  });

  it('answers /readyz 503 at once, serves the API during the delay, then moves its Agents with 1012', async () => {
    svc = await startService(target);
    const s = svc;
    expect((await s.request('GET', '/readyz')).body).toEqual({ status: 'ready' });
    const agent = await registerTestAgent(s);
    const ch = await TestChannel.connect(s, agent);
    expect(await ch.hello(agent)).toMatchObject({ ok: true });

    const drained = s.service.drain(1_500);
    const ready = await s.request<{ code: string }>('GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.headers['content-type']).toContain('application/problem+json');
    expect(ready.body.code).toBe('SVC_DRAINING');
    // Liveness and the API are unchanged while the load balancer takes the replica out.
    expect((await s.request('GET', '/healthz')).status).toBe(200);
    expect((await s.request('GET', `/v1/orgs/${s.orgId}/agents/${agent.agentId}`)).status).toBe(200);
    let closedAt = 0;
    const closed = ch.closed.then((c) => ((closedAt = Date.now()), c));
    const began = Date.now();
    await drained;
    expect((await closed).code).toBe(CLOSE.serviceRestart);
    expect(closedAt - began).toBeGreaterThan(1_000);
  });
});
