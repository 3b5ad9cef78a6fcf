/**
 * The cost per request of rate limits and failed-login counts shared by replicas on one PostgreSQL
 * (docs/benchmarks.md "Rate limits shared across replicas"):
 *
 *   FERRY_TEST_DATABASE_URL=postgres://… npx tsx test/bench/rate-limit.bench.ts
 *
 * 1. In process, on a fresh database: µs per `take()` of the in-memory limiter (the anchor) and of
 *    the shared one (one upsert of `limit_windows`), one caller at a time and 16 at once, on one
 *    Organization (every call on one row) and on 16; the same for the login throttle's work on every
 *    authenticated call (checkPair and succeeded of cached credentials: a SELECT and a DELETE).
 *    Besides wall time: this process's CPU and that of the database backends serving it, per call;
 *    and take() with the table UNLOGGED (as migrated) against the same table LOGGED.
 * 2. Over HTTP: one Service on PostgreSQL in a child process (serve-child.ts) with
 *    FERRY_LIMIT_COUNTS=database (the default there) against the same with `memory`, alternating,
 *    BENCH_ROUNDS rounds: BENCH_REQUESTS calls of GET /v1/orgs/{id}/securityrules (Basic auth,
 *    Security Rule, rate limit: every shared count) and of GET /v1/orgs (Basic auth only: the login
 *    throttle's two statements, no rate limit), 8 in flight; requests/s, p50/p99, and the Service's
 *    and its database backends' CPU per request.
 *
 * Prints one JSON document; medians over the rounds; ratios are shared ÷ in-memory of the same
 * round. The load average at the start and the end says how busy the machine was.
 */
import http from 'node:http';
import os from 'node:os';
import pg from 'pg';
import type { LoginThrottling } from '../../service/auth/login-throttle.js';
import { LoginThrottle } from '../../service/auth/login-throttle.js';
import { SharedLoginThrottle } from '../../service/auth/shared-login-throttle.js';
import type { ServiceConfigInput } from '../../service/config.js';
import { MemoryRateLimiter, SharedRateLimiter, type RateLimiter } from '../../service/http/rate-limit.js';
import { LimitWindows } from '../../service/store/limit-windows.js';
import { openStore } from '../../service/store/store.js';
import { createTestDatabase } from '../helpers/stores.js';
import { procCpuMs } from './proc.js';
import { benchRequest, startServiceChild } from './serve-child.js';

const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];
const TAKES = Number(process.env['BENCH_TAKES'] ?? 5_000);
const REQUESTS = Number(process.env['BENCH_REQUESTS'] ?? 4_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const HTTP_IN_FLIGHT = 8;
const NO_LIMIT = 1_000_000_000;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const round1 = (x: number): number => Math.round(x * 10) / 10;
const ratio = (a: number, b: number): number => Math.round((a / b) * 100) / 100;
const percentile = (sorted: number[], p: number): number =>
  round1(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0);

/** The CPU (ms) of the database backends serving database `name`, read through `admin`, from now on. */
async function backendCpu(admin: pg.Client, name: string): Promise<() => Promise<number>> {
  const pids = async (): Promise<number[]> =>
    (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name])).rows.map(
      (r) => r.pid,
    );
  const before = new Map((await pids()).map((pid) => [pid, procCpuMs(pid)]));
  return async () => {
    let ms = 0;
    for (const pid of new Set([...before.keys(), ...(await pids())])) ms += procCpuMs(pid) - (before.get(pid) ?? 0);
    return ms;
  };
}

/** Runs `n` calls, `concurrency` at a time; answers µs of wall time and of this process's CPU per call. */
async function perCall(n: number, concurrency: number, call: (i: number) => Promise<void>) {
  let next = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await call(next++);
    }),
  );
  const wallUs = ((performance.now() - start) * 1000) / n;
  const used = process.cpuUsage(cpu);
  return { wallUs, nodeCpuUs: (used.user + used.system) / n };
}

interface Scenario {
  name: string;
  concurrency: number;
  call: (subject: { limiter: RateLimiter; throttle: LoginThrottling }, i: number) => Promise<void>;
}

const SCENARIOS: Scenario[] = [
  { name: 'take(), 1 caller', concurrency: 1, call: (s) => s.limiter.take(1) },
  { name: 'take(), 16 callers, one Organization', concurrency: 16, call: (s) => s.limiter.take(1) },
  { name: 'take(), 16 callers, 16 Organizations', concurrency: 16, call: (s, i) => s.limiter.take(1 + (i % 16)) },
  {
    name: 'login checkPair + succeeded (cached credentials), 1 caller',
    concurrency: 1,
    call: async (s, i) => {
      await s.throttle.checkPair(`user${i % 16}@bench.test`, '127.0.0.1');
      await s.throttle.succeeded(`user${i % 16}@bench.test`, '127.0.0.1', false);
    },
  },
  {
    name: 'login checkPair + succeeded (cached credentials), 16 callers',
    concurrency: 16,
    call: async (s, i) => {
      await s.throttle.checkPair(`user${i % 16}@bench.test`, '127.0.0.1');
      await s.throttle.succeeded(`user${i % 16}@bench.test`, '127.0.0.1', false);
    },
  },
];

/** Part 1: the limiter and the throttle in this process, in memory against PostgreSQL. */
async function inProcess(admin: pg.Client) {
  const database = await createTestDatabase();
  const store = await openStore({ databaseUrl: database.url, dataDir: os.tmpdir(), preinstalledConnectors: [] });
  const name = new URL(database.url).pathname.slice(1);
  try {
    const windows = new LimitWindows(store.db);
    const memory = { limiter: new MemoryRateLimiter(NO_LIMIT, NO_LIMIT), throttle: new LoginThrottle() };
    const shared = {
      limiter: new SharedRateLimiter(windows, NO_LIMIT, NO_LIMIT),
      throttle: new SharedLoginThrottle(windows),
    };
    // Warm-up: the pool's connections opened, the statements planned.
    await perCall(500, 16, (i) => shared.limiter.take(1 + (i % 16)));
    const results = [];
    for (const s of SCENARIOS) {
      const rounds: Array<{ memory: number; shared: number; nodeCpu: number; dbCpu: number }> = [];
      for (let r = 0; r < ROUNDS; r++) {
        const mem = await perCall(TAKES * 10, s.concurrency, (i) => s.call(memory, i));
        const dbCpu = await backendCpu(admin, name);
        const sh = await perCall(TAKES, s.concurrency, (i) => s.call(shared, i));
        rounds.push({ memory: mem.wallUs, shared: sh.wallUs, nodeCpu: sh.nodeCpuUs, dbCpu: (await dbCpu()) * 1000 });
      }
      const m = median(rounds.map((x) => x.memory));
      const sh = median(rounds.map((x) => x.shared));
      results.push({
        scenario: s.name,
        inMemoryUsPerCall: Math.round(m * 100) / 100,
        sharedUsPerCall: round1(sh),
        sharedNodeCpuUsPerCall: round1(median(rounds.map((x) => x.nodeCpu))),
        sharedDatabaseCpuUsPerCall: round1(median(rounds.map((x) => x.dbCpu)) / TAKES),
        addedUsPerCall: round1(sh - m),
      });
    }
    return { scenarios: results, tableLoggedOrNot: await loggedOrNot(shared.limiter, database.url) };
  } finally {
    await store.close();
    await database.drop();
  }
}

/**
 * What UNLOGGED buys (migration 030): µs per take() with `limit_windows` as it is and turned into an
 * ordinary (logged) table, whose every commit waits for its WAL to reach the disk; alternating.
 */
async function loggedOrNot(limiter: RateLimiter, url: string) {
  const rounds: Array<Record<string, number>> = [];
  const table = new pg.Client({ connectionString: url });
  await table.connect();
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const row: Record<string, number> = {};
      for (const persistence of ['LOGGED', 'UNLOGGED']) {
        await table.query(`ALTER TABLE limit_windows SET ${persistence}`);
        for (const concurrency of [1, 16]) {
          const { wallUs } = await perCall(TAKES, concurrency, (i) => limiter.take(1 + (i % 16)));
          row[`${persistence.toLowerCase()}, ${concurrency} caller${concurrency > 1 ? 's' : ''}`] = wallUs;
        }
      }
      rounds.push(row);
    }
  } finally {
    await table.end();
  }
  const keys = Object.keys(rounds[0] ?? {});
  return Object.fromEntries(keys.map((k) => [`${k}: µs per take()`, round1(median(rounds.map((x) => x[k] ?? 0)))]));
}

interface HttpRun {
  rps: number;
  p50: number;
  p99: number;
  serviceCpuUs: number;
  dbCpuUs: number;
}

/** REQUESTS calls of `path` with HTTP_IN_FLIGHT in flight, after a warm-up. */
async function load(base: string, path: string, pids: { service: number }, db: () => Promise<() => Promise<number>>) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: HTTP_IN_FLIGHT });
  const call = async (): Promise<void> => {
    const res = await benchRequest(base, 'GET', path, { agent });
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${res.text.slice(0, 300)}`);
  };
  try {
    await perCall(300, HTTP_IN_FLIGHT, call);
    const latencies: number[] = [];
    const cpu0 = procCpuMs(pids.service);
    const dbCpu = await db();
    const { wallUs } = await perCall(REQUESTS, HTTP_IN_FLIGHT, async () => {
      const t = performance.now();
      await call();
      latencies.push(performance.now() - t);
    });
    latencies.sort((a, b) => a - b);
    return {
      rps: Math.round(1e6 / wallUs),
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      serviceCpuUs: round1(((procCpuMs(pids.service) - cpu0) * 1000) / REQUESTS),
      dbCpuUs: round1(((await dbCpu()) * 1000) / REQUESTS),
    } satisfies HttpRun;
  } finally {
    agent.destroy();
  }
}

/** One Service on PostgreSQL with the limits kept as `limitCounts` says: both reads measured. */
async function serviceRun(admin: pg.Client, limitCounts: 'database' | 'memory') {
  const config: Partial<ServiceConfigInput> = { limitCounts };
  const svc = await startServiceChild('postgres', config);
  try {
    const { url, orgId, databaseUrl } = svc.served;
    const name = new URL(databaseUrl ?? '').pathname.slice(1);
    const pids = { service: svc.child.pid ?? 0 };
    const db = () => backendCpu(admin, name);
    return {
      orgRead: await load(url, `/v1/orgs/${orgId}/securityrules`, pids, db),
      userRead: await load(url, '/v1/orgs', pids, db),
    };
  } finally {
    await svc.stop();
  }
}

/** Part 2: the Service over HTTP, its limits in the database against in memory, alternating. */
async function overHttp(admin: pg.Client) {
  const runs: Array<{
    database: Awaited<ReturnType<typeof serviceRun>>;
    memory: Awaited<ReturnType<typeof serviceRun>>;
  }> = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternating which goes first, so that neither always meets a warmer database.
    if (r % 2 === 0) {
      const database = await serviceRun(admin, 'database');
      runs.push({ database, memory: await serviceRun(admin, 'memory') });
    } else {
      const memory = await serviceRun(admin, 'memory');
      runs.push({ database: await serviceRun(admin, 'database'), memory });
    }
  }
  const summary = (read: 'orgRead' | 'userRead') => {
    const of = (mode: 'database' | 'memory', k: keyof HttpRun): number => median(runs.map((x) => x[mode][read][k]));
    const keys: Array<keyof HttpRun> = ['rps', 'p50', 'p99', 'serviceCpuUs', 'dbCpuUs'];
    const pick = (mode: 'database' | 'memory') => Object.fromEntries(keys.map((k) => [k, of(mode, k)]));
    return {
      inMemory: pick('memory'),
      shared: pick('database'),
      throughputSharedOverMemory: median(runs.map((x) => ratio(x.database[read].rps, x.memory[read].rps))),
      addedUsPerRequest: round1(median(runs.map((x) => 1e6 / x.database[read].rps - 1e6 / x.memory[read].rps))),
    };
  };
  return {
    'GET /v1/orgs/{id}/securityrules (auth + rate limit)': summary('orgRead'),
    'GET /v1/orgs (auth only)': summary('userRead'),
    rounds: runs,
  };
}

async function main(): Promise<void> {
  if (!PG_URL) {
    process.stderr.write('rate-limit.bench.ts measures limits shared on PostgreSQL: set FERRY_TEST_DATABASE_URL.\n');
    return;
  }
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    const loadStart = os.loadavg().map(round1);
    const takes = await inProcess(admin);
    const httpRuns = await overHttp(admin);
    process.stdout.write(
      `${JSON.stringify(
        {
          machine: { cpus: os.cpus().length, node: process.version, loadStart, loadEnd: os.loadavg().map(round1) },
          settings: { takes: TAKES, requests: REQUESTS, rounds: ROUNDS, httpInFlight: HTTP_IN_FLIGHT },
          inProcess: takes,
          overHttp: httpRuns,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await admin.end();
  }
}

await main();
