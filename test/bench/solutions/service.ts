/** The Service under test, in this process, and the calls of its API the scenarios make. */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type * as Harness from '../../e2e/agent/harness.js';
import type { ServiceUnderTest } from '../../e2e/agent/harness.js';
import { POLL_MS, round, sleep } from './settings.js';

export interface Execution {
  id: number;
  processExecutionId: string;
  start: string;
  stop: string | null;
  result: string;
  recordsProcessed: number;
  recordsFailed: number;
  details: string | null;
  trigger?: string;
  dueAt?: string | null;
}

export async function api<T>(
  sut: ServiceUnderTest,
  method: string,
  p: string,
  body?: unknown,
  expected: number[] = [200, 201, 204],
): Promise<{ body: T; headers: Record<string, string | string[] | undefined> }> {
  const res = await sut.request<T>(method, p, body === undefined ? {} : { body });
  if (!expected.includes(res.status))
    throw new Error(`${method} ${p} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`);
  return { body: res.body, headers: res.headers };
}

export async function poll<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms: number,
  every = POLL_MS,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

/** Creates a Connection with its properties encrypted under the Organization's crypto token, as clients do. */
export async function createConnection(
  sut: ServiceUnderTest,
  name: string,
  connectorId: string,
  properties: Record<string, string>,
): Promise<string> {
  const { encryptProperty } = await import('../../../service/connections/properties-crypto.js');
  const token = (await api<{ apiCryptoToken: string }>(sut, 'GET', `/v1/orgs/${sut.orgId}/SecuritySettings`)).body
    .apiCryptoToken;
  const res = await api<{ id: string }>(sut, 'POST', `/v1/orgs/${sut.orgId}/connections`, {
    name,
    connectorId,
    color: '#FF112233',
    properties: Object.entries(properties).map(([key, value]) => ({ key, value: encryptProperty(value, token) })),
  });
  return res.body.id;
}

/** Prepares the Solution and waits for the job; throws when it fails. */
export async function prepare(sut: ServiceUnderTest, solutionId: string): Promise<void> {
  const S = `/v1/orgs/${sut.orgId}/solutions/${solutionId}`;
  const job = await api<{ id: string }>(sut, 'POST', `${S}/prepare`);
  const done = await poll(
    'the prepare job',
    async () => {
      const res = await api<{ isComplete: boolean; hasError: boolean; message: string; mapErrorModels: unknown[] }>(
        sut,
        'GET',
        `${S}/prepare/${job.body.id}`,
      );
      return res.body.isComplete ? res.body : undefined;
    },
    300_000,
    100,
  );
  if (done.hasError)
    throw new Error(`prepare of ${solutionId} failed: ${done.message} ${JSON.stringify(done.mapErrorModels)}`);
}

/**
 * The Service under test, in this process: test/e2e/agent/harness.ts' serviceUnderTest with the
 * production settings (heartbeats every 30 s, not every 200 ms) but the rate limits lifted and no
 * Cloud Agents. Same data folder and port when started again.
 */
export async function benchService(): Promise<ServiceUnderTest> {
  const h = await harness();
  const [{ buildService }, { parseServiceConfig }] = await Promise.all([
    import('../../../service/build-service.js'),
    import('../../../service/config.js'),
  ]);
  const base = h.serviceUnderTest();
  const sut: ServiceUnderTest = {
    ...base,
    dataDir: base.dataDir,
    async start() {
      const config = parseServiceConfig(
        {},
        {
          port: sut.port,
          host: '127.0.0.1',
          dataDir: sut.dataDir,
          adminEmail: h.ADMIN.email,
          adminPassword: h.ADMIN.password,
          bootstrapAllow: '127.0.0.1,::1',
          rateLimitPerMinute: 100_000_000,
          rateLimitPerDay: 1_000_000_000,
          logLevel: 'silent',
          cloudAgents: 'off',
        },
      );
      const service = await buildService(config, { logger: pino({ level: 'silent' }) });
      sut.url = await service.listen();
      sut.port = Number(new URL(sut.url).port);
      sut.orgId = service.bootstrap.orgId;
      sut.service = service;
    },
    async stop() {
      const svc = sut.service;
      sut.service = undefined;
      await svc?.close();
    },
    // The harness' request() reads the URL from its own object: ask it with this one's.
    request(method, pathAndQuery, opts) {
      base.url = sut.url;
      return base.request(method, pathAndQuery, opts);
    },
    async dispose() {
      await sut.stop();
      await base.dispose();
    },
  };
  return sut;
}

export async function harness(): Promise<typeof Harness> {
  return import('../../e2e/agent/harness.js');
}

export interface ApiRun {
  runId: string;
  /** POST …/start until the poll saw the end in History. */
  wallMs: number;
  rowsPerSec: number;
  /** POST …/start until the execution's own stop (without the end report's trip and the poll). */
  toStopMs: number;
  toStopRowsPerSec: number;
  /** The answer of POST …/start. */
  startCallMs: number;
  /** The execution's own start − the moment the client sent the start. */
  startLagMs: number;
  /** The execution's own stop − start. */
  execMs: number;
  /** When the client saw the end − the execution's stop (the end report's trip and the poll). */
  endLagMs: number;
  processed: number;
  failed: number;
  result: string;
  execution: Execution;
}

/** POST …/start, then History polled every POLL_MS until the execution has ended. */
export async function startAndWait(sut: ServiceUnderTest, solutionId: string, timeoutMs = 1_800_000): Promise<ApiRun> {
  const S = `/v1/orgs/${sut.orgId}/solutions/${solutionId}`;
  const wall0 = Date.now();
  const t0 = performance.now();
  const start = await api<{ runId: string; started: boolean; prepareId: string | null }>(sut, 'POST', `${S}/start`);
  const startCallMs = performance.now() - t0;
  if (!start.body.started) throw new Error(`start of ${solutionId} was ignored: ${JSON.stringify(start.body)}`);
  const execution = await poll(
    `the end of run ${start.body.runId}`,
    async () => {
      const res = await sut.request<Execution>('GET', `${S}/history/${start.body.runId}`);
      return res.status === 200 && res.body.result !== 'InProgress' ? res.body : undefined;
    },
    timeoutMs,
  );
  const wallMs = performance.now() - t0;
  const started = Date.parse(execution.start);
  const stopped = Date.parse(execution.stop ?? execution.start);
  return {
    runId: start.body.runId,
    wallMs: round(wallMs),
    rowsPerSec: round((execution.recordsProcessed / wallMs) * 1000),
    toStopMs: stopped - wall0,
    toStopRowsPerSec: round((execution.recordsProcessed / (stopped - wall0)) * 1000),
    startCallMs: round(startCallMs),
    startLagMs: started - wall0,
    execMs: stopped - started,
    endLagMs: round(wall0 + wallMs - stopped),
    processed: execution.recordsProcessed,
    failed: execution.recordsFailed,
    result: execution.result,
    execution,
  };
}

/** A prepared Event Solution with one Message Map, and where to send its messages. */
export interface MessageSolution {
  readonly solutionId: string;
  /** `/v1/orgs/{orgId}/solutions/{id}`. */
  readonly path: string;
  readonly mapId: number;
  readonly token: string;
  /** The eventUrl's path with `?accesstoken=` (POST messages here). */
  readonly messagePath: string;
}

/**
 * An Event Solution of `agentId` named `name` with one Message Map: Wait For Message of `fields`
 * (entity `Order`) → Upsert (InsertUpdate) of the same fields into `entity` of `connectionId`;
 * prepared, its token read and its eventUrl checked.
 */
export async function messageSolution(
  sut: ServiceUnderTest,
  o: {
    name: string;
    agentId: string;
    connectionId: string;
    entity: string;
    fields: readonly string[];
    mapName?: string;
  },
): Promise<MessageSolution> {
  const O = `/v1/orgs/${sut.orgId}`;
  const sol = await api<{ id: string }>(sut, 'POST', `${O}/solutions`, {
    name: o.name,
    solutionType: 'IntegrationEvent',
    agentId: o.agentId,
  });
  const S = `${O}/solutions/${sol.body.id}`;
  const map = await api<{ id: number }>(sut, 'POST', `${S}/maps/advanced`, {
    version: '3.0',
    name: o.mapName ?? 'Order received',
    mapType: 'IntegrationServicesAdvancedMessageMap',
    blocks: [
      {
        blockId: randomUUID(),
        name: 'Msg',
        blockType: 'WaitForMessage',
        action: 'None',
        entity: 'Order',
        fields: o.fields,
      },
      {
        blockId: randomUUID(),
        name: 'Put',
        blockType: 'Upsert',
        action: 'InsertUpdate',
        connectionId: o.connectionId,
        entity: o.entity,
        fieldMappings: o.fields.map((f) => ({ targetField: f, targetFormula: `Msg.${f}` })),
      },
    ],
  });
  await prepare(sut, sol.body.id);
  const token = (await api<{ eventSolutionAccessToken: string }>(sut, 'GET', `${O}/SecuritySettings`)).body
    .eventSolutionAccessToken;
  const info = await api<{ eventUrl: string }>(sut, 'GET', `${S}/maps/${map.body.id}/eventinfo`);
  const pathname = new URL(info.body.eventUrl).pathname;
  if (pathname !== `${O}/messages/${map.body.id}`) throw new Error(`eventUrl: ${info.body.eventUrl}`);
  return {
    solutionId: sol.body.id,
    path: S,
    mapId: map.body.id,
    token,
    messagePath: `${pathname}?accesstoken=${token}`,
  };
}
