import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildService } from '../../../service/build-service.js';
import { parseServiceConfig } from '../../../service/config.js';
import { ADMIN, serviceUnderTest, until, type ServiceUnderTest } from '../agent/harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  ID_NAME,
  idNameCsv,
  runningAgent,
  runToEnd,
  SQLITE,
  sqliteTarget,
  stopAll,
  type Execution,
  type RunningAgent,
} from '../solutions/harness.js';
import {
  conventionBreaches,
  parseExposition,
  sumOf,
  valueOf,
  type Family,
} from '../../integration/metrics/exposition.js';

const TOKEN = 'e2e-metrics-token-0123456789abcdef';
/** 20 people and a 21st record that repeats id 5: the target's primary key refuses it. */
const PEOPLE = `${idNameCsv(20)}5,again\n`;

/** A loopback port free now (the Agent's metrics port is fixed by configuration). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The harness's Service, started with a metrics token. */
function serviceWithMetrics(): ServiceUnderTest {
  const sut = serviceUnderTest();
  sut.start = async () => {
    const config = parseServiceConfig(
      {},
      {
        port: sut.port,
        host: '127.0.0.1',
        dataDir: sut.dataDir,
        adminEmail: ADMIN.email,
        adminPassword: ADMIN.password,
        bootstrapAllow: '127.0.0.1-127.0.0.9,::1',
        rateLimitPerMinute: 1_000_000,
        rateLimitPerDay: 100_000_000,
        logLevel: 'silent',
        agentHeartbeatMs: 200,
        cloudAgents: 'off',
        metricsToken: TOKEN,
      },
    );
    const service = await buildService(config, { logger: pino({ level: 'silent' }) });
    sut.url = await service.listen();
    sut.port = Number(new URL(sut.url).port);
    sut.orgId = service.bootstrap.orgId;
    sut.service = service;
  };
  return sut;
}

async function scrape(url: string, headers: Record<string, string> = {}): Promise<Map<string, Family>> {
  const res = await fetch(url, { headers });
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
}

/**
 * The counts move with a real run: a Service with a metrics token, a real Agent process with its
 * metrics port, a Solution copying CSV into SQLite with one record refused. The Service's and the
 * Agent's figures are read before and after, and moved by what History recorded.
 */
describe('metrics of a real run: the Service and the Agent count it', () => {
  let sut: ServiceUnderTest;
  let agent: RunningAgent;
  let agentMetricsUrl: string;
  let solutionId: string;

  const service = () => scrape(`${sut.url}/metrics`, { authorization: `Bearer ${TOKEN}` });
  const ofAgent = () => scrape(agentMetricsUrl);

  beforeAll(async () => {
    sut = serviceWithMetrics();
    await sut.start();
    const folder = path.join(sut.dataDir, 'csv');
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'people.csv'), PEOPLE);
    fs.writeFileSync(
      path.join(folder, 'schema.json'),
      JSON.stringify({ entities: { 'people.csv': { fields: ID_NAME } } }),
    );
    const port = await freePort();
    agentMetricsUrl = `http://127.0.0.1:${port}/metrics`;
    agent = await runningAgent(sut, { FERRY_AGENT_METRICS_PORT: String(port) });
    const target = sqliteTarget(path.join(sut.dataDir, 'target.db'), ['people'], { primaryKey: true });
    const csvId = await createConnection(sut, 'Files', CSV, { folder });
    const dbId = await createConnection(sut, 'Target', SQLITE, { file: target.file });
    const map = copyMap({ n: 1, csvId, entity: 'people', targetId: dbId, table: 'people', batchSize: 5 });
    ({ id: solutionId } = await createSolution(sut, agent.agentId, 'People', [map], { prepare: true }));
  }, 240_000);

  afterAll(() => stopAll(sut));

  it('moves runs, records, durations, channel and HTTP counts by what the run did', { timeout: 240_000 }, async () => {
    // The Agent's port opens with its worker; its channel is open once it is Running.
    await until('the Agent metrics port', async () => ((await fetch(agentMetricsUrl)).ok ? true : undefined), 30_000);
    const sBefore = await service();
    const aBefore = await ofAgent();

    const execution: Execution = await runToEnd(sut, solutionId);
    expect(execution).toMatchObject({ result: 'CompletedWithErrors', recordsProcessed: 21, recordsFailed: 1 });

    const sAfter = await service();
    const moved = (name: string, labels: Record<string, string> = {}) =>
      sumOf(sAfter, name, labels) - sumOf(sBefore, name, labels);
    expect(moved('ferry_solution_runs_total', { result: 'CompletedWithErrors', solution_type: 'Integration' })).toBe(1);
    expect(moved('ferry_solution_runs_total')).toBe(1);
    expect(moved('ferry_solution_records_processed_total')).toBe(21);
    expect(moved('ferry_solution_records_failed_total')).toBe(1);
    expect(moved('ferry_solution_run_duration_seconds_count', { result: 'CompletedWithErrors' })).toBe(1);
    expect(
      moved('ferry_http_requests_total', {
        method: 'POST',
        route: '/v1/orgs/:orgId/solutions/:solutionId/start',
        status_code: '200',
      }),
    ).toBe(1);
    expect(moved('ferry_channel_messages_total', { type: 'report', direction: 'in' })).toBeGreaterThanOrEqual(2);
    expect(moved('ferry_channel_messages_total', { type: 'startSolution', direction: 'out' })).toBe(1);
    expect(moved('ferry_channel_command_duration_seconds_count', { command: 'startSolution', outcome: 'ok' })).toBe(1);
    expect(valueOf(sAfter, 'ferry_agents_connected')).toBe(1);
    expect(valueOf(sAfter, 'ferry_agents', { status: 'Running' })).toBe(1);
    // Heartbeats carry the Agent's outbox: a series exists for it.
    expect(sAfter.has('ferry_agents_outbox_messages')).toBe(true);
    expect(conventionBreaches(sAfter)).toEqual([]);

    // The Agent counted the same run: its outbox may still hold the end, so wait for its figures.
    const aAfter = await until(
      'the run on the Agent metrics',
      async () => {
        const m = await ofAgent();
        return valueOf(m, 'ferry_agent_runs_total', { result: 'CompletedWithErrors' }) >= 1 ? m : undefined;
      },
      30_000,
    );
    const agentMoved = (name: string, labels: Record<string, string> = {}) =>
      sumOf(aAfter, name, labels) - sumOf(aBefore, name, labels);
    expect(agentMoved('ferry_agent_runs_started_total')).toBe(1);
    expect(agentMoved('ferry_agent_runs_total', { result: 'CompletedWithErrors' })).toBe(1);
    expect(agentMoved('ferry_agent_records_processed_total')).toBe(21);
    expect(agentMoved('ferry_agent_records_failed_total')).toBe(1);
    expect(agentMoved('ferry_agent_records_read_total')).toBe(21);
    // 21 records in batches of 5.
    expect(agentMoved('ferry_agent_batches_total')).toBe(5);
    expect(agentMoved('ferry_agent_records_written_total')).toBe(20);
    expect(agentMoved('ferry_agent_records_refused_total')).toBe(1);
    expect(agentMoved('ferry_agent_write_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThanOrEqual(5);
    expect(agentMoved('ferry_agent_run_duration_seconds_count')).toBe(1);
    expect(valueOf(aAfter, 'ferry_agent_channel_connected')).toBe(1);
    expect(aAfter.has('ferry_agent_outbox_messages')).toBe(true);
    expect(aAfter.has('ferry_agent_outbox_oldest_age_seconds')).toBe(true);
    expect(valueOf(aAfter, 'ferry_process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(conventionBreaches(aAfter)).toEqual([]);
  });
});
