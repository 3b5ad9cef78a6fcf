/**
 * Event Solutions fed by message brokers (issue 37; docs/events.md "Messages from RabbitMQ or NATS
 * JetStream", src/solutions/brokers): a real Agent process consumes a RabbitMQ queue and a NATS
 * JetStream stream and upserts each message {id, name, amount} into a SQLite table. Per broker:
 *
 *   plain     the broker's own rate, the anchor: FERRY_BENCH_BROKERS_N (100,000) messages published,
 *             then read by a plain consumer of the same client library in this process, with the
 *             same prefetch (FERRY_BENCH_BROKERS_PREFETCH, 500) and one acknowledgement a message
 *             (amqplib basic.consume; a nats.js durable pull consumer with explicit acks).
 *   ferry     the same number published to a fresh queue or stream, then the Map prepared: messages
 *             written per second from the first row to the last (the target polled every 20 ms).
 *             The figure is ferry / plain: FERRY_BENCH_BROKERS_ROUNDS (3) rounds of plain then ferry,
             back to back (the machine is shared), each round's ratio and their median.
 *   kill      the same number again into a fresh Map, the Agent killed with SIGKILL (its process
 *             group) once 30% are written, started again: then every message is in the target
 *             exactly once (count = count(DISTINCT id) = N, ids 1…N), nothing is left on the broker,
 *             and History says how many were written twice (taken again after the kill: at least
 *             once, harmless to an Upsert).
 *
 *   FERRY_TEST_RABBITMQ_URL=amqp://guest:guest@127.0.0.1:5672 FERRY_TEST_NATS_URL=nats://127.0.0.1:4222 \
 *     npx tsx test/bench/brokers.bench.ts        → one JSON document on stdout, progress on stderr
 *
 * FERRY_BENCH_BROKERS (rabbitmq,nats), FERRY_BENCH_BROKERS_PARTS (plain,ferry,kill). The Service
 * runs in this process (it only hears the runs' reports); the Agent is a `ferry agent run` child.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import amqp from 'amqplib';
import Database from 'better-sqlite3';
import { AckPolicy, connect as natsConnect } from 'nats';
import { MESSAGE_SOURCE_CONNECTORS } from '../../src/protocol/map.js';
import {
  NATS_URL,
  natsProperties,
  natsStream,
  RABBITMQ_URL,
  rabbitProperties,
  rabbitQueue,
  type TestBrokerSource,
} from '../helpers/brokers.js';
import type { ServiceUnderTest } from '../e2e/agent/harness.js';
import { killAgents, procCpuMs } from './proc.js';
import { installAgent, runAgent, type Agent } from './solutions/agents.js';
import { api, createConnection, poll, prepare, type Execution } from './solutions/service.js';
import { benchService } from './solutions/service.js';

const ENV = process.env;
const N = Number(ENV['FERRY_BENCH_BROKERS_N'] ?? 100_000);
const PREFETCH = Number(ENV['FERRY_BENCH_BROKERS_PREFETCH'] ?? 500);
const BROKERS = (ENV['FERRY_BENCH_BROKERS'] ?? 'rabbitmq,nats').split(',').filter(Boolean) as Array<
  'rabbitmq' | 'nats'
>;
const PARTS = new Set((ENV['FERRY_BENCH_BROKERS_PARTS'] ?? 'plain,ferry,kill').split(','));
/** Rounds of plain then ferry, back to back: the machine is shared, so each round's ratio and their median. */
const ROUNDS = Number(ENV['FERRY_BENCH_BROKERS_ROUNDS'] ?? 3);
const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';

const say = (msg: string): void => void process.stderr.write(`[brokers] ${msg}\n`);
const roundTo = (n: number, places = 0): number => Math.round(n * 10 ** places) / 10 ** places;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const row = (i: number) => ({ id: i, name: `order ${i}`, amount: (i % 10_000) / 100 });

interface Ctx {
  sut: ServiceUnderTest;
  agent: Agent;
  home: string;
  instance: number;
  file: string;
  dbId: string;
  connections: Record<'rabbitmq' | 'nats', string>;
}

/** The target's tables, one per broker and part, made at once: prepare reads the Connection's metadata once. */
function tables(file: string): void {
  const db = new Database(file);
  for (const broker of ['rabbitmq', 'nats'])
    for (const label of ['kill', ...Array.from({ length: ROUNDS }, (_, r) => `ferry${r + 1}`)])
      db.exec(`CREATE TABLE ${broker}_${label} (id INTEGER PRIMARY KEY, name TEXT NOT NULL, amount REAL)`);
  db.close();
}

/** Publishes ids 1…N, as JSON objects one a message. */
async function publishAll(source: TestBrokerSource): Promise<number> {
  const t0 = performance.now();
  const chunk = 5_000;
  for (let from = 1; from <= N; from += chunk)
    await source.publish(Array.from({ length: Math.min(chunk, N - from + 1) }, (_, k) => row(from + k)));
  return roundTo(N / ((performance.now() - t0) / 1000));
}

/** The broker's own consumer: every message acknowledged one by one, `PREFETCH` unacknowledged at most. */
async function plainRate(broker: 'rabbitmq' | 'nats', source: TestBrokerSource): Promise<Record<string, number>> {
  const cpu0 = process.cpuUsage();
  let t0 = 0;
  let seen = 0;
  let finish: () => void = () => undefined;
  const all = new Promise<void>((resolve) => (finish = resolve));
  const got = (): void => {
    if (seen === 0) t0 = performance.now();
    seen += 1;
    if (seen === N) finish();
  };
  if (broker === 'rabbitmq') {
    const conn = await amqp.connect(RABBITMQ_URL as string);
    const ch = await conn.createChannel();
    await ch.prefetch(PREFETCH);
    await ch.consume(source.name, (m) => {
      if (!m) return;
      JSON.parse(m.content.toString('utf8'));
      ch.ack(m);
      got();
    });
    await all;
    await conn.close();
  } else {
    const nc = await natsConnect({ servers: NATS_URL as string });
    const jsm = await nc.jetstreamManager();
    await jsm.consumers.add(source.name, {
      durable_name: 'plain',
      ack_policy: AckPolicy.Explicit,
      max_ack_pending: PREFETCH,
    });
    const consumer = await nc.jetstream().consumers.get(source.name, 'plain');
    const messages = await consumer.consume({
      max_messages: PREFETCH,
      callback: (m) => {
        JSON.parse(Buffer.from(m.data).toString('utf8'));
        m.ack();
        got();
      },
    });
    await all;
    await messages.close();
    await nc.close();
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return {
    messagesPerSec: roundTo((N - 1) / seconds),
    seconds: roundTo(seconds, 2),
    cpuMs: roundTo((cpu.user + cpu.system) / 1000),
  };
}

function rows(file: string, table: string): { count: number; uniq: number; min: number; max: number } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare(
        `SELECT count(*) AS count, count(DISTINCT id) AS uniq, coalesce(min(id), 0) AS min, coalesce(max(id), 0) AS max FROM ${table}`,
      )
      .get() as { count: number; uniq: number; min: number; max: number };
  } finally {
    db.close();
  }
}

/** An Event Solution whose one Message Map upserts the broker's messages into a fresh table; answers its path and Map. */
async function brokerSolution(ctx: Ctx, broker: 'rabbitmq' | 'nats', source: TestBrokerSource, label: string) {
  // Made before the first prepare read the Connection's metadata (tables()).
  const table = `${broker}_${label}`;
  const O = `/v1/orgs/${ctx.sut.orgId}`;
  const sol = await api<{ id: string }>(ctx.sut, 'POST', `${O}/solutions`, {
    name: `${broker} ${label}`,
    solutionType: 'IntegrationEvent',
    agentId: ctx.agent.agentId,
  });
  const S = `${O}/solutions/${sol.body.id}`;
  const messageSource =
    broker === 'rabbitmq'
      ? { type: 'rabbitmq', connectionId: ctx.connections.rabbitmq, queue: source.name, prefetch: PREFETCH }
      : {
          type: 'nats',
          connectionId: ctx.connections.nats,
          stream: source.name,
          prefetch: PREFETCH,
          ackWaitSeconds: 10,
        };
  const fields = ['id', 'name', 'amount'];
  const map = await api<{ id: number }>(ctx.sut, 'POST', `${S}/maps/advanced`, {
    version: '3.0',
    name: `Orders ${label}`,
    mapType: 'IntegrationServicesAdvancedMessageMap',
    blocks: [
      {
        blockId: randomUUID(),
        name: 'Msg',
        blockType: 'WaitForMessage',
        action: 'None',
        entity: 'Order',
        fields,
        messageSource,
      },
      {
        blockId: randomUUID(),
        name: 'Put',
        blockType: 'Upsert',
        action: 'InsertUpdate',
        connectionId: ctx.dbId,
        entity: table,
        fieldMappings: fields.map((f) => ({ targetField: f, targetFormula: `Msg.${f}` })),
      },
    ],
  });
  return { solutionId: sol.body.id, S, table, mapId: map.body.id };
}

/** Polls the table every 20 ms until it holds N rows; answers the rate from the first row to the last. */
async function drain(ctx: Ctx, table: string, onCount?: (n: number) => Promise<void>): Promise<Record<string, number>> {
  let t0 = 0;
  let c0 = 0;
  const worker = workerOf(ctx.agent);
  const cpu0 = procCpuMs(worker);
  const deadline = Date.now() + 30 * 60_000;
  for (;;) {
    const { count } = rows(ctx.file, table);
    if (count > 0 && t0 === 0) {
      t0 = performance.now();
      c0 = count;
    }
    if (onCount) await onCount(count);
    if (count >= N) break;
    if (Date.now() > deadline) throw new Error(`${table}: ${count} of ${N} after 30 minutes`);
    await sleep(20);
  }
  const seconds = (performance.now() - t0) / 1000;
  return {
    messagesPerSec: roundTo((N - c0) / seconds),
    seconds: roundTo(seconds, 2),
    agentCpuMs: procCpuMs(worker) - cpu0,
  };
}

/** The Agent's worker process: the supervisor's child (its log line may not have been read yet). */
function workerOf(agent: Agent): number {
  if (agent.workerPid > 0) return agent.workerPid;
  try {
    const children = fs.readFileSync(`/proc/${agent.proc.pid}/task/${agent.proc.pid}/children`, 'utf8');
    return Number(children.trim().split(/\s+/)[0] ?? -1) || -1;
  } catch {
    return -1;
  }
}

async function waitEmpty(source: TestBrokerSource, consumer: string | undefined): Promise<void> {
  await poll(
    'nothing left on the broker',
    async () => ((await source.waiting(consumer)) === 0 ? true : undefined),
    120_000,
    200,
  );
}

async function history(ctx: Ctx, S: string): Promise<Execution[]> {
  return poll(
    'the runs ended in History',
    async () => {
      const h = (await api<Execution[]>(ctx.sut, 'GET', `${S}/history?limit=1000`)).body;
      return h.length > 0 && h.every((e) => e.result !== 'InProgress') ? h : undefined;
    },
    120_000,
    250,
  );
}

async function part(ctx: Ctx, broker: 'rabbitmq' | 'nats', label: string): Promise<Record<string, unknown>> {
  const source = broker === 'rabbitmq' ? await rabbitQueue() : await natsStream();
  try {
    const publishedPerSec = await publishAll(source);
    const sol = await brokerSolution(ctx, broker, source, label);
    say(`${broker} ${label}: ${N} published (${publishedPerSec}/s); preparing ${sol.table}`);
    await prepare(ctx.sut, sol.solutionId);
    let killedAt: number | undefined;
    const rate = await drain(ctx, sol.table, async (count) => {
      if (label !== 'kill' || killedAt !== undefined || count < N * 0.3) return;
      killedAt = count;
      process.kill(-ctx.agent.proc.pid, 'SIGKILL');
      await ctx.agent.proc.exited;
      say(`${broker} kill: SIGKILL at ${count} rows; starting the Agent again`);
      ctx.agent = await runAgent(ctx.sut, ctx.home, ctx.instance, ctx.agent.agentId);
    });
    const written = rows(ctx.file, sol.table);
    if (written.count !== N || written.uniq !== N || written.min !== 1 || written.max !== N)
      throw new Error(`${sol.table}: ${JSON.stringify(written)}, not exactly ids 1…${N}`);
    await waitEmpty(source, broker === 'nats' ? `ferry-map-${sol.mapId}` : undefined);
    const runs = await history(ctx, sol.S);
    const processed = runs.reduce((n, e) => n + e.recordsProcessed, 0);
    const result = {
      ...(label === 'kill' ? { seconds: rate.seconds } : rate),
      publishedPerSec,
      target: written,
      runs: runs.length,
      // Above N: messages written again after the kill (at least once); a keyed write made them one row.
      processedInHistory: processed,
      ...(killedAt !== undefined
        ? {
            killedAtRows: killedAt,
            agentEndedRuns: runs.filter((e) => (e.details ?? '').includes('RUN_AGENT_ENDED')).length,
          }
        : {}),
    };
    say(`${broker} ${label}: ${JSON.stringify(result)}`);
    return result;
  } finally {
    await source.delete();
  }
}

async function plainPart(broker: 'rabbitmq' | 'nats'): Promise<Record<string, number>> {
  const source = broker === 'rabbitmq' ? await rabbitQueue() : await natsStream();
  try {
    const publishedPerSec = await publishAll(source);
    const out = { ...(await plainRate(broker, source)), publishedPerSec };
    say(`${broker} plain: ${JSON.stringify(out)}`);
    return out;
  } finally {
    await source.delete();
  }
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : roundTo(((s[m - 1] as number) + (s[m] as number)) / 2, 3);
}

async function main(): Promise<void> {
  if (!RABBITMQ_URL || !NATS_URL)
    throw new Error('FERRY_TEST_RABBITMQ_URL and FERRY_TEST_NATS_URL must name the brokers.');
  const sut = await benchService();
  await sut.start();
  try {
    const home = path.join(sut.dataDir, 'agents');
    const inst = await installAgent(sut, home);
    const agent = await runAgent(sut, home, inst.instance, inst.agentId);
    const file = path.join(sut.dataDir, 'orders.db');
    tables(file);
    const ctx: Ctx = {
      sut,
      agent,
      home,
      instance: inst.instance,
      file,
      dbId: await createConnection(sut, 'Orders', SQLITE, { file, journalMode: 'WAL', synchronous: 'NORMAL' }),
      connections: {
        rabbitmq: await createConnection(sut, 'Broker', MESSAGE_SOURCE_CONNECTORS.rabbitmq.id, rabbitProperties()),
        nats: await createConnection(sut, 'Stream', MESSAGE_SOURCE_CONNECTORS.nats.id, natsProperties()),
      },
    };
    const results: Record<string, unknown> = {};
    for (const broker of BROKERS) {
      const out: Record<string, unknown> = {};
      const rounds: Array<Record<string, unknown>> = [];
      for (let r = 1; r <= ROUNDS && (PARTS.has('plain') || PARTS.has('ferry')); r++) {
        const round: Record<string, unknown> = {};
        if (PARTS.has('plain')) round['plain'] = await plainPart(broker);
        if (PARTS.has('ferry')) round['ferry'] = await part(ctx, broker, `ferry${r}`);
        const plain = round['plain'] as { messagesPerSec?: number } | undefined;
        const ferry = round['ferry'] as { messagesPerSec?: number } | undefined;
        if (plain?.messagesPerSec && ferry?.messagesPerSec)
          round['ratio'] = roundTo(ferry.messagesPerSec / plain.messagesPerSec, 3);
        rounds.push(round);
      }
      out['rounds'] = rounds;
      const ratios = rounds.flatMap((r) => (typeof r['ratio'] === 'number' ? [r['ratio']] : []));
      if (ratios.length > 0) out['medianRatio'] = median(ratios);
      if (PARTS.has('kill')) out['kill'] = await part(ctx, broker, 'kill');
      results[broker] = out;
    }
    process.stdout.write(
      `${JSON.stringify({ bench: 'brokers', n: N, prefetch: PREFETCH, cpus: os.cpus().length, loadavg: os.loadavg(), results }, null, 2)}\n`,
    );
  } finally {
    killAgents();
    await sut.dispose();
  }
}

await main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  killAgents();
  process.exit(1);
});
