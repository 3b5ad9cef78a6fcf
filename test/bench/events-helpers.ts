/**
 * What events.bench.ts is made of: its settings (every scale an environment variable), the
 * Service child seen as a ServiceUnderTest (so the e2e harness can install Agents on it), the
 * callers that POST messages (closed loop and open loop), probes of the Service's store and the
 * target database, and the psql \copy anchor.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { adminRequest, type ServiceUnderTest } from '../e2e/agent/harness.js';
import type { Served, StoreName } from './serve-child.js';

const ENV = process.env;
const num = (name: string, dflt: number): number => {
  const raw = ENV[name];
  const n = raw === undefined || raw === '' ? dflt : Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${raw} is not a number ≥ 0`);
  return n;
};

/** Every scale and switch of the bench (see events.bench.ts' header). */
export const SETTINGS = {
  stores: (ENV['FERRY_BENCH_EVENTS_STORES'] ?? 'sqlite,postgres')
    .split(',')
    .filter(Boolean)
    .map((s): StoreName => {
      if (s !== 'sqlite' && s !== 'postgres') throw new Error(`FERRY_BENCH_EVENTS_STORES: unknown store ${s}`);
      return s;
    }),
  parts: new Set((ENV['FERRY_BENCH_EVENTS_PARTS'] ?? 'accept,paced,drain,latency,request').split(',').filter(Boolean)),
  acceptSeconds: num('FERRY_BENCH_EVENTS_S', 10),
  callers: num('FERRY_BENCH_EVENTS_CALLERS', 32),
  messageBytes: num('FERRY_BENCH_EVENTS_MESSAGE_BYTES', 1024),
  pacedRate: num('FERRY_BENCH_EVENTS_PACED_RATE', 500),
  pacedSeconds: num('FERRY_BENCH_EVENTS_PACED_S', 10),
  queue: num('FERRY_BENCH_EVENTS_QUEUE', 1_000_000),
  prefillBatch: num('FERRY_BENCH_EVENTS_PREFILL_BATCH', 1000),
  prefillCallers: num('FERRY_BENCH_EVENTS_PREFILL_CALLERS', 4),
  latencySamples: num('FERRY_BENCH_EVENTS_LATENCY_SAMPLES', 200),
  latencyPollMs: num('FERRY_BENCH_EVENTS_LATENCY_POLL_MS', 2),
  latencyGapMs: num('FERRY_BENCH_EVENTS_LATENCY_GAP_MS', 300),
  drainTimeoutS: num('FERRY_BENCH_EVENTS_DRAIN_TIMEOUT_S', 3600),
  /** 1: ANALYZE the PostgreSQL store's event_messages after the prefill (what autovacuum would do in time). */
  analyzeQueue: ENV['FERRY_BENCH_EVENTS_ANALYZE'] === '1',
  /** The Service's FERRY_EVENT_QUEUE_LIMIT: far above what any part queues. */
  queueLimit: num('FERRY_BENCH_EVENTS_QUEUE_LIMIT', 1_000_000_000),
  adminUrl:
    ENV['FERRY_BENCH_DATABASE_URL'] ?? ENV['FERRY_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test',
};

export const log = (msg: string): void =>
  void process.stderr.write(`[events ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
export const round = (n: number, places = 0): number => Math.round(n * 10 ** places) / 10 ** places;
export const loadavg = (): number[] => os.loadavg().map((l) => round(l, 2));

/** Fails the bench loudly: a figure whose count is wrong is no figure. */
export function check(cond: boolean, what: string): asserts cond {
  if (!cond) throw new Error(`events bench check failed: ${what}`);
}

export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? 0;
}

/** p50, p90, p99 and max of latencies, in ms with one decimal. */
export function latencyStats(xs: readonly number[]): Record<string, number> {
  return {
    samples: xs.length,
    p50: round(quantile(xs, 0.5), 1),
    p90: round(quantile(xs, 0.9), 1),
    p99: round(quantile(xs, 0.99), 1),
    max: round(Math.max(0, ...xs), 1),
  };
}

/** /proc's clock: 100 ticks a second. */
const TICK_MS = 10;

/** User + system CPU time of one thread (by default the main thread: its ID is the process's), in ms; 0 when gone. */
export function threadCpuMs(pid: number, tid = pid): number {
  try {
    const s = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

/** CPU time the whole machine spent busy (every core; user, nice, system, irq, softirq, steal), in ms. */
export function machineBusyMs(): number {
  try {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f;
    return (user + nice + system + irq + softirq + steal) * TICK_MS;
  } catch {
    return 0;
  }
}

/**
 * The drain's progress, sampled as (time, messages left): how long each tenth of the messages
 * took, as messages/s, so that a queue that gets slower as it empties (or as the target fills)
 * shows as falling tenths.
 */
export function ratesByTenth(samples: ReadonlyArray<{ ms: number; left: number }>, n: number): number[] {
  const out: number[] = [];
  let from = samples[0];
  for (let k = 1; k <= 10 && from; k++) {
    const to = samples.find((s) => s.left <= n - (k * n) / 10);
    if (!to) break;
    out.push(to.ms > from.ms ? round(((from.left - to.left) / (to.ms - from.ms)) * 1000) : 0);
    from = to;
  }
  return out;
}

/** The Service child (serve-child.ts) as the e2e harness' ServiceUnderTest: API calls as its administrator. */
export function remoteSut(served: Served): ServiceUnderTest {
  const agent = new http.Agent({ keepAlive: true });
  return {
    dataDir: served.dataDir,
    url: served.url,
    port: Number(new URL(served.url).port),
    orgId: served.orgId,
    service: undefined,
    start: () => Promise.reject(new Error('the Service runs in its child process')),
    stop: () => Promise.resolve(),
    request: (method, pathAndQuery, opts = {}) => adminRequest(served.url, method, pathAndQuery, opts, agent),
    query: () => {
      throw new Error('the Service runs in its child process: use storeProbe()');
    },
    dispose: () => Promise.resolve(void agent.destroy()),
  };
}

/** The Service's own store, read from the bench's side (its SQLite file read-only, or its PostgreSQL database). */
export interface StoreProbe {
  /** message_endpoints.queued of the endpoint. */
  queued(endpointId: number): Promise<number>;
  /** Rows of event_messages. */
  rows(): Promise<number>;
  /** ANALYZE event_messages (PostgreSQL); false on SQLite, which plans without statistics. */
  analyze(): Promise<boolean>;
  /** PostgreSQL's statistics of event_messages (dead rows, vacuums); undefined on SQLite. */
  queueTableStats(): Promise<Record<string, number> | undefined>;
  close(): Promise<void>;
}

export async function storeProbe(served: Served): Promise<StoreProbe> {
  if (served.databaseUrl) {
    const c = new pg.Client({ connectionString: served.databaseUrl });
    await c.connect();
    const one = async (sql: string, params: unknown[] = []): Promise<number> =>
      Number((await c.query<{ n: string }>(sql, params)).rows[0]?.n ?? NaN);
    return {
      queued: (id) => one('SELECT queued AS n FROM message_endpoints WHERE id = $1', [id]),
      rows: () => one('SELECT count(*) AS n FROM event_messages'),
      analyze: async () => {
        await c.query('ANALYZE event_messages');
        return true;
      },
      queueTableStats: async () => {
        const r = await c.query<Record<string, string>>(
          `SELECT n_live_tup, n_dead_tup, n_tup_del, vacuum_count, autovacuum_count, autoanalyze_count
             FROM pg_stat_user_tables WHERE relname = 'event_messages'`,
        );
        return Object.fromEntries(Object.entries(r.rows[0] ?? {}).map(([k, v]) => [k, Number(v)]));
      },
      close: () => c.end(),
    };
  }
  const db = new Database(path.join(served.dataDir, 'ferry.db'), { readonly: true, fileMustExist: true });
  const queued = db.prepare('SELECT queued AS n FROM message_endpoints WHERE id = ?');
  const rows = db.prepare('SELECT count(*) AS n FROM event_messages');
  return {
    queued: (id) => Promise.resolve(Number((queued.get(id) as { n: number } | undefined)?.n ?? NaN)),
    rows: () => Promise.resolve(Number((rows.get() as { n: number }).n)),
    analyze: () => Promise.resolve(false),
    queueTableStats: () => Promise.resolve(undefined),
    close: () => Promise.resolve(void db.close()),
  };
}

export interface PostAnswer {
  status: number;
  text: string;
}

/** POSTs to one message URL over kept-alive connections (at most `maxSockets` at once). */
export class Poster {
  readonly #agent: http.Agent;
  readonly #url: URL;

  constructor(base: string, pathAndQuery: string, maxSockets: number) {
    this.#agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
    this.#url = new URL(pathAndQuery, base);
  }

  post(body: string): Promise<PostAnswer> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          hostname: this.#url.hostname,
          port: this.#url.port,
          path: this.#url.pathname + this.#url.search,
          method: 'POST',
          agent: this.#agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

/** The message the accept parts send: a JSON object of `bytes` bytes with the Map's fields id, name, amount. */
export function acceptMessage(bytes: number): (i: number) => string {
  const head = (i: number): string =>
    `{"id":${i},"name":"caller message ${i}","amount":${(i % 100_000) / 100},"note":"`;
  return (i) => {
    const h = head(i);
    return `${h}${'x'.repeat(Math.max(0, bytes - h.length - 2))}"}`;
  };
}

/** What the callers of one part got back. */
export interface Tally {
  /** Answers by status. */
  statuses: Record<string, number>;
  /** Messages the 200s said were stored. */
  accepted: number;
  firstError?: string;
}

function tallied(t: Tally, r: PostAnswer): boolean {
  t.statuses[r.status] = (t.statuses[r.status] ?? 0) + 1;
  if (r.status === 200) {
    t.accepted += (JSON.parse(r.text) as { accepted: number }).accepted;
    return true;
  }
  t.firstError ??= `${r.status} ${r.text.slice(0, 300)}`;
  return false;
}

/**
 * Closed loop: `callers` callers each POST one message, wait for the answer, and POST the next,
 * for `seconds`; the rate is the 200s over the time from the first send to the last answer.
 */
export async function closedLoop(
  poster: Poster,
  body: (i: number) => string,
  callers: number,
  seconds: number,
): Promise<Tally & { ms: number; ok: number; perSec: number; latency: Record<string, number> }> {
  const t: Tally = { statuses: {}, accepted: 0 };
  const lat: number[] = [];
  let next = 0;
  let ok = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  let last = t0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < end) {
        const sent = performance.now();
        const r = await poster.post(body(next++));
        last = performance.now();
        lat.push(last - sent);
        if (tallied(t, r)) ok += 1;
      }
    }),
  );
  const ms = last - t0;
  return { ...t, ms: round(ms), ok, perSec: round((ok / ms) * 1000), latency: latencyStats(lat) };
}

/**
 * Open loop: POST i is due at t0 + i / rate whatever the answers before it did; its latency is
 * from the time it was due to its answer, so a stall of the Service counts for every POST that
 * should have left during it (no coordinated omission). `sendLag` is how late the client sent.
 */
export async function openLoop(
  poster: Poster,
  body: (i: number) => string,
  rate: number,
  seconds: number,
): Promise<Tally & { sent: number; latency: Record<string, number>; sendLagMaxMs: number }> {
  const t: Tally = { statuses: {}, accepted: 0 };
  const total = Math.round(rate * seconds);
  const period = 1000 / rate;
  const lat = new Array<number>(total);
  const inflight: Array<Promise<void>> = [];
  let sendLagMax = 0;
  const t0 = performance.now() + 20;
  let i = 0;
  while (i < total) {
    const now = performance.now();
    while (i < total && t0 + i * period <= now) {
      const k = i++;
      const due = t0 + k * period;
      sendLagMax = Math.max(sendLagMax, now - due);
      inflight.push(
        poster.post(body(k)).then((r) => {
          lat[k] = performance.now() - due;
          tallied(t, r);
        }),
      );
    }
    await sleep(1);
  }
  await Promise.all(inflight);
  return { ...t, sent: total, latency: latencyStats(lat), sendLagMaxMs: round(sendLagMax, 1) };
}

/** The drain's messages: id 1…n, name_<id>, amount (id mod 100000) / 100, as the Map reads them. */
export const drainRow = (id: number): { id: number; name: string; amount: number } => ({
  id,
  name: `name_${id}`,
  amount: (id % 100_000) / 100,
});

/** The same rows as CSV (id,name,amount; no header), for the psql anchor. */
export function writeDrainCsv(file: string, n: number): void {
  const fd = fs.openSync(file, 'w');
  let buf = '';
  for (let id = 1; id <= n; id++) {
    const r = drainRow(id);
    buf += `${r.id},${r.name},${r.amount}\n`;
    if (buf.length > 1 << 20) {
      fs.writeSync(fd, buf);
      buf = '';
    }
  }
  fs.writeSync(fd, buf);
  fs.closeSync(fd);
}

/** `\copy table (id, name, amount) FROM csv` through psql, timed from its start to its exit. */
export function psqlCopy(url: string, table: string, csv: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(
      'psql',
      [url, '-v', 'ON_ERROR_STOP=1', '-c', `\\copy ${table} (id, name, amount) FROM '${csv.replace(/'/g, "''")}' CSV`],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`psql failed (${code})`))));
  });
}

/** The settings of the PostgreSQL server that decide how a queue table ages (autovacuum) and what a commit costs. */
export async function pgServerSettings(url: string): Promise<Record<string, string>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings WHERE name IN
         ('server_version', 'autovacuum', 'synchronous_commit', 'fsync', 'shared_buffers', 'max_connections')`,
    );
    return Object.fromEntries(r.rows.map((x) => [x.name, x.setting]));
  } finally {
    await c.end();
  }
}

/** The database name in a PostgreSQL URL. */
export const dbNameOf = (url: string): string => decodeURIComponent(new URL(url).pathname.slice(1));
