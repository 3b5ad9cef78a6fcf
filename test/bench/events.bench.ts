/**
 * Event Solutions (issue 33 "Figures"; docs in service/events/*.ts, src/solutions/message-pump.ts):
 * outside systems POST messages to a Message Map's eventUrl, the Service commits them (group
 * commit) and answers 200, and a real Agent running the IntegrationEvent Solution takes them in
 * batches of 20 and writes them with the Map. Per Service store (SQLite, PostgreSQL):
 *
 *   accept    FERRY_BENCH_EVENTS_CALLERS (32) callers in a closed loop, each POSTing a
 *             FERRY_BENCH_EVENTS_MESSAGE_BYTES (1024) JSON object and waiting for its 200, for
 *             FERRY_BENCH_EVENTS_S (10) seconds, over kept-alive connections; the Agent is
 *             stopped, so the queue only grows. Messages committed per second. Goal ≥ 3,000/s.
 *   paced     the same message at FERRY_BENCH_EVENTS_PACED_RATE (500) per second for
 *             FERRY_BENCH_EVENTS_PACED_S (10) s, open loop (each POST due at a fixed time, its
 *             latency measured from that time); p50/p99. Goal p99 < 50 ms.
 *   drain     FERRY_BENCH_EVENTS_QUEUE (1,000,000) messages {id, name, amount} queued by POSTs of
 *             JSON arrays of FERRY_BENCH_EVENTS_PREFILL_BATCH (1,000), FERRY_BENCH_EVENTS_PREFILL_CALLERS
 *             (4) at a time, with the Agent stopped; then the Agent starts and its Map (Wait For
 *             Message id,name,amount → Upsert into a PostgreSQL table of a fresh database) drains
 *             them: messages/s from the first row written (its clock_timestamp() default) until
 *             the Service's queue count is 0; the target then holds exactly ids 1…N, each with the
 *             psql anchor's values. Anchor: the same rows as CSV through `psql \copy` into an
 *             identical table, in the same run. Goal ≥ 5,000 messages/s.
 *   latency   on the idle system (the Agent running, the queue empty), one message POSTed, the
 *             target polled every FERRY_BENCH_EVENTS_LATENCY_POLL_MS (2) ms until its row is there;
 *             FERRY_BENCH_EVENTS_LATENCY_SAMPLES (200) in a row, FERRY_BENCH_EVENTS_LATENCY_GAP_MS
 *             (300) apart. Goal median < 200 ms.
 *
 *   npx tsx test/bench/events.bench.ts        → one JSON document on stdout, progress on stderr
 *
 *   request   request → reply of a trivial request/reply Map: p50/p99 one at a time, and the requests
 *             one Agent answers per second with 16 callers (partRequest). Goal p50 < 50 ms, p99 < 200 ms.
 *
 * FERRY_BENCH_EVENTS_STORES (sqlite,postgres), FERRY_BENCH_EVENTS_PARTS (accept,paced,drain,latency,request),
 * FERRY_BENCH_EVENTS_QUEUE_LIMIT (the Service's eventQueueLimit, 1e9), FERRY_BENCH_EVENTS_DRAIN_TIMEOUT_S
 * (3600), FERRY_BENCH_EVENTS_ANALYZE=1 (ANALYZE the PostgreSQL store's event_messages after the
 * prefill, as autovacuum would in time: a test server may run without autovacuum),
 * FERRY_BENCH_DATABASE_URL (else FERRY_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test):
 * a server where it may create and drop databases (the target's, and the PostgreSQL store's).
 * BENCH_NODE_FLAGS / BENCH_AGENT_CPU_PROF=DIR as in solutions.bench.ts (the Agent's Node flags, a
 * --cpu-prof profile of its worker); run this file with `node --cpu-prof --import tsx` to profile
 * the Service child as well (it inherits the flags).
 *
 * The Service runs in a child process (serve-child.ts), so that its CPU is its own and the callers
 * do not share its event loop. Each part reports `cpu`: CPU ms of the Service, the Agent's worker,
 * this process (the callers) and the PostgreSQL backends of each database; `…MainThreadBusy`, the
 * share of the wall time the event loop's thread ran (near 1: that thread bounds the figure); and
 * `othersCpuMs`, what the rest of the machine took of its cores meanwhile (/proc/stat), since the
 * figures mean little on a machine others load. Needs `psql` on the PATH.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { ServiceUnderTest } from '../e2e/agent/harness.js';
import {
  acceptMessage,
  check,
  closedLoop,
  dbNameOf,
  drainRow,
  latencyStats,
  loadavg,
  machineBusyMs,
  log,
  openLoop,
  pgServerSettings,
  Poster,
  psqlCopy,
  remoteSut,
  ratesByTenth,
  round,
  SETTINGS,
  sleep,
  storeProbe,
  threadCpuMs,
  writeDrainCsv,
  type StoreProbe,
} from './events-helpers.js';
import { killAgents, procCpuMs } from './proc.js';
import { startServiceChild, type ServiceChild, type StoreName } from './serve-child.js';
import { installAgent, runAgent, spawnAgent, type AgentProc } from './solutions/agents.js';
import { PgCpu } from './solutions/measure.js';
import { pgExec } from './solutions/postgres.js';
import { api, createConnection, messageSolution, prepare } from './solutions/service.js';
import { POSTGRES_CONNECTOR } from './solutions/settings.js';

const TARGET_DDL = (t: string): string =>
  `CREATE TABLE ${t} (id integer PRIMARY KEY, name text NOT NULL, amount numeric(12,2),
     written_at timestamptz NOT NULL DEFAULT clock_timestamp())`;

/** One store's Service, its Agent, the Event Solution and the databases it is measured with. */
interface Ctx {
  store: StoreName;
  svc: ServiceChild;
  sut: ServiceUnderTest;
  probe: StoreProbe;
  home: string;
  agentId: string;
  instance: number;
  /** The running Agent, when one runs. */
  agent: AgentProc | undefined;
  agentWorkerPid: number;
  S: string;
  /** The message URL's path and query (eventUrl with ?accesstoken=). */
  messagePath: string;
  endpointId: number;
  target: pg.Client;
  targetUrl: string;
  csv: string;
  pgStore: PgCpu | undefined;
  pgTarget: PgCpu;
}

/** CPU (ms) used from now until the returned function is called, by each process of the bench. */
function cpuMeter(ctx: Ctx): () => Record<string, number> {
  const svcPid = ctx.svc.child.pid ?? -1;
  const agentPid = ctx.agentWorkerPid;
  const svc0 = procCpuMs(svcPid);
  const svcMain0 = threadCpuMs(svcPid);
  const agent0 = agentPid > 0 ? procCpuMs(agentPid) : 0;
  const agentMain0 = agentPid > 0 ? threadCpuMs(agentPid) : 0;
  const t0 = performance.now();
  const machine0 = machineBusyMs();
  const self0 = process.cpuUsage();
  const pgStore = ctx.pgStore?.meter();
  const pgTarget = ctx.pgTarget.meter();
  return () => {
    const self = process.cpuUsage(self0);
    const wall = performance.now() - t0;
    const machine = machineBusyMs() - machine0;
    const svcMain = threadCpuMs(svcPid) - svcMain0;
    const agentMain = agentPid > 0 ? threadCpuMs(agentPid) - agentMain0 : 0;
    const used: Record<string, number> = {
      wallMs: round(wall),
      serviceCpuMs: procCpuMs(svcPid) - svc0,
      // The share of the wall time the event loop's thread ran: near 1, that thread bounds the figure.
      serviceMainThreadBusy: round(svcMain / wall, 2),
      ...(agentPid > 0
        ? { agentCpuMs: procCpuMs(agentPid) - agent0, agentMainThreadBusy: round(agentMain / wall, 2) }
        : {}),
      benchProcessCpuMs: round((self.user + self.system) / 1000),
      ...(pgStore ? { pgStoreCpuMs: pgStore() } : {}),
      pgTargetCpuMs: pgTarget(),
    };
    const ours = Object.entries(used).reduce((n, [k, v]) => (k.endsWith('CpuMs') ? n + v : n), 0);
    // What the rest of the machine (other engineers' processes) took of its cores meanwhile.
    return { ...used, machineBusyMs: machine, othersCpuMs: Math.max(0, machine - ours), load1: loadavg()[0] ?? 0 };
  };
}

/** The Agent worker's PID, once the supervisor has announced it. */
async function workerPidOf(proc: AgentProc): Promise<number> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const m = [...proc.output().matchAll(/worker started pid (\d+)/g)].at(-1);
    if (m?.[1]) return Number(m[1]);
    if (Date.now() > deadline) throw new Error(`the Agent announced no worker:\n${proc.output()}`);
    await sleep(20);
  }
}

async function stopAgent(ctx: Ctx): Promise<void> {
  await ctx.agent?.stop();
  ctx.agent = undefined;
  ctx.agentWorkerPid = -1;
}

/** A Service on `store`, an Agent, a PostgreSQL Connection to the target and the Event Solution, prepared. */
async function setUp(store: StoreName, targetUrl: string, csv: string, dir: string): Promise<Ctx> {
  const svc = await startServiceChild(store, { eventQueueLimit: SETTINGS.queueLimit, cloudAgents: 'off' });
  const sut = remoteSut(svc.served);
  const home = fs.mkdtempSync(path.join(dir, `agent-${store}-`));
  const inst = await installAgent(sut, home);
  const agent = await runAgent(sut, home, inst.instance, inst.agentId);
  log(`${store}: Service at ${svc.served.url} (pid ${svc.child.pid}), Agent worker pid ${agent.workerPid}`);
  const conn = await createConnection(sut, 'Events target', POSTGRES_CONNECTOR, {
    connectionString: targetUrl,
    schemas: 'public',
  });
  const made = await messageSolution(sut, {
    name: 'Events bench',
    agentId: inst.agentId,
    connectionId: conn,
    entity: 'ev_rows',
    fields: ['id', 'name', 'amount'],
  });
  const S = made.path;
  const target = new pg.Client({ connectionString: targetUrl });
  await target.connect();
  const ctx: Ctx = {
    store,
    svc,
    sut,
    probe: await storeProbe(svc.served),
    home,
    agentId: inst.agentId,
    instance: inst.instance,
    agent: agent.proc,
    agentWorkerPid: agent.workerPid,
    S,
    messagePath: made.messagePath,
    endpointId: 0,
    target,
    targetUrl,
    csv,
    pgStore: svc.served.databaseUrl ? new PgCpu(dbNameOf(svc.served.databaseUrl)) : undefined,
    pgTarget: new PgCpu(dbNameOf(targetUrl)),
  };
  // The Agent stops once the Solution is on it: the parts start it when they want it.
  await stopAgent(ctx);
  // One message finds the endpoint's ID (and warms the route); it is cleared at once.
  const poster = new Poster(svc.served.url, ctx.messagePath, 1);
  const first = await poster.post(JSON.stringify(drainRow(0)));
  poster.close();
  check(first.status === 200, `the first message POST answered ${first.status} ${first.text}`);
  ctx.endpointId = (JSON.parse(first.text) as { endpointId: number }).endpointId;
  await clearQueue(ctx);
  return ctx;
}

/** PUT …/endpoints/{id}/clear; the queue is empty after it. */
async function clearQueue(ctx: Ctx): Promise<void> {
  await api(ctx.sut, 'PUT', `/v1/orgs/${ctx.sut.orgId}/endpoints/${ctx.endpointId}/clear`);
  const left = await ctx.probe.rows();
  check(left === 0 && (await ctx.probe.queued(ctx.endpointId)) === 0, `${left} messages left after the clear`);
}

/** The store holds what the 200s said it stored, no more and no less. */
async function checkQueued(ctx: Ctx, accepted: number, what: string): Promise<void> {
  const rows = await ctx.probe.rows();
  const queued = await ctx.probe.queued(ctx.endpointId);
  check(
    rows === accepted && queued === accepted,
    `${what}: 200s said ${accepted}, the store holds ${rows} (queued ${queued})`,
  );
}

async function partAccept(ctx: Ctx): Promise<Record<string, unknown>> {
  const poster = new Poster(ctx.svc.served.url, ctx.messagePath, SETTINGS.callers);
  try {
    // A short warm-up (connections, JIT), not counted; cleared with the rest.
    await closedLoop(poster, acceptMessage(SETTINGS.messageBytes), SETTINGS.callers, 1);
    await clearQueue(ctx);
    const cpu = cpuMeter(ctx);
    const r = await closedLoop(poster, acceptMessage(SETTINGS.messageBytes), SETTINGS.callers, SETTINGS.acceptSeconds);
    const used = cpu();
    check(r.ok > 0 && r.firstError === undefined, `accept: ${JSON.stringify(r.statuses)}, first error ${r.firstError}`);
    await checkQueued(ctx, r.accepted, 'accept');
    log(`${ctx.store} accept: ${r.perSec.toLocaleString('en')} messages/s (${r.ok} in ${r.ms} ms)`);
    const perMsg = (ms: number | undefined): number => round(((ms ?? 0) * 1000) / r.ok, 1);
    return {
      callers: SETTINGS.callers,
      messageBytes: SETTINGS.messageBytes,
      seconds: SETTINGS.acceptSeconds,
      accepted: r.ok,
      ms: r.ms,
      perSec: r.perSec,
      closedLoopLatencyMs: r.latency,
      cpu: used,
      cpuUsPerMessage: {
        service: perMsg(used['serviceCpuMs']),
        callers: perMsg(used['benchProcessCpuMs']),
        ...(used['pgStoreCpuMs'] !== undefined ? { pgStore: perMsg(used['pgStoreCpuMs']) } : {}),
      },
      goal: { perSec: 3000, met: r.perSec >= 3000 },
    };
  } finally {
    poster.close();
    await clearQueue(ctx);
  }
}

async function partPaced(ctx: Ctx): Promise<Record<string, unknown>> {
  const poster = new Poster(ctx.svc.served.url, ctx.messagePath, 256);
  try {
    const cpu = cpuMeter(ctx);
    const r = await openLoop(poster, acceptMessage(SETTINGS.messageBytes), SETTINGS.pacedRate, SETTINGS.pacedSeconds);
    const used = cpu();
    const ok = r.statuses['200'] ?? 0;
    check(
      ok === r.sent && r.firstError === undefined,
      `paced: ${JSON.stringify(r.statuses)}, first error ${r.firstError}`,
    );
    await checkQueued(ctx, r.accepted, 'paced');
    log(`${ctx.store} paced ${SETTINGS.pacedRate}/s: p50 ${r.latency['p50']} ms, p99 ${r.latency['p99']} ms`);
    const p99 = r.latency['p99'] ?? Infinity;
    return {
      rate: SETTINGS.pacedRate,
      seconds: SETTINGS.pacedSeconds,
      sent: r.sent,
      latencyMs: r.latency,
      clientSendLagMaxMs: r.sendLagMaxMs,
      cpu: used,
      goal: { p99Ms: 50, met: p99 < 50 },
    };
  } finally {
    poster.close();
    await clearQueue(ctx);
  }
}

/** Queues messages 1…N by POSTs of arrays, `prefillCallers` at a time. */
async function prefill(ctx: Ctx): Promise<Record<string, number>> {
  const n = SETTINGS.queue;
  const batch = Math.max(1, SETTINGS.prefillBatch);
  const poster = new Poster(ctx.svc.served.url, ctx.messagePath, SETTINGS.prefillCallers);
  let next = 1;
  let accepted = 0;
  const t0 = performance.now();
  try {
    await Promise.all(
      Array.from({ length: SETTINGS.prefillCallers }, async () => {
        while (next <= n) {
          const from = next;
          next = Math.min(n + 1, next + batch);
          const body = JSON.stringify(Array.from({ length: next - from }, (_, i) => drainRow(from + i)));
          const r = await poster.post(body);
          check(r.status === 200, `prefill POST answered ${r.status} ${r.text.slice(0, 300)}`);
          accepted += (JSON.parse(r.text) as { accepted: number }).accepted;
        }
      }),
    );
  } finally {
    poster.close();
  }
  const ms = performance.now() - t0;
  await checkQueued(ctx, n, 'prefill');
  check(accepted === n, `prefill: 200s said ${accepted} of ${n}`);
  return { messages: n, postsOf: batch, ms: round(ms), perSec: round((n / ms) * 1000) };
}

/** The target holds ids 1…N exactly, each with the values the psql anchor loaded. */
async function checkTarget(ctx: Ctx, n: number): Promise<void> {
  const r = (
    await ctx.target.query<{ n: string; d: string; lo: number | null; hi: number | null; same: string }>(
      `SELECT count(*) AS n, count(DISTINCT r.id) AS d, min(r.id) AS lo, max(r.id) AS hi,
              count(c.id) FILTER (WHERE c.name = r.name AND c.amount = r.amount) AS same
         FROM ev_rows r LEFT JOIN ev_copy c USING (id)`,
    )
  ).rows[0];
  const got = { n: Number(r?.n), distinct: Number(r?.d), min: r?.lo, max: r?.hi, sameAsAnchor: Number(r?.same) };
  check(
    got.n === n && got.distinct === n && got.min === 1 && got.max === n && got.sameAsAnchor === n,
    `drain target: ${JSON.stringify(got)}, expected ${n} rows 1…${n} as the anchor's`,
  );
}

async function partDrain(ctx: Ctx): Promise<Record<string, unknown>> {
  const n = SETTINGS.queue;
  await ctx.target.query('TRUNCATE ev_rows, ev_copy');
  await ctx.target.query('CHECKPOINT');
  const psqlMs = await psqlCopy(ctx.targetUrl, 'ev_copy', ctx.csv);
  const psqlPerSec = round((n / psqlMs) * 1000);
  log(`${ctx.store} drain anchor: psql \\copy ${psqlPerSec.toLocaleString('en')} rows/s (${round(psqlMs)} ms)`);

  log(`${ctx.store} drain: queueing ${n.toLocaleString('en')} messages`);
  const filled = await prefill(ctx);
  log(`${ctx.store} drain: queued at ${filled['perSec']?.toLocaleString('en')} messages/s`);
  const analyzed = SETTINGS.analyzeQueue && (await ctx.probe.analyze());
  await ctx.target.query('CHECKPOINT');

  const spawned = Date.now();
  ctx.agent = await spawnAgent(ctx.home, ctx.instance);
  ctx.agentWorkerPid = await workerPidOf(ctx.agent);
  // The first row written is the start of the drain: the Agent's start-up is not counted.
  const deadline = Date.now() + SETTINGS.drainTimeoutS * 1000;
  let firstMs: number | undefined;
  while (firstMs === undefined) {
    check(Date.now() < deadline, `no row written within ${SETTINGS.drainTimeoutS} s:\n${ctx.agent.output()}`);
    const r = await ctx.target.query<{ ms: number | null }>(
      'SELECT (extract(epoch FROM min(written_at)) * 1000)::float8 AS ms FROM ev_rows',
    );
    firstMs = r.rows[0]?.ms ?? undefined;
    if (firstMs === undefined) await sleep(20);
  }
  const cpu = cpuMeter(ctx);
  let queued = n;
  const progress = [{ ms: firstMs, left: n }];
  while (queued > 0) {
    check(Date.now() < deadline, `the queue still holds ${queued} after ${SETTINGS.drainTimeoutS} s`);
    await sleep(50);
    queued = await ctx.probe.queued(ctx.endpointId);
    progress.push({ ms: Date.now(), left: queued });
  }
  const emptyAt = Date.now();
  const used = cpu();
  check((await ctx.probe.rows()) === 0, 'the queue count is 0 but event_messages still has rows');
  const last = (
    await ctx.target.query<{ ms: number }>(
      'SELECT (extract(epoch FROM max(written_at)) * 1000)::float8 AS ms FROM ev_rows',
    )
  ).rows[0]?.ms;
  await checkTarget(ctx, n);
  const stats = await ctx.probe.queueTableStats();
  const ms = round(emptyAt - firstMs);
  const perSec = round((n / ms) * 1000);
  const runs = (
    await api<Array<{ recordsProcessed: number; result: string }>>(ctx.sut, 'GET', `${ctx.S}/history?limit=1000`)
  ).body;
  log(`${ctx.store} drain: ${perSec.toLocaleString('en')} messages/s (${ms} ms), ${runs.length} executions`);
  const perMsg = (cpuMs: number | undefined): number => round(((cpuMs ?? 0) * 1000) / n, 1);
  return {
    messages: n,
    prefill: {
      ...filled,
      how: `POSTs of JSON arrays of ${SETTINGS.prefillBatch}, ${SETTINGS.prefillCallers} at a time`,
    },
    queueAnalyzedAfterPrefill: analyzed,
    agentStartToFirstRowMs: round(firstMs - spawned),
    ms,
    perSec,
    firstToLastRowPerSec: last ? round((n / (last - firstMs)) * 1000) : null,
    perSecByTenth: ratesByTenth(progress, n),
    ...(stats ? { pgQueueTableAtEnd: stats } : {}),
    executions: runs.length,
    executionsRecordsProcessed: runs.reduce((s, e) => s + e.recordsProcessed, 0),
    psql: { ms: round(psqlMs), perSec: psqlPerSec },
    drainVsPsql: round(perSec / psqlPerSec, 3),
    cpu: used,
    cpuUsPerMessage: {
      agent: perMsg(used['agentCpuMs']),
      service: perMsg(used['serviceCpuMs']),
      pgTarget: perMsg(used['pgTargetCpuMs']),
      ...(used['pgStoreCpuMs'] !== undefined ? { pgStore: perMsg(used['pgStoreCpuMs']) } : {}),
    },
    goal: { perSec: 5000, met: perSec >= 5000 },
  };
}

/** Message → row on the idle system: the Agent running, its queue empty. */
async function partLatency(ctx: Ctx): Promise<Record<string, unknown>> {
  if (!ctx.agent) {
    ctx.agent = await spawnAgent(ctx.home, ctx.instance);
    ctx.agentWorkerPid = await workerPidOf(ctx.agent);
    await sleep(5000);
  }
  const poster = new Poster(ctx.svc.served.url, ctx.messagePath, 1);
  const base = SETTINGS.queue + 1000;
  const toRow: number[] = [];
  const postMs: number[] = [];
  await sleep(SETTINGS.latencyGapMs + 1000);
  const cpu = cpuMeter(ctx);
  try {
    for (let k = 1; k <= SETTINGS.latencySamples; k++) {
      const id = base + k;
      const t0 = performance.now();
      const r = await poster.post(JSON.stringify(drainRow(id)));
      postMs.push(performance.now() - t0);
      check(r.status === 200, `latency POST answered ${r.status} ${r.text}`);
      const deadline = t0 + 60_000;
      for (;;) {
        const found = await ctx.target.query('SELECT 1 FROM ev_rows WHERE id = $1', [id]);
        if (found.rowCount) break;
        check(performance.now() < deadline, `message ${id} not in the target within 60 s`);
        await sleep(SETTINGS.latencyPollMs);
      }
      toRow.push(performance.now() - t0);
      await sleep(SETTINGS.latencyGapMs);
    }
  } finally {
    poster.close();
  }
  const used = cpu();
  const stats = latencyStats(toRow);
  log(`${ctx.store} latency message → row: p50 ${stats['p50']} ms, p99 ${stats['p99']} ms`);
  const p50 = stats['p50'] ?? Infinity;
  return {
    samples: SETTINGS.latencySamples,
    pollMs: SETTINGS.latencyPollMs,
    gapMs: SETTINGS.latencyGapMs,
    messageToRowMs: stats,
    postAnswerMs: latencyStats(postMs),
    cpu: used,
    goal: { p50Ms: 200, met: p50 < 200 },
  };
}

/**
 * Request → reply of a trivial request/reply Map (Wait For Request id → Build Reply → Send Reply) on
 * the idle system: FERRY_BENCH_EVENTS_REQUESTS (200) one after another (p50/p99; goal p50 < 50 ms,
 * p99 < 200 ms), then FERRY_BENCH_EVENTS_REQUEST_CALLERS (16) callers in a closed loop for
 * FERRY_BENCH_EVENTS_REQUEST_S (5) seconds: the requests one Agent answers per second.
 */
async function partRequest(ctx: Ctx): Promise<Record<string, unknown>> {
  if (!ctx.agent) {
    ctx.agent = await spawnAgent(ctx.home, ctx.instance);
    ctx.agentWorkerPid = await workerPidOf(ctx.agent);
    await sleep(5000);
  }
  const map = await api<{ id: number }>(ctx.sut, 'POST', `${ctx.S}/maps/advanced`, {
    version: '3.0',
    name: 'Echo',
    mapType: 'IntegrationServicesAdvancedRequestResponseMap',
    blocks: [
      {
        blockId: '33333333-2222-4111-8111-000000000001',
        name: 'Req',
        blockType: 'WaitForRequest',
        action: 'None',
        fields: ['id'],
      },
      {
        blockId: '33333333-2222-4111-8111-000000000002',
        name: 'Answer',
        blockType: 'BuildReply',
        action: 'None',
        fieldMappings: [
          { targetField: 'id', targetFormula: 'Req.id' },
          { targetField: 'ok', targetFormula: 'TRUE' },
        ],
      },
      {
        blockId: '33333333-2222-4111-8111-000000000003',
        name: 'Send',
        blockType: 'SendReply',
        action: 'None',
        source: 'Answer',
      },
    ],
  });
  await prepare(ctx.sut, ctx.S.split('/').at(-1) as string);
  await sleep(2000);
  const requestPath = ctx.messagePath.replace(/\/messages\/\d+/, `/requests/${map.body.id}`);
  const samples = Number(process.env['FERRY_BENCH_EVENTS_REQUESTS'] ?? 200);
  const callers = Number(process.env['FERRY_BENCH_EVENTS_REQUEST_CALLERS'] ?? 16);
  const seconds = Number(process.env['FERRY_BENCH_EVENTS_REQUEST_S'] ?? 5);
  const one = new Poster(ctx.svc.served.url, requestPath, 1);
  const ms: number[] = [];
  try {
    for (let k = 0; k < samples; k++) {
      const t0 = performance.now();
      const r = await one.post(JSON.stringify({ id: k }));
      ms.push(performance.now() - t0);
      check(r.status === 200 && r.text === JSON.stringify({ id: k, ok: true }), `request ${k}: ${r.status} ${r.text}`);
    }
  } finally {
    one.close();
  }
  const many = new Poster(ctx.svc.served.url, requestPath, callers);
  const cpu = cpuMeter(ctx);
  const end = performance.now() + seconds * 1000;
  let answered = 0;
  try {
    await Promise.all(
      Array.from({ length: callers }, async (_, c) => {
        for (let k = 0; performance.now() < end; k++) {
          const r = await many.post(JSON.stringify({ id: c * 1_000_000 + k }));
          check(r.status === 200, `request answered ${r.status} ${r.text}`);
          answered += 1;
        }
      }),
    );
  } finally {
    many.close();
  }
  const used = cpu();
  const stats = latencyStats(ms);
  const perSec = round(answered / seconds, 1);
  log(
    `${ctx.store} request → reply: p50 ${stats['p50']} ms, p99 ${stats['p99']} ms; ${perSec}/s with ${callers} callers`,
  );
  return {
    sequential: { samples, replyMs: stats },
    closedLoop: { callers, seconds, perSec },
    cpu: used,
    goal: { p50Ms: 50, p99Ms: 200, met: (stats['p50'] ?? Infinity) < 50 && (stats['p99'] ?? Infinity) < 200 },
  };
}

async function runStore(
  store: StoreName,
  targetUrl: string,
  csv: string,
  dir: string,
): Promise<Record<string, unknown>> {
  const ctx = await setUp(store, targetUrl, csv, dir);
  const out: Record<string, unknown> = { store };
  try {
    if (SETTINGS.parts.has('accept')) out['accept'] = await partAccept(ctx);
    if (SETTINGS.parts.has('paced')) out['paced'] = await partPaced(ctx);
    if (SETTINGS.parts.has('drain')) out['drain'] = await partDrain(ctx);
    if (SETTINGS.parts.has('latency')) out['latency'] = await partLatency(ctx);
    if (SETTINGS.parts.has('request')) out['request'] = await partRequest(ctx);
  } finally {
    await stopAgent(ctx).catch(() => undefined);
    killAgents();
    ctx.pgStore?.close();
    ctx.pgTarget.close();
    await ctx.probe.close();
    await ctx.target.end();
    await ctx.sut.dispose();
    await ctx.svc.stop();
  }
  return out;
}

/** The figures and their goals, per store. */
function summary(stores: Record<string, unknown>): Record<string, unknown> {
  const pick = (o: unknown, ...keys: string[]): unknown =>
    keys.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), o);
  return Object.fromEntries(
    Object.entries(stores).map(([store, r]) => [
      store,
      {
        acceptPerSec: pick(r, 'accept', 'perSec'),
        acceptGoalMet: pick(r, 'accept', 'goal', 'met'),
        pacedP50Ms: pick(r, 'paced', 'latencyMs', 'p50'),
        pacedP99Ms: pick(r, 'paced', 'latencyMs', 'p99'),
        pacedGoalMet: pick(r, 'paced', 'goal', 'met'),
        drainPerSec: pick(r, 'drain', 'perSec'),
        psqlPerSec: pick(r, 'drain', 'psql', 'perSec'),
        drainVsPsql: pick(r, 'drain', 'drainVsPsql'),
        drainGoalMet: pick(r, 'drain', 'goal', 'met'),
        messageToRowP50Ms: pick(r, 'latency', 'messageToRowMs', 'p50'),
        messageToRowP99Ms: pick(r, 'latency', 'messageToRowMs', 'p99'),
        latencyGoalMet: pick(r, 'latency', 'goal', 'met'),
        requestP50Ms: pick(r, 'request', 'sequential', 'replyMs', 'p50'),
        requestP99Ms: pick(r, 'request', 'sequential', 'replyMs', 'p99'),
        requestsPerSec: pick(r, 'request', 'closedLoop', 'perSec'),
        requestGoalMet: pick(r, 'request', 'goal', 'met'),
      },
    ]),
  );
}

async function main(): Promise<void> {
  // serve-child.ts makes the PostgreSQL store's database on the server this names.
  process.env['FERRY_TEST_DATABASE_URL'] ??= SETTINGS.adminUrl;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-events-bench-'));
  const dbName = `ferry_ev_bench_${randomBytes(4).toString('hex')}`;
  const url = new URL(SETTINGS.adminUrl);
  url.pathname = `/${dbName}`;
  const targetUrl = url.toString();
  const out: Record<string, unknown> = {
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadAtStart: loadavg() },
    postgresServer: await pgServerSettings(SETTINGS.adminUrl),
    settings: { ...SETTINGS, parts: [...SETTINGS.parts], adminUrl: undefined },
  };
  const loads: number[] = [];
  const loadTimer = setInterval(() => loads.push(loadavg()[0] ?? 0), 5_000);
  await pgExec(SETTINGS.adminUrl, `CREATE DATABASE ${dbName}`);
  try {
    // The target exists before the Connection's metadata is first loaded (prepare reads it).
    await pgExec(targetUrl, `${TARGET_DDL('ev_rows')}; ${TARGET_DDL('ev_copy')}`);
    const csv = path.join(dir, 'drain.csv');
    if (SETTINGS.parts.has('drain')) writeDrainCsv(csv, SETTINGS.queue);
    const stores: Record<string, unknown> = {};
    for (const store of SETTINGS.stores) stores[store] = await runStore(store, targetUrl, csv, dir);
    out['stores'] = stores;
    out['summary'] = summary(stores);
  } finally {
    clearInterval(loadTimer);
    killAgents();
    await pgExec(SETTINGS.adminUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((err: unknown) =>
      log(`could not drop ${dbName}: ${String(err)}`),
    );
    fs.rmSync(dir, { recursive: true, force: true });
  }
  out['load1'] = {
    min: Math.min(...loads, loadavg()[0] ?? 0),
    max: Math.max(...loads, loadavg()[0] ?? 0),
    atEnd: loadavg(),
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

await main();
