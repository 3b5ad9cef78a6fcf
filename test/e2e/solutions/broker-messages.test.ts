import { execFile, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MESSAGE_SOURCE_CONNECTORS } from '../../../src/protocol/map.js';
import {
  BROKERS_SKIP,
  natsProperties,
  natsStream,
  RABBITMQ_URL,
  rabbitProperties,
  rabbitQueue,
  type TestBrokerSource,
} from '../../helpers/brokers.js';
import { checkOutputs, docExamples } from '../../helpers/doc-examples.js';
import { ADMIN } from '../../helpers/service.js';
import { until, type ServiceUnderTest } from '../agent/harness.js';
import {
  createConnection,
  prepared,
  SQLITE,
  sqliteTarget,
  startWithAgent,
  stopAll,
  type Execution,
  type RunningAgent,
  type SqliteTarget,
} from './harness.js';
import { runAgent, untilReady } from './faults-helpers.js';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../../..');
const DOC = path.join(ROOT, 'docs/events.md');
/** The queue the documented examples declare and publish to. */
const DOC_QUEUE = 'webshop-orders';
const DOC_SKIP =
  spawnSync('amqp-publish', ['--help']).error === undefined
    ? undefined
    : 'amqp-publish is not installed (Debian: amqp-tools): the examples of docs/events.md on RabbitMQ are skipped.';
if (DOC_SKIP && !BROKERS_SKIP && process.env['CI'] === 'true') throw new Error(DOC_SKIP);

async function dropQueue(name: string): Promise<void> {
  if (BROKERS_SKIP) return;
  const conn = await amqp.connect(RABBITMQ_URL as string);
  try {
    await (await conn.createChannel()).deleteQueue(name);
  } finally {
    await conn.close();
  }
}

/** A folder with `ferry`, as the examples call it: this checkout's CLI. */
function ferryBin(dir: string): string {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  const tsx = path.join(ROOT, 'node_modules/tsx/dist/esm/index.mjs');
  const main = path.join(ROOT, 'src/cli/main.ts');
  fs.writeFileSync(
    path.join(bin, 'ferry'),
    `#!/bin/sh\nexec "${process.execPath}" --import "${tsx}" "${main}" "$@"\n`,
    {
      mode: 0o755,
    },
  );
  return bin;
}

/** Messages per broker in the kill -9 case: 2 × 2,500 keeps the file well within its minute. */
const N = 2_500;

/**
 * An Event Solution whose two Message Maps take their messages from a RabbitMQ queue and a NATS
 * JetStream stream, on a real Service and a real Agent process, upserting them into SQLite: a kill
 * -9 of the Agent while it drains both loses no message and writes none twice, each run is in
 * History with trigger `event`, and a message that cannot be read is a record error there and
 * leaves the broker. The 100,000-message version and the throughput are test/bench/brokers.bench.ts.
 * Last, on the same Service and Agent (one start for the file), the examples of docs/events.md
 * marked `<!-- example: brokers -->` run as one bash script (amqp-tools for the queue and the
 * publishing, this checkout's `ferry` CLI for the Connection) and print what the document says.
 */
describe.skipIf(Boolean(BROKERS_SKIP))('an Event Solution fed by RabbitMQ and NATS JetStream', () => {
  let sut: ServiceUnderTest;
  let agent: RunningAgent;
  let target: SqliteTarget;
  let queue: TestBrokerSource;
  let stream: TestBrokerSource;
  let S: string;

  const ids = (table: string): { count: number; uniq: number } => {
    const db = new Database(target.file, { readonly: true });
    try {
      return db.prepare(`SELECT count(*) AS count, count(DISTINCT id) AS uniq FROM ${table}`).get() as {
        count: number;
        uniq: number;
      };
    } finally {
      db.close();
    }
  };
  const history = async (): Promise<Execution[]> =>
    (await sut.request<Execution[]>('GET', `${S}/history?limit=1000`)).body;
  const messageMap = (name: string, table: string, connectionId: string, source: Record<string, unknown>) => ({
    version: '3.0',
    name,
    mapType: 'IntegrationServicesAdvancedMessageMap',
    blocks: [
      {
        blockId: randomUUID(),
        name: 'Msg',
        blockType: 'WaitForMessage',
        action: 'None',
        entity: 'Order',
        fields: ['id', 'name'],
        messageSource: { connectionId, ...source },
      },
      {
        blockId: randomUUID(),
        name: 'Put',
        blockType: 'Upsert',
        action: 'InsertUpdate',
        connectionId: dbId,
        entity: table,
        fieldMappings: [
          { targetField: 'id', targetFormula: 'Msg.id' },
          { targetField: 'name', targetFormula: 'Msg.name' },
        ],
      },
    ],
  });
  let dbId: string;
  const mapIds: number[] = [];

  beforeAll(async () => {
    [queue, stream] = await Promise.all([rabbitQueue(), natsStream()]);
    ({ sut, agent } = await startWithAgent({ csv: {} }));
    target = sqliteTarget(path.join(sut.dataDir, 'orders.db'), ['rabbit_orders', 'nats_orders', 'orders'], {
      primaryKey: true,
    });
    dbId = await createConnection(sut, 'Orders DB', SQLITE, { file: target.file });
    const rabbitId = await createConnection(
      sut,
      'Orders broker',
      MESSAGE_SOURCE_CONNECTORS.rabbitmq.id,
      rabbitProperties(),
    );
    const natsId = await createConnection(sut, 'Orders stream', MESSAGE_SOURCE_CONNECTORS.nats.id, natsProperties());
    const sol = await sut.request<{ id: string }>('POST', `/v1/orgs/${sut.orgId}/solutions`, {
      body: { name: 'Orders from brokers', solutionType: 'IntegrationEvent', agentId: agent.agentId },
    });
    expect(sol.status, JSON.stringify(sol.body)).toBe(201);
    S = `/v1/orgs/${sut.orgId}/solutions/${sol.body.id}`;
    for (const body of [
      messageMap('From RabbitMQ', 'rabbit_orders', rabbitId, { type: 'rabbitmq', queue: queue.name, prefetch: 300 }),
      messageMap('From NATS', 'nats_orders', natsId, { type: 'nats', stream: stream.name, ackWaitSeconds: 3 }),
    ]) {
      const res = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, { body });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      mapIds.push(res.body.id);
    }
    const job = await prepared(sut, sol.body.id);
    expect(job, job.message).toMatchObject({ hasError: false, mapErrorModels: [] });
  }, 240_000);

  afterAll(async () => {
    await stopAll(sut);
    await Promise.all([queue?.delete(), stream?.delete(), dropQueue(DOC_QUEUE)]);
  });

  it('refuses a Map whose message source is not valid, as problem+json', async () => {
    const res = await sut.request<{ status: number; errors?: Array<{ path: string }> }>('POST', `${S}/maps/advanced`, {
      body: messageMap('Bad source', 'rabbit_orders', dbId, { type: 'rabbitmq', queue: '', prefetch: 0 }),
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/messageSource/);
  });

  it('gives a broker-fed Map no HTTP endpoint; the Solution waits for events', async () => {
    const endpoints = await sut.request<unknown[]>('GET', `/v1/orgs/${sut.orgId}/endpoints`);
    expect(endpoints.body).toEqual([]);
    await until('WaitingForEvent', async () => {
      const res = await sut.request<{ status: string }>('GET', S);
      return res.body.status === 'WaitingForEvent' ? true : undefined;
    });
  });

  it(
    `kill -9 of the Agent while it drains ${N} messages from each broker: each is written exactly once`,
    { timeout: 150_000 },
    async () => {
      const orders = (prefix: string) =>
        Array.from({ length: N }, (_, i) => ({ id: i + 1, name: `${prefix}${i + 1}` }));
      // Half one message per delivery, half arrays of 10 (several messages in one delivery).
      const batched = (list: Array<{ id: number; name: string }>) => [
        ...list.slice(0, N / 2),
        ...Array.from({ length: N / 20 }, (_, k) => list.slice(N / 2 + k * 10, N / 2 + k * 10 + 10)),
      ];
      await Promise.all([queue.publish(batched(orders('r'))), stream.publish(batched(orders('n')))]);
      await until(
        'some of both written',
        () => (ids('rabbit_orders').count > 300 && ids('nats_orders').count > 300 ? true : undefined),
        60_000,
      );
      process.kill(-agent.proc.pid, 'SIGKILL');
      await agent.proc.exited;
      const before = { rabbit: ids('rabbit_orders').count, nats: ids('nats_orders').count };
      expect(before.rabbit + before.nats).toBeLessThan(2 * N);
      const since = new Date().toISOString();
      agent.proc = runAgent(agent.home, 1);
      await untilReady(sut, agent.agentId, since);
      await until(
        'every message in the target',
        () => (ids('rabbit_orders').count === N && ids('nats_orders').count === N ? true : undefined),
        90_000,
      );
      expect(ids('rabbit_orders')).toEqual({ count: N, uniq: N });
      expect(ids('nats_orders')).toEqual({ count: N, uniq: N });
      // The NATS Map's durable consumer is named after it (no `consumer` in its source).
      const natsConsumer = `ferry-map-${mapIds[1] ?? 0}`;
      await until('nothing left on the brokers', async () =>
        (await queue.waiting()) === 0 && (await stream.waiting(natsConsumer)) === 0 ? true : undefined,
      );
      const runs = await until('the runs ended in History', async () => {
        const h = await history();
        return h.length > 0 && h.every((e) => e.result !== 'InProgress') ? h : undefined;
      });
      expect(runs.some((e) => (e.details ?? '').includes('RUN_AGENT_ENDED'))).toBe(true);
      expect(runs.every((e) => e.trigger === undefined || e.trigger === 'event')).toBe(true);
      expect(runs.reduce((n, e) => n + e.recordsProcessed, 0)).toBeGreaterThanOrEqual(
        2 * N - before.rabbit - before.nats,
      );
    },
  );

  it(
    'a message that cannot be read is a record error in History, and leaves the broker',
    { timeout: 60_000 },
    async () => {
      const seen = (await history()).map((e) => e.id);
      await queue.publish(['this is not JSON', { id: N + 1, name: 'after it' }], 'text/plain');
      await until('the good one written', () => (ids('rabbit_orders').count === N + 1 ? true : undefined), 30_000);
      const run = await until('its execution', async () =>
        (await history()).find((e) => !seen.includes(e.id) && e.recordsFailed > 0 && e.result !== 'InProgress'),
      );
      expect(run.result).toBe('CompletedWithErrors');
      const errors = await sut.request<Array<{ code: string; errorDetail: string; canReprocess: boolean }>>(
        'GET',
        `${S}/history/${run.id}/errors`,
      );
      expect(errors.body).toEqual([
        expect.objectContaining({ code: 'EVT_MESSAGE_INVALID', errorDetail: 'this is not JSON', canReprocess: false }),
      ]);
      await until('the queue empty', async () => ((await queue.waiting()) === 0 ? true : undefined));
    },
  );

  it(
    'a message the target refused is reprocessed from its stored copy, as for HTTP messages',
    { timeout: 90_000 },
    async () => {
      const capture = await sut.request('PUT', `/v1/orgs/${sut.orgId}/SecuritySettings`, {
        body: {
          captureOnFailedRecordsForReprocessing: true,
          captureDuringCloudAppRuns: true,
          captureDuringLocalAgentAppRuns: true,
          isSourceDataLocal: true,
        },
      });
      expect(capture.status, JSON.stringify(capture.body)).toBe(200);
      const db = new Database(target.file);
      db.exec('CREATE UNIQUE INDEX nats_orders_name ON nats_orders (name)');
      db.close();
      type RecordError = { id: string; canReprocess: boolean };
      // Name n1 is order 1's: the target refuses the message. Published again until the Agent's copy
      // of the Solution has the capture switch (it follows the change within moments).
      let k = 0;
      const refused = await until(
        'a refused message with a stored copy',
        async () => {
          const id = 2 * N + ++k;
          const seen = (await history()).map((e) => e.id);
          await stream.publish([{ id, name: 'n1' }]);
          const run = await until('its execution', async () =>
            (await history()).find((e) => !seen.includes(e.id) && e.recordsFailed > 0 && e.result !== 'InProgress'),
          );
          const errors = (await sut.request<RecordError[]>('GET', `${S}/history/${run.id}/errors`)).body;
          return errors[0]?.canReprocess ? { run, error: errors[0], id } : undefined;
        },
        45_000,
      );
      const fix = new Database(target.file);
      fix.prepare('DELETE FROM nats_orders WHERE id = 1').run();
      fix.close();
      const mark = await sut.request('POST', `${S}/history/${refused.run.id}/errors/${refused.error.id}/mark`);
      expect(mark.status, JSON.stringify(mark.body)).toBe(200);
      const again = await sut.request<{ started: boolean }>('POST', `${S}/history/${refused.run.id}/reprocess`);
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(again.body.started).toBe(true);
      await until('the reprocessed message in the target', () => {
        const check = new Database(target.file, { readonly: true });
        try {
          const row = check.prepare('SELECT name FROM nats_orders WHERE id = ?').get(refused.id) as
            { name: string } | undefined;
          return row?.name === 'n1' ? true : undefined;
        } finally {
          check.close();
        }
      });
      const undo = new Database(target.file);
      undo.exec('DROP INDEX nats_orders_name');
      undo.close();
    },
  );

  it.skipIf(Boolean(DOC_SKIP))(
    'docs/events.md: the RabbitMQ examples print what the document says, and the messages arrive',
    { timeout: 120_000 },
    async () => {
      await dropQueue(DOC_QUEUE);
      const blocks = docExamples(DOC, 'brokers');
      expect(blocks.length).toBeGreaterThanOrEqual(2);
      const script = blocks.join('\n\n');
      const { stdout } = await exec('bash', ['-eo', 'pipefail', '-c', script], {
        cwd: sut.dataDir,
        timeout: 100_000,
        env: {
          ...process.env,
          PATH: `${ferryBin(sut.dataDir)}:${process.env['PATH'] ?? ''}`,
          FERRY_URL: sut.url,
          AUTH: `${ADMIN.email}:${ADMIN.password}`,
          ORG: String(sut.orgId),
          AGENT: agent.agentId,
          DB: dbId,
          FERRY_CONFIG_DIR: path.join(sut.dataDir, 'cli'),
          FERRY_LOG_LEVEL: 'silent',
        },
      });
      checkOutputs(script, stdout, (message) => expect.fail(message));
      await until('the orders in the target', async () => (target.count('orders') === 3 ? true : undefined), 30_000);
    },
  );
});
