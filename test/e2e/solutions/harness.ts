/**
 * Solutions end to end: a real Service, a real Agent process with the Organization's Connectors,
 * Connections created through the API, and helpers to prepare, start and wait for History.
 */
import path from 'node:path';
import { expect } from 'vitest';
import { encryptProperty } from '../../../service/connections/properties-crypto.js';
import { ferry, install, until, untilStatus, type ServiceUnderTest } from '../agent/harness.js';

export const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
export const POSTGRES = '18cc2a91-e317-4972-9c24-be9fc63775ab';
export const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';

export interface Execution {
  id: number;
  processExecutionId: string;
  result: string;
  recordsProcessed: number;
  recordsFailed: number;
  details: string | null;
  trigger?: string;
}

/** Installs an Agent under the Service's data folder, runs it, and waits until it has the three built-in Connectors. */
export async function runningAgent(sut: ServiceUnderTest, env: Record<string, string> = {}): Promise<{ agentId: string; home: string; dir: string; proc: ReturnType<typeof ferry> }> {
  const home = path.join(sut.dataDir, 'agents');
  const agent = await install(sut, home);
  const proc = ferry(['agent', 'run', '--home', home], env);
  await untilStatus(sut, agent.agentId, 'Running');
  await until(
    'the three connectors on the Agent',
    async () => {
      const res = await sut.request<{ installedConnectors: unknown[] }>('GET', `/v1/orgs/${sut.orgId}/agents/${agent.agentId}`);
      return res.body.installedConnectors.length === 3 ? true : undefined;
    },
    90_000,
  );
  return { agentId: agent.agentId, home, dir: agent.dir, proc };
}

/** Creates a Connection with its properties encrypted under the Organization's crypto token, as clients do. */
export async function createConnection(sut: ServiceUnderTest, name: string, connectorId: string, properties: Record<string, string>): Promise<string> {
  const token = (await sut.request<{ apiCryptoToken: string }>('GET', `/v1/orgs/${sut.orgId}/SecuritySettings`)).body.apiCryptoToken;
  const res = await sut.request<{ id: string }>('POST', `/v1/orgs/${sut.orgId}/connections`, {
    body: { name, connectorId, color: '#FF112233', properties: Object.entries(properties).map(([key, value]) => ({ key, value: encryptProperty(value, token) })) },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

/** Prepares and waits for the job; answers it. */
export async function prepared(sut: ServiceUnderTest, solutionId: string): Promise<{ hasError: boolean; message: string; mapErrorModels: Array<{ mapId: number; message: string }> }> {
  const S = `/v1/orgs/${sut.orgId}/solutions/${solutionId}`;
  const job = await sut.request<{ id: string }>('POST', `${S}/prepare`);
  expect(job.status, JSON.stringify(job.body)).toBe(200);
  return until(
    'the prepare job',
    async () => {
      const res = await sut.request<{ isComplete: boolean; hasError: boolean; message: string; mapErrorModels: Array<{ mapId: number; message: string }> }>('GET', `${S}/prepare/${job.body.id}`);
      return res.body.isComplete ? res.body : undefined;
    },
    120_000,
  );
}

/** The execution of a run once it has ended. */
export async function finished(sut: ServiceUnderTest, solutionId: string, runId: string, ms = 180_000): Promise<Execution> {
  const S = `/v1/orgs/${sut.orgId}/solutions/${solutionId}`;
  return until(
    `the end of run ${runId}`,
    async () => {
      const res = await sut.request<Execution[]>('GET', `${S}/history?limit=1000`);
      const e = Array.isArray(res.body) ? res.body.find((x) => x.processExecutionId === runId) : undefined;
      return e && e.result !== 'InProgress' ? e : undefined;
    },
    ms,
  );
}
