import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/agent-client.js';
import { serviceData, type ServiceData } from '../helpers/service-on-dir.js';
import type { TestService } from '../helpers/service.js';

/** The real `ferry` CLI from the sources (through tsx), as Agents and the Cloud Agent supervisor run it. */
const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

interface AgentModel {
  id: string;
  name: string;
  status: string;
  isCloudAgent: boolean;
  lastStartTime: string | null;
  lastShutdownTime: string | null;
}

function ferry(args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { stdio: 'ignore' });
}

function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('the Service with the real Agent CLI', () => {
  let data: ServiceData;
  let svc: TestService;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    data = await serviceData({ name: 'sqlite' }, { cloudAgentEntry: CLI });
    svc = await data.start();
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null && c.pid) process.kill(c.pid, 'SIGKILL');
    await svc?.close();
    await data?.dispose();
  });

  const agentModel = async (id: string) =>
    (await svc.request<AgentModel>('GET', `/v1/orgs/${svc.orgId}/agents/${id}`)).body;

  it('installs an On-Premise Agent with a key, runs it, fetches its logs once, restarts it and sees it shut down', async () => {
    const key = await svc.request<{ agentInstallationKey: string }>(
      'POST',
      `/v1/orgs/${svc.orgId}/agents/provision_onpremise_agent`,
    );
    const home = path.join(data.dataDir, 'on-premise');
    const install = ferry([
      'agent',
      'install',
      '--key',
      key.body.agentInstallationKey,
      '--service',
      svc.url,
      '--home',
      home,
      '--no-service',
    ]);
    children.push(install);
    expect(await exited(install)).toBe(0);
    const run = ferry(['agent', 'run', '--home', home]);
    children.push(run);
    const agent = await until(
      async () => {
        const list = await svc.request<AgentModel[]>('GET', `/v1/orgs/${svc.orgId}/agents`);
        return list.body.find((a) => !a.isCloudAgent && a.status === 'Running');
      },
      'the Agent to run',
      30_000,
    );

    const post = await svc.request<{ logId: string }>('POST', `/v1/orgs/${svc.orgId}/agents/${agent.id}/logs`);
    expect(post.status).toBe(201);
    const logUrl = `/v1/orgs/${svc.orgId}/agents/${agent.id}/logs/${post.body.logId}`;
    const zip = await until(
      async () => {
        const res = await svc.request('GET', logUrl);
        if (res.status === 404) {
          expect(res.text).toContain('The Agent Logs are not available.');
          return undefined;
        }
        return res;
      },
      'the log archive',
      30_000,
    );
    expect(zip.status).toBe(200);
    expect(zip.headers['content-type']).toBe('application/zip');
    expect((await svc.request('GET', logUrl)).status).toBe(410);

    const restart = await svc.request<AgentModel>(
      'POST',
      `/v1/orgs/${svc.orgId}/agents/${agent.id}/restart?restartNow=true`,
    );
    expect(restart.status).toBe(200);
    await until(
      async () => {
        const m = await agentModel(agent.id);
        return m.status === 'Running' && m.lastStartTime !== agent.lastStartTime ? m : undefined;
      },
      'the restarted Agent',
      30_000,
    );

    if (run.pid) process.kill(run.pid, 'SIGTERM');
    expect(await exited(run)).toBe(0);
    const stopped = await agentModel(agent.id);
    expect(stopped.status).toBe('Shutdown');
    expect(stopped.lastShutdownTime).not.toBeNull();
  }, 120_000);

  it('runs the Cloud Agent as a child of the Service', async () => {
    const res = await svc.request<AgentModel>('POST', `/v1/orgs/${svc.orgId}/agents/provision_cloud_agent`);
    expect(res.status).toBe(201);
    const running = await until(
      async () => {
        const m = await agentModel(res.body.id);
        return m.status === 'Running' ? m : undefined;
      },
      'the Cloud Agent to run',
      30_000,
    );
    expect(running).toMatchObject({ name: 'Cloud Agent', isCloudAgent: true });
    expect((await svc.request('DELETE', `/v1/orgs/${svc.orgId}/agents/${res.body.id}`)).status).toBe(204);
  }, 60_000);
});
