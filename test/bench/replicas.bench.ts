/**
 * Service replicas on one PostgreSQL at scale (docs/benchmarks.md "Replicas"): three replicas as
 * real processes behind HAProxy with the shipped configuration, and many simulated Agents (a real
 * WebSocket each, saying hello, heartbeating at the interval the Service states, answering its
 * pings and commands) spread over them.
 *
 *   connect      time to register and to greet every Agent; each replica's RSS per channel
 *   idle         CPU of each replica while its Agents only heartbeat (per 1,000 Agents)
 *   commands     round trip of an Agent command through the API (POST …/agents/{id}/restart):
 *                called on the replica that holds the channel, and on one that does not
 *   api          requests/s of a read-heavy mix through HAProxy with 3 replicas and with 1
 *
 * Needs PostgreSQL (FERRY_TEST_DATABASE_URL) and HAProxy. FERRY_BENCH_AGENTS (default 10,000),
 * FERRY_BENCH_IDLE_S (30), FERRY_BENCH_COMMANDS (400), FERRY_BENCH_API_S (10).
 */
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { WebSocket } from 'ws';
import { CHANNEL_PATH, PROTOCOL_VERSION } from '../../src/protocol/channel.js';
import { ADMIN } from '../helpers/service.js';
import { HAS_HAPROXY, startCluster, type Cluster } from '../e2e/replicas/cluster.js';
import { killAll } from '../e2e/agent/harness.js';

const AGENTS = Number(process.env['FERRY_BENCH_AGENTS'] ?? 10_000);
const IDLE_S = Number(process.env['FERRY_BENCH_IDLE_S'] ?? 30);
const COMMANDS = Number(process.env['FERRY_BENCH_COMMANDS'] ?? 400);
const API_S = Number(process.env['FERRY_BENCH_API_S'] ?? 10);
const AUTH = `Basic ${Buffer.from(`${ADMIN.email}:${ADMIN.password}`).toString('base64')}`;

interface Registered {
  agentId: string;
  agentSecret: string;
  fingerprint: string;
  machineName: string;
}

async function api<T>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: AUTH, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** Runs `fn` over `items` with at most `width` at once. */
async function pool<T>(items: readonly T[], width: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i] as T, i);
      }
    }),
  );
}

/** Registers Agent `i` on replica `i % 3` directly (the API's own path, not what is measured here). */
async function register(c: Cluster, i: number): Promise<Registered> {
  const base = `http://127.0.0.1:${c.replicas[i % c.replicas.length]?.port}`;
  const key = await api<{ agentInstallationKey: string }>(
    base,
    'POST',
    `/v1/orgs/${c.orgId}/agents/provision_onpremise_agent`,
  );
  if (key.status !== 200) throw new Error(`provision: ${key.status} ${JSON.stringify(key.body)}`);
  const fingerprint = `bench-${i}-${Date.now()}`;
  const machineName = `bench-host-${i}`;
  const res = await fetch(`${base}/v1/agent/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      agentInstallationKey: key.body.agentInstallationKey,
      machineName,
      serviceName: 'ferry-agent-1',
      version: '1.2.3',
      fingerprint,
    }),
  });
  if (res.status !== 201) throw new Error(`register: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { agentId: string; agentSecret: string };
  return { agentId: body.agentId, agentSecret: body.agentSecret, fingerprint, machineName };
}

interface Installed {
  connectorId: string;
  version: string;
}

/**
 * A simulated Agent: hello (with the Organization's Connectors installed, as an Agent that ran
 * before has them), heartbeats, pongs, and an `ok` to every command.
 */
function simulate(port: number, a: Registered, installed: readonly Installed[]): Promise<WebSocket> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}${CHANNEL_PATH}`, {
    headers: { authorization: `Bearer ${a.agentId}.${a.agentSecret}` },
  });
  const helloId = `hello-${a.agentId}`;
  return new Promise((resolve, reject) => {
    let beat: NodeJS.Timeout | undefined;
    ws.on('error', reject);
    ws.on('close', () => clearInterval(beat));
    ws.on('open', () =>
      ws.send(
        JSON.stringify({
          id: helloId,
          type: 'hello',
          protocolVersion: PROTOCOL_VERSION,
          version: '1.2.3',
          machineName: a.machineName,
          serviceName: 'ferry-agent-1',
          fingerprint: a.fingerprint,
          pid: process.pid,
          startedAt: new Date().toISOString(),
          status: 'Running',
          installedConnectors: installed,
        }),
      ),
    );
    ws.on('message', (data: Buffer) => {
      const msg = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
      if (msg['re'] === helloId) {
        if (msg['ok'] !== true) return reject(new Error(`hello refused: ${JSON.stringify(msg)}`));
        const ms = (msg['result'] as { heartbeatMs: number }).heartbeatMs;
        beat = setInterval(
          () =>
            ws.send(
              JSON.stringify({
                id: `hb-${Date.now()}`,
                type: 'heartbeat',
                at: new Date().toISOString(),
                status: 'Running',
                rssBytes: 1,
                runningWork: 0,
              }),
            ),
          ms,
        );
        return resolve(ws);
      }
      if (msg['type'] === 'ping') return ws.send(JSON.stringify({ type: 'pong', at: new Date().toISOString() }));
      if (typeof msg['type'] === 'string' && typeof msg['id'] === 'string')
        ws.send(JSON.stringify({ re: msg['id'], ok: true, result: {} }));
    });
  });
}

/** CPU time (user + system) of a process so far, in ms, from /proc. */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(m?.[1] ?? 0) / 102.4) / 10;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round((s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0) * 10) / 10;
};

/** CPU ms (user + system) so far of every process whose command line `name` matches (PostgreSQL's backends, HAProxy). */
function cpuMsOf(name: RegExp): number {
  let ms = 0;
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').match(name)) ms += cpuMs(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return ms;
}

const PG = /^(postgres:|\/usr\/lib\/postgresql\/)/;
const LB = /^(\S*\/)?haproxy\0/;

interface ApiRate {
  perS: number;
  /** CPU ms per request: each replica process, PostgreSQL (all its processes), HAProxy, the client. */
  cpuMsPerRequest: { replicas: number; postgres: number; haproxy: number; client: number };
}

/** Requests/s of a read-heavy mix through the load balancer, 32 clients for `seconds`, and where its CPU went. */
async function apiRate(c: Cluster, agentIds: readonly string[], seconds: number, pids: number[]): Promise<ApiRate> {
  const paths = [
    `/v1/orgs/${c.orgId}`,
    `/v1/orgs/${c.orgId}/agents?limit=50`,
    ...agentIds.slice(0, 50).map((id) => `/v1/orgs/${c.orgId}/agents/${id}`),
  ];
  const end = Date.now() + seconds * 1000;
  let done = 0;
  let failed = 0;
  const cpu0 = { replicas: pids.map(cpuMs), pg: cpuMsOf(PG), lb: cpuMsOf(LB), me: process.cpuUsage() };
  await Promise.all(
    Array.from({ length: 32 }, async (_, k) => {
      for (let n = k; Date.now() < end; n++) {
        const res = await api(c.url, 'GET', paths[n % paths.length] as string);
        if (res.status === 200) done += 1;
        else failed += 1;
      }
    }),
  );
  if (failed) throw new Error(`${failed} API calls failed`);
  const me = process.cpuUsage(cpu0.me);
  const per = (ms: number): number => Math.round((ms / done) * 100) / 100;
  return {
    perS: Math.round(done / seconds),
    cpuMsPerRequest: {
      replicas: per(pids.reduce((n, pid, i) => n + cpuMs(pid) - (cpu0.replicas[i] as number), 0)),
      postgres: per(cpuMsOf(PG) - cpu0.pg),
      haproxy: per(cpuMsOf(LB) - cpu0.lb),
      client: per((me.user + me.system) / 1000),
    },
  };
}

async function main(): Promise<void> {
  if (!process.env['FERRY_TEST_DATABASE_URL'] || !HAS_HAPROXY)
    throw new Error('replicas.bench needs FERRY_TEST_DATABASE_URL (PostgreSQL) and HAProxy');
  const cluster = await startCluster(3, { FERRY_LOG_LEVEL: 'error' });
  const sockets: WebSocket[] = [];
  try {
    const pids = cluster.replicas.map((r) => r.proc?.pid as number);
    // One call on each replica first: its verified-credentials cache takes the burst that follows
    // (32 first logins at once of one account would count as guesses).
    for (const r of cluster.replicas) await api(`http://127.0.0.1:${r.port}`, 'GET', `/v1/orgs/${cluster.orgId}`);
    const t0 = Date.now();
    const agents: Registered[] = new Array<Registered>(AGENTS);
    await pool(
      Array.from({ length: AGENTS }, (_, i) => i),
      32,
      async (i) => void (agents[i] = await register(cluster, i)),
    );
    const registerS = (Date.now() - t0) / 1000;
    const connectors = await api<Array<{ id: string; version: string }>>(
      cluster.url,
      'GET',
      `/v1/orgs/${cluster.orgId}/connectors`,
    );
    const installed = connectors.body.map((c) => ({ connectorId: c.id, version: c.version }));
    const rssBefore = pids.map(rssMiB);
    const t1 = Date.now();
    await pool(agents, 200, async (a, i) => {
      sockets.push(await simulate(cluster.replicas[i % 3]?.port as number, a, installed));
    });
    const connectS = (Date.now() - t1) / 1000;
    // Let the connects' garbage go before the idle window.
    await new Promise((r) => setTimeout(r, 5_000));
    const rssAfter = pids.map(rssMiB);
    const cpu0 = pids.map(cpuMs);
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const idleCpu = pids.map((pid, i) => (cpuMs(pid) - (cpu0[i] as number)) / (IDLE_S * 1000));
    const perReplica = AGENTS / 3;

    // Command round trips: on the holder (i % 3) and on the next replica.
    const same: number[] = [];
    const cross: number[] = [];
    const samples: Array<{ at: number; ms: number; cross: boolean }> = [];
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const tc = performance.now();
    for (let k = 0; k < COMMANDS; k++) {
      const i = Math.floor((k * AGENTS) / COMMANDS);
      const a = agents[i] as Registered;
      const holder = i % 3;
      const on = k % 2 === 0 ? holder : (holder + 1) % 3;
      const t = performance.now();
      const res = await api(
        `http://127.0.0.1:${cluster.replicas[on]?.port}`,
        'POST',
        `/v1/orgs/${cluster.orgId}/agents/${a.agentId}/restart`,
      );
      if (res.status !== 200) {
        const rows = await cluster.query('SELECT * FROM agent_channels WHERE agent_id = $1', [a.agentId]);
        throw new Error(
          `restart #${k} of Agent ${i} on replica ${on} (holder ${holder}): ${res.status} ${JSON.stringify(res.body)}; lease ${JSON.stringify(rows)}; socket ${sockets[i]?.readyState}`,
        );
      }
      (on === holder ? same : cross).push(performance.now() - t);
      samples.push({ at: Math.round(t - tc), ms: Math.round(performance.now() - t), cross: on !== holder });
    }
    loop.disable();
    const slowest = samples.sort((x, y) => y.ms - x.ms).slice(0, 8);

    const ids = agents.map((a) => a.agentId);
    const three = await apiRate(cluster, ids, API_S, pids);
    await cluster.balance(1, 'disable');
    await cluster.balance(2, 'disable');
    const one = await apiRate(cluster, ids, API_S, pids);
    await cluster.balance(1, 'enable');
    await cluster.balance(2, 'enable');

    const result = {
      bench: 'replicas',
      agents: AGENTS,
      replicas: 3,
      cores: (await import('node:os')).cpus().length,
      registerPerS: Math.round(AGENTS / registerS),
      connectS: Math.round(connectS * 10) / 10,
      channelsPerS: Math.round(AGENTS / connectS),
      rssMiBBefore: rssBefore,
      rssMiBAfter: rssAfter,
      idleCorePct: idleCpu.map((c) => Math.round(c * 1000) / 10),
      idleCorePctPer1000Agents: idleCpu.map((c) => Math.round(((c * 1000) / perReplica) * 1000) / 10),
      commandMs: {
        sameReplica: { p50: pct(same, 50), p99: pct(same, 99) },
        crossReplica: { p50: pct(cross, 50), p99: pct(cross, 99) },
        slowest,
        benchLoopDelayMs: { p99: Math.round(loop.percentile(99) / 1e5) / 10, max: Math.round(loop.max / 1e5) / 10 },
      },
      apiRequestsPerS: {
        threeReplicas: three.perS,
        oneReplica: one.perS,
        ratio: Math.round((three.perS / one.perS) * 100) / 100,
      },
      apiCpuMsPerRequest: { threeReplicas: three.cpuMsPerRequest, oneReplica: one.cpuMsPerRequest },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const ws of sockets) ws.terminate();
    await cluster.dispose();
    killAll();
  }
}

await main();
