import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { preinstalledConnectors } from '../../../../service/marketplace/catalogue.js';
import { openStore } from '../../../../service/store/store.js';
import { getAgentById } from '../../../../service/store/repos/agents.repo.js';
import { until } from '../../../helpers/agent-client.js';
import { serviceData, type ServiceData } from '../../../helpers/service-on-dir.js';
import type { TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

/** A stand-in `ferry` CLI (install + run over the real channel): the Agent CLI is another issue's. */
const FAKE_FERRY = fileURLToPath(new URL('../../../fixtures/cloud-agent/fake-ferry.ts', import.meta.url));

interface AgentModel {
  id: string;
  name: string;
  isCloudAgent: boolean;
  status: string;
  version: string | null;
  serviceName: string;
  lastStartTime: string | null;
}
interface Problem {
  code: string;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.each(STORE_TARGETS)('the Cloud Agent on $name', (target) => {
  let data: ServiceData;
  const pids = new Set<number>();
  afterAll(async () => {
    // The Service stops its children; anything left (a failed test) is stopped here, by PID.
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await data?.dispose();
  });

  const pidFile = (agentId: string) => path.join(data.dataDir, 'cloud-agents', agentId, 'ferry-agent-1', 'agent.pid');
  const currentPid = (agentId: string): number | undefined => {
    try {
      const pid = Number(fs.readFileSync(pidFile(agentId), 'utf8'));
      if (Number.isInteger(pid) && pid > 0) pids.add(pid);
      return Number.isInteger(pid) && alive(pid) ? pid : undefined;
    } catch {
      return undefined;
    }
  };
  const statusOf = async (svc: TestService, id: string) =>
    (await svc.request<AgentModel>('GET', `/v1/orgs/${svc.orgId}/agents/${id}`)).body;
  /** Waits for a process other than `before` whose hello the Service recorded (a newer lastStartTime). */
  const runningWith = (svc: TestService, id: string, before?: { pid: number; lastStartTime: string | null }) =>
    until(
      async () => {
        const pid = currentPid(id);
        if (pid === undefined || pid === before?.pid) return undefined;
        const model = await statusOf(svc, id);
        if (
          model.status !== 'Running' ||
          model.lastStartTime === null ||
          (before?.lastStartTime && model.lastStartTime <= before.lastStartTime)
        )
          return undefined;
        return { pid, lastStartTime: model.lastStartTime };
      },
      'the Cloud Agent to run',
      40_000,
    );

  it('provisions one Cloud Agent per Organization, runs it as a supervised child, restarts it, stops it with ShutdownCloud', async () => {
    data = await serviceData(target, { cloudAgentEntry: FAKE_FERRY });
    const svc = await data.start();
    let id: string;
    try {
      const res = await svc.request<AgentModel>('POST', `/v1/orgs/${svc.orgId}/agents/provision_cloud_agent`);
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ name: 'Cloud Agent', isCloudAgent: true, status: 'Unknown' });
      id = res.body.id;
      expect(res.headers['location']).toBe(`/v1/orgs/${svc.orgId}/agents/${id}`);
      const again = await svc.request<Problem>('POST', `/v1/orgs/${svc.orgId}/agents/provision_cloud_agent`);
      expect(again.status).toBe(409);
      expect(again.body.code).toBe('AGT_CLOUD_AGENT_EXISTS');

      // It installs itself with a key bound to its record, then connects.
      const first = await runningWith(svc, id);
      expect(await statusOf(svc, id)).toMatchObject({
        name: 'Cloud Agent',
        version: '9.9.9-fake',
        serviceName: 'ferry-agent-1',
      });
      const all = await svc.request<AgentModel[]>('GET', `/v1/orgs/${svc.orgId}/agents`);
      expect(all.body.filter((a) => a.isCloudAgent)).toHaveLength(1);
      const config = fs.statSync(path.join(data.dataDir, 'cloud-agents', id, 'ferry-agent-1', 'config.json'));
      expect(config.mode & 0o077).toBe(0);

      // A crash: the supervisor starts it again.
      process.kill(first.pid, 'SIGKILL');
      const second = await runningWith(svc, id, first);
      expect(second.pid).not.toBe(first.pid);

      // A restart through the API: the Agent exits, the supervisor starts it again.
      const restart = await svc.request<AgentModel>(
        'POST',
        `/v1/orgs/${svc.orgId}/agents/${id}/restart?restartNow=true`,
      );
      expect(restart.status).toBe(200);
      await runningWith(svc, id, second);
    } finally {
      await svc.close();
    }
    // The Service stopped it gracefully: the Agent reported ShutdownCloud before the Service closed.
    const last = currentPid(id);
    expect(last).toBeUndefined();
    const store = await openStore({
      dataDir: data.dataDir,
      databaseUrl: data.databaseUrl,
      preinstalledConnectors: preinstalledConnectors(),
    });
    try {
      expect((await getAgentById(store.db, id))?.status).toBe('ShutdownCloud');
    } finally {
      await store.close();
    }
  }, 90_000);

  it('starts the Cloud Agent again with the Service, and stops it and removes its folder on delete', async () => {
    const svc = await data.start();
    try {
      const list = await svc.request<AgentModel[]>('GET', `/v1/orgs/${svc.orgId}/agents`);
      const cloud = list.body.find((a) => a.isCloudAgent);
      expect(cloud).toBeDefined();
      const id = (cloud as AgentModel).id;
      const { pid } = await runningWith(svc, id);
      const del = await svc.request('DELETE', `/v1/orgs/${svc.orgId}/agents/${id}`);
      expect(del.status).toBe(204);
      expect(alive(pid)).toBe(false);
      expect(fs.existsSync(path.join(data.dataDir, 'cloud-agents', id))).toBe(false);
      // And the Organization may have a new one.
      const fresh = await svc.request<AgentModel>('POST', `/v1/orgs/${svc.orgId}/agents/provision_cloud_agent`);
      expect(fresh.status).toBe(201);
      await runningWith(svc, fresh.body.id);
    } finally {
      await svc.close();
    }
  }, 90_000);

  it('stops the Cloud Agent and removes its folder when its Organization is deleted', async () => {
    const svc = await data.start();
    try {
      const child = await svc.request<{ id: number }>('POST', '/v1/orgs', {
        body: {
          name: 'Short-lived',
          parentId: svc.orgId,
          securityRules: [
            {
              name: 'lo',
              allowedIpRangeStartAddress: '127.0.0.1',
              allowedIpRangeEndAddress: '127.0.0.1',
              apiAccessEnabled: true,
            },
          ],
        },
      });
      const cloud = await svc.request<AgentModel>('POST', `/v1/orgs/${child.body.id}/agents/provision_cloud_agent`);
      expect(cloud.status).toBe(201);
      const id = cloud.body.id;
      const pid = await until(
        async () => {
          const p = currentPid(id);
          const model = (await svc.request<AgentModel>('GET', `/v1/orgs/${child.body.id}/agents/${id}`)).body;
          return p !== undefined && model.status === 'Running' ? p : undefined;
        },
        "the child Organization's Cloud Agent to run",
        40_000,
      );
      expect((await svc.request('DELETE', `/v1/orgs/${child.body.id}`)).status).toBe(204);
      expect(alive(pid)).toBe(false);
      expect(fs.existsSync(path.join(data.dataDir, 'cloud-agents', id))).toBe(false);
    } finally {
      await svc.close();
    }
  }, 90_000);
});
