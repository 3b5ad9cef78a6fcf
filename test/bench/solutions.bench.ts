/**
 * Solutions through the API, end to end — a real Service, a real Agent process, Connections with
 * encrypted properties, prepare, start and History — against anchors measured in the same run on
 * the same machine and data (docs/benchmarks.md "Solutions"):
 *
 *   rs         a Replication Solution, SQLite → PostgreSQL, BENCH_ROWS rows (`updated_at` is its
 *              net-change stamp), into a database without the table; timed from POST …/start
 *              until the poll of History sees the execution's end. Anchors: the Connector-level
 *              transfer() of the same rows into the same (truncated) table, in a child process as
 *              replicate.bench.ts does, and psql \copy of the same rows from CSV; beside them
 *              replicate() in a child process (what the Agent's run does, without the Agent),
 *              so that the control plane's cost shows apart from the replication engine's. Then
              the same Replication without checkForBulk (SPEC.md's default, what public clients
              send): rsDefaultVsRs, goal ≥ 0.25.
 *   is         an Integration Solution, one Map: CSV (the same rows) → PostgreSQL, Query → Create
 *              with 10 plain field copies (Q.id … Q.note), timed the same way. Anchors: psql
 *              \copy of the same CSV, and the engine in a child process (openRun + runMap, what
 *              `ferry map run` does), so that the control plane's cost shows.
 *   failing    the same Map into a table whose CHECK refuses 1 record in 10; its errors through
 *              GET …/history/{id}/errors (Total-Count, a page at a deep offset, timed).
 *   latency    POST …/start → the first row in the target (a clock_timestamp() default column
 *              against the client's clock: one machine), BENCH_STARTS starts of a Map over a
 *              10-row CSV; also the execution's own start and end.
 *   schedules  (BENCH_SCHEDULES=1, or BENCH_SCENARIOS=schedules) BENCH_SCHEDULE_SOLUTIONS
 *              Solutions (default 1000) on BENCH_SCHEDULE_AGENTS Agent processes (10, instances of
 *              one home), every minute for BENCH_SCHEDULE_MINUTES minutes (10), with a Service
 *              restart and an Agent restart in the middle: every due time fired exactly once?
 *
 *   npx tsx test/bench/solutions.bench.ts      → JSON on stdout, progress on stderr
 *
 * BENCH_ROWS (default 1000000), BENCH_ROUNDS (3: rounds of anchor(s) then the Solution, the
 * median reported), BENCH_FAILING_ROWS and BENCH_FAILING_ROUNDS (default the same), BENCH_STARTS
 * (20), BENCH_SCENARIOS (default rs,is,failing,latency),
 * BENCH_NODE_FLAGS (default `--max-semi-space-size=128`, the flag docs/connectors.md recommends
 * for the Agent: on the Node command line of the Agent, which its worker inherits, and of the
 * anchors' child processes),
 * BENCH_AGENT_CPU_PROF=DIR (the Agent worker writes a --cpu-prof profile there when it stops),
 * BENCH_RS_SOURCE_INDEX=1 (an index on julianday(updated_at) at the RS source: its first copy
 * reads in stamp order without a sort),
 * FERRY_BENCH_DATABASE_URL (else FERRY_TEST_DATABASE_URL, else
 * postgres://postgres@127.0.0.1:5432/test): a server where it may create and drop a database.
 * The Service runs in this process (test/e2e/agent/harness.ts, SQLite store, production settings
 * but the rate limits lifted); the Agents are real `ferry agent run` processes with their
 * production settings. Needs `psql` on the PATH.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import pino from 'pino';
import type * as Harness from '../e2e/agent/harness.js';
import type { ServiceUnderTest } from '../e2e/agent/harness.js';
import { agentProcs, benchNodeFlags, killAgents, procCpuMs, procRssMiB } from './proc.js';

const SELF = fileURLToPath(import.meta.url);
const CONNECTORS_DIR = path.resolve(path.dirname(SELF), '../../connectors');
const ENV = process.env;
const ROWS = Number(ENV['BENCH_ROWS'] ?? 1_000_000);
const ROUNDS = Number(ENV['BENCH_ROUNDS'] ?? 3);
const STARTS = Number(ENV['BENCH_STARTS'] ?? 20);
/**
 * The failing run reads the first BENCH_FAILING_ROWS rows (default all of them) in
 * BENCH_FAILING_ROUNDS rounds (default BENCH_ROUNDS); its rate is compared with the clean run's.
 * Fewer rows keep a run short where refused records are slow to write.
 */
const FAILING_ROWS = Number(ENV['BENCH_FAILING_ROWS'] ?? ROWS);
const FAILING_ROUNDS = Number(ENV['BENCH_FAILING_ROUNDS'] ?? ROUNDS);
const SCENARIOS = new Set((ENV['BENCH_SCENARIOS'] ?? `rs,is,failing,latency${ENV['BENCH_SCHEDULES'] === '1' ? ',schedules' : ''}`).split(',').filter(Boolean));
const SCHED = {
  solutions: Number(ENV['BENCH_SCHEDULE_SOLUTIONS'] ?? 1000),
  agents: Number(ENV['BENCH_SCHEDULE_AGENTS'] ?? 10),
  minutes: Number(ENV['BENCH_SCHEDULE_MINUTES'] ?? 10),
};
const NODE_FLAGS = benchNodeFlags(ENV['BENCH_NODE_FLAGS']);
const CPU_PROF = ENV['BENCH_AGENT_CPU_PROF'];
/**
 * BENCH_RS_SOURCE_INDEX=1: an index on julianday(updated_at) at the source — the sqlite Connector
 * orders datetimes by julianday() — so the replication's ordered first read needs no sort.
 */
const RS_SOURCE_INDEX = ENV['BENCH_RS_SOURCE_INDEX'] === '1';
const ADMIN_URL = ENV['FERRY_BENCH_DATABASE_URL'] ?? ENV['FERRY_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
/** The bulkLimit of the csv, sqlite and postgres Connectors: what the Maps and the transfer use. */
const BATCH = 10_000;
/**
 * How often History is polled for a run's end. Each poll costs the Service (in this process) about
 * 2–3 ms of CPU, which the run's Agent shares the two cores with: 100 ms keeps that under 3% of a
 * core, and the end is seen at most 100 ms late (the rate to the execution's own stop is reported too).
 */
const POLL_MS = 100;

const CSV_CONNECTOR = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const POSTGRES_CONNECTOR = '18cc2a91-e317-4972-9c24-be9fc63775ab';
const SQLITE_CONNECTOR = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';

const FIELDS = [
  ['id', 'integer'],
  ['name', 'string'],
  ['email', 'string'],
  ['amount', 'decimal'],
  ['qty', 'integer'],
  ['price', 'double'],
  ['active', 'boolean'],
  ['created', 'date'],
  ['updated_at', 'datetime'],
  ['note', 'string'],
] as const;
const COLUMNS = FIELDS.map((f) => f[0]);
const SQLITE_DDL = `CREATE TABLE rows (id INTEGER PRIMARY KEY, name TEXT, email TEXT, amount DECIMAL(12,2), qty INTEGER,
  price REAL, active BOOLEAN, created DATE, updated_at DATETIME, note TEXT)`;
const PG_COLUMNS = `id integer PRIMARY KEY, name text, email text, amount numeric(12,2), qty integer, price double precision,
  active boolean, created date, updated_at timestamp, note text`;

const log = (msg: string): void => void process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const r3 = (n: number): number => Math.round(n * 1000) / 1000;
const round = (n: number): number => Math.round(n);
function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  if (s.length === 0) return 0;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}
function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? 0;
}
const loadavg = (): number[] => os.loadavg().map((l) => Math.round(l * 100) / 100);

/**
 * CPU time of the PostgreSQL backends of one database (the server is shared with other engineers'
 * tests): every backend whose process title names the database is sampled every 250 ms, so the
 * CPU of one that exits between two samples is counted up to the last sample.
 */
class PgCpu {
  readonly #last = new Map<number, number>();
  readonly #timer: NodeJS.Timeout;
  constructor(private readonly dbName: string) {
    this.#timer = setInterval(() => this.scan(), 250);
    this.#timer.unref();
  }
  /** Samples every backend of the database now; answers the ones alive. */
  scan(): Set<number> {
    const alive = new Set<number>();
    for (const e of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(e)) continue;
      try {
        if (fs.readFileSync(`/proc/${e}/comm`, 'utf8').trim() !== 'postgres') continue;
        if (!fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(` ${this.dbName} `)) continue;
        const pid = Number(e);
        this.#last.set(pid, procCpuMs(pid));
        alive.add(pid);
      } catch {
        // Gone meanwhile.
      }
    }
    return alive;
  }
  /** A meter: the backends' CPU from now until it is read. */
  meter(): () => number {
    this.scan();
    const base = new Map(this.#last);
    return () => {
      this.scan();
      let total = 0;
      for (const [pid, ms] of this.#last) total += ms - (base.get(pid) ?? 0);
      return total;
    };
  }
  close(): void {
    clearInterval(this.#timer);
  }
}
let pgCpu: PgCpu | undefined;

/** CPU used meanwhile by PostgreSQL's backends, this process (the Service and the bench's polling) and the Agent's worker. */
function cpuMeter(agentPid?: number): () => { pgCpuMs: number; serviceCpuMs: number; agentCpuMs?: number; agentPeakRssMiB?: number; agentRssAfterMiB?: number } {
  const pg0 = pgCpu?.meter();
  const self0 = process.cpuUsage();
  const agent0 = agentPid ? procCpuMs(agentPid) : 0;
  // Resets the Agent's peak RSS (VmHWM), so that the peak read at the end is this step's.
  if (agentPid) fs.writeFileSync(`/proc/${agentPid}/clear_refs`, '5');
  return () => {
    const self = process.cpuUsage(self0);
    return {
      pgCpuMs: pg0 ? pg0() : 0,
      serviceCpuMs: round((self.user + self.system) / 1000),
      ...(agentPid ? { agentCpuMs: procCpuMs(agentPid) - agent0, agentPeakRssMiB: procRssMiB(agentPid), agentRssAfterMiB: procRssMiB(agentPid, 'VmRSS') } : {}),
    };
  };
}

// ── PostgreSQL ─────────────────────────────────────────────────────────────────

async function pgExec(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}
async function pgRows<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

// ── data ───────────────────────────────────────────────────────────────────────

interface Data {
  dir: string;
  sqliteFile: string;
  /** The folder of the CSV Connection: rows.csv (with a header) and schema.json. */
  csvFolder: string;
  csvFile: string;
  /** A folder with tiny.csv (10 rows) for the start latency. */
  tinyFolder: string;
}

/** The same ROWS rows into SQLite (the RS source) and a CSV file (the IS source and the anchors'). */
function generate(dir: string): Data {
  const data: Data = { dir, sqliteFile: path.join(dir, 'source.db'), csvFolder: path.join(dir, 'csv'), csvFile: path.join(dir, 'csv', 'rows.csv'), tinyFolder: path.join(dir, 'tiny') };
  fs.mkdirSync(data.csvFolder);
  fs.mkdirSync(data.tinyFolder);
  const db = new Database(data.sqliteFile);
  db.pragma('journal_mode = WAL');
  db.exec(SQLITE_DDL);
  const ins = db.prepare('INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
  const fd = fs.openSync(data.csvFile, 'w');
  fs.writeSync(fd, `${COLUMNS.join(',')}\n`);
  const day0 = Date.UTC(2020, 0, 1);
  let buf = '';
  db.transaction(() => {
    for (let i = 1; i <= ROWS; i++) {
      const created = new Date(day0 + (i % 3650) * 86_400_000).toISOString().slice(0, 10);
      const updated = new Date(day0 + i * 37_000).toISOString().slice(0, 19);
      const note = i % 20 === 0 ? `note, with a comma ${i}` : `note ${i}`;
      const amount = `${Math.floor(i % 100_000) / 100}`;
      const price = Number(((i * 0.37) % 1000).toFixed(3));
      ins.run(i, `name_${i}`, `user${i}@example.com`, amount, i % 1000, price, i % 2 === 0 ? 1 : 0, created, updated, note);
      buf += `${i},name_${i},user${i}@example.com,${amount},${i % 1000},${price},${i % 2 === 0},${created},${updated},"${note}"\n`;
      if (buf.length > 1 << 20) {
        fs.writeSync(fd, buf);
        buf = '';
      }
    }
  })();
  fs.writeSync(fd, buf);
  fs.closeSync(fd);
  if (RS_SOURCE_INDEX) db.exec('CREATE INDEX rows_updated_at ON rows (julianday(updated_at))');
  db.close();
  const schema = (file: string, fields: ReadonlyArray<readonly [string, string]>) => ({ entities: { [file]: { fields: fields.map(([name, type]) => ({ name, type, primaryKey: name === 'id' })) } } });
  // head.csv: the first FAILING_ROWS rows, for the failing run (when it reads fewer than all).
  if (FAILING_ROWS < ROWS) {
    const text = fs.readFileSync(data.csvFile, 'utf8');
    let end = 0;
    for (let i = 0; i <= FAILING_ROWS && end >= 0; i++) end = text.indexOf('\n', end) + 1;
    fs.writeFileSync(path.join(data.csvFolder, 'head.csv'), text.slice(0, end));
  }
  const described = schema('rows.csv', FIELDS);
  fs.writeFileSync(path.join(data.csvFolder, 'schema.json'), JSON.stringify({ entities: { ...described.entities, ...(FAILING_ROWS < ROWS ? { 'head.csv': described.entities['rows.csv'] } : {}) } }));
  fs.writeFileSync(path.join(data.tinyFolder, 'tiny.csv'), `id\n${Array.from({ length: 10 }, (_, i) => i + 1).join('\n')}\n`);
  fs.writeFileSync(path.join(data.tinyFolder, 'schema.json'), JSON.stringify(schema('tiny.csv', [['id', 'integer']])));
  return data;
}

// ── the Service's API ──────────────────────────────────────────────────────────

interface Execution {
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

async function api<T>(sut: ServiceUnderTest, method: string, p: string, body?: unknown, expected: number[] = [200, 201, 204]): Promise<{ body: T; headers: Record<string, string | string[] | undefined> }> {
  const res = await sut.request<T>(method, p, body === undefined ? {} : { body });
  if (!expected.includes(res.status)) throw new Error(`${method} ${p} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`);
  return { body: res.body, headers: res.headers };
}

async function poll<T>(what: string, probe: () => Promise<T | undefined>, ms: number, every = POLL_MS): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

/** Creates a Connection with its properties encrypted under the Organization's crypto token, as clients do. */
async function createConnection(sut: ServiceUnderTest, name: string, connectorId: string, properties: Record<string, string>): Promise<string> {
  const { encryptProperty } = await import('../../service/connections/properties-crypto.js');
  const token = (await api<{ apiCryptoToken: string }>(sut, 'GET', `/v1/orgs/${sut.orgId}/SecuritySettings`)).body.apiCryptoToken;
  const res = await api<{ id: string }>(sut, 'POST', `/v1/orgs/${sut.orgId}/connections`, {
    name,
    connectorId,
    color: '#FF112233',
    properties: Object.entries(properties).map(([key, value]) => ({ key, value: encryptProperty(value, token) })),
  });
  return res.body.id;
}

/** Prepares the Solution and waits for the job; throws when it fails. */
async function prepare(sut: ServiceUnderTest, solutionId: string): Promise<void> {
  const S = `/v1/orgs/${sut.orgId}/solutions/${solutionId}`;
  const job = await api<{ id: string }>(sut, 'POST', `${S}/prepare`);
  const done = await poll(
    'the prepare job',
    async () => {
      const res = await api<{ isComplete: boolean; hasError: boolean; message: string; mapErrorModels: unknown[] }>(sut, 'GET', `${S}/prepare/${job.body.id}`);
      return res.body.isComplete ? res.body : undefined;
    },
    300_000,
    100,
  );
  if (done.hasError) throw new Error(`prepare of ${solutionId} failed: ${done.message} ${JSON.stringify(done.mapErrorModels)}`);
}

/**
 * The Service under test, in this process: test/e2e/agent/harness.ts' serviceUnderTest with the
 * production settings (heartbeats every 30 s, not every 200 ms) but the rate limits lifted and no
 * Cloud Agents. Same data folder and port when started again.
 */
async function benchService(): Promise<ServiceUnderTest> {
  const h = await harness();
  const [{ buildService }, { parseServiceConfig }] = await Promise.all([import('../../service/build-service.js'), import('../../service/config.js')]);
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

interface Agent {
  agentId: string;
  home: string;
  instance: number;
  proc: AgentProc;
  /** The worker process (the Agent itself; `ferry agent run` is its supervisor). */
  workerPid: number;
}

async function harness(): Promise<typeof Harness> {
  return import('../e2e/agent/harness.js');
}

/** A `ferry agent run` process of this bench (its own process group, killed by PID at the end). */
interface AgentProc {
  readonly pid: number;
  output(): string;
  readonly exited: Promise<number | string>;
  /** SIGTERM (the graceful stop: a --cpu-prof profile is written), then the exit. */
  stop(): Promise<number | string>;
}

/**
 * `ferry agent run` as test/e2e/agent/harness.ts starts it, but with BENCH_NODE_FLAGS (and
 * --cpu-prof when asked) on Node's command line: the supervisor starts its worker with the same
 * flags (they are not all allowed in NODE_OPTIONS). The log level is the production default.
 */
async function spawnAgent(home: string, instance: number): Promise<AgentProc> {
  const { ROOT } = await harness();
  const flags = [...NODE_FLAGS, ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(CPU_PROF)}`] : [])];
  const p = spawn(process.execPath, [...flags, '--import', 'tsx', 'src/cli/main.ts', 'agent', 'run', '--home', home, '--instance', String(instance)], {
    cwd: ROOT,
    // The Agent's production settings (heartbeat, ping, back-off, watchdog), at the info log level.
    env: { ...ENV, FERRY_AGENT_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  agentProcs.add(p);
  let out = '';
  p.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  p.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | string>((resolve) => {
    p.once('exit', (code, signal) => {
      agentProcs.delete(p);
      resolve(code ?? signal ?? -1);
    });
  });
  return {
    pid: p.pid ?? -1,
    output: () => out,
    exited,
    async stop() {
      if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
      return exited;
    },
  };
}


/** Starts `ferry agent run` for an installed instance and waits until it is Running with its three Connectors. */
async function runAgent(sut: ServiceUnderTest, home: string, instance: number, agentId: string): Promise<Agent> {
  const h = await harness();
  const proc = await spawnAgent(home, instance);
  try {
    await h.untilStatus(sut, agentId, 'Running', 180_000);
    await h.until(
      'the three connectors on the Agent',
      async () => {
        const res = await sut.request<{ installedConnectors: unknown[] }>('GET', `/v1/orgs/${sut.orgId}/agents/${agentId}`);
        return res.body.installedConnectors.length === 3 ? true : undefined;
      },
      180_000,
    );
  } catch (err) {
    process.stderr.write(proc.output());
    throw err;
  }
  const workerPid = Number([...proc.output().matchAll(/worker started pid (\d+)/g)].at(-1)?.[1] ?? -1);
  return { agentId, home, instance, proc, workerPid };
}

async function installAgent(sut: ServiceUnderTest, home: string): Promise<{ agentId: string; instance: number }> {
  const h = await harness();
  const inst = await h.install(sut, home);
  return { agentId: inst.agentId, instance: Number(/(\d+)$/.exec(inst.serviceName)?.[1] ?? 1) };
}

interface ApiRun {
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
async function startAndWait(sut: ServiceUnderTest, solutionId: string, timeoutMs = 1_800_000): Promise<ApiRun> {
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

// ── anchors in child processes ─────────────────────────────────────────────────

interface ChildResult {
  case: string;
  rows: number;
  failed: number;
  /** The timed work inside the child. */
  ms: number;
  rowsPerSec: number;
  cpuMs: number;
  peakRssMiB: number;
  /** The child process from spawn to exit (start-up included). */
  processMs?: number;
}

interface ChildConfig {
  sqliteFile?: string;
  pgUrl?: string;
  table?: string;
  /** The replication's checkpoint folder (the replicate case). */
  stateDir?: string;
  map?: unknown;
  connections?: Record<string, { connector: string; properties: Record<string, string> }>;
}

function runChild(name: string, cfg: ChildConfig): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(process.execPath, [...NODE_FLAGS, '--import', 'tsx', SELF, '--child', name], { env: { ...ENV, FERRY_BENCH_CFG: JSON.stringify(cfg) }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`child ${name} failed (${code})`));
      resolve({ ...(JSON.parse(out.trim().split('\n').pop() ?? '{}') as ChildResult), processMs: round(performance.now() - t0) });
    });
  });
}

async function child(name: string): Promise<void> {
  const cfg = JSON.parse(ENV['FERRY_BENCH_CFG'] ?? '{}') as ChildConfig;
  // The CPU and the time of the copy itself (module loading and the Connector host's start-up left out).
  let cpu0 = process.cpuUsage();
  let rows = 0;
  let failed = 0;
  let t0 = performance.now();
  if (name === 'transfer') {
    // replicate.bench.ts' transfer case: SQLite → PostgreSQL through the plugin host, query + Create, one batch read ahead.
    const { ConnectorHost } = await import('../../src/connectors/host.js');
    const { transfer } = await import('../../src/connectors/transfer.js');
    const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'warn' }) });
    await host.loadAll();
    const src = await host.open({ connectorId: 'SQLite', connectionId: 'bench-sqlite', properties: { file: cfg.sqliteFile ?? '' } });
    const dst = await host.open({ connectorId: 'PostgreSQL', connectionId: 'bench-pg', properties: { connectionString: cfg.pgUrl ?? '' } });
    await src.metadata();
    await dst.metadata();
    t0 = performance.now();
    cpu0 = process.cpuUsage();
    const stats = await transfer(src.query('rows', undefined, { batchSize: BATCH }), (b) => dst.write('Create', cfg.table ?? 'rows', b));
    rows = stats.written;
    failed = stats.failed;
    await host.close();
  } else if (name === 'replicate') {
    // What the Agent's RS run does (src/solutions/replicate-run.ts) without the Agent: replicate() over two open Connections.
    const { ConnectorHost } = await import('../../src/connectors/host.js');
    const { replicate } = await import('../../src/solutions/replicate.js');
    const { FileReplicationState } = await import('../../src/solutions/replication-state.js');
    const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'warn' }) });
    await host.loadAll();
    // Timed like transfer(): from after both Connections are open with their metadata loaded (the
    // replication creates the target table and so reloads the target's metadata inside the time).
    const src = await host.open({ connectorId: 'SQLite', connectionId: 'bench-sqlite', properties: { file: cfg.sqliteFile ?? '' } });
    const dst = await host.open({ connectorId: 'PostgreSQL', connectionId: 'bench-pg', properties: { connectionString: cfg.pgUrl ?? '', schemas: 'public' } });
    await src.metadata();
    await dst.metadata();
    t0 = performance.now();
    cpu0 = process.cpuUsage();
    const state = new FileReplicationState(cfg.stateDir ?? '');
    const r = await replicate({ source: src, target: dst, entities: [cfg.table ?? 'rows'], checkForBulk: true, signal: new AbortController().signal, state, log: pino({ level: 'warn' }) });
    if (r.fatal) throw new Error(r.fatal);
    rows = r.processed;
    failed = r.failed;
    await src.close();
    await dst.close();
    await host.close();
  } else if (name === 'engine') {
    // What `ferry map run` does: open the Map's Connections with the built-in plugins, compile, runMap, close.
    const { MapModel } = await import('../../src/protocol/map.js');
    const { openRun } = await import('../../src/maps/open-run.js');
    const { runMap } = await import('../../src/maps/runtime/run.js');
    const model = MapModel.parse(cfg.map);
    t0 = performance.now();
    cpu0 = process.cpuUsage();
    const run = await openRun(model, { connectorsDir: CONNECTORS_DIR, log: pino({ level: 'silent' }), connections: cfg.connections ?? {} });
    try {
      const { stats } = await runMap(run.plan, { connections: run.connections });
      rows = stats.processed;
      failed = stats.failed;
    } finally {
      await run.close();
    }
  } else {
    throw new Error(`unknown child ${name}`);
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const result: ChildResult = { case: name, rows, failed, ms: round(ms), rowsPerSec: round((rows / ms) * 1000), cpuMs: round((cpu.user + cpu.system) / 1000), peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024) };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** psql \copy of the CSV into a table; the backend's work is in the PostgreSQL CPU. */
function psqlCopy(pgUrl: string, table: string, csvFile: string): Promise<{ ms: number; rowsPerSec: number }> {
  const file = csvFile.replace(/'/g, "''");
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn('psql', [pgUrl, '-v', 'ON_ERROR_STOP=1', '-c', `\\copy ${table} (${COLUMNS.join(', ')}) FROM '${file}' WITH (FORMAT csv, HEADER)`], { stdio: ['ignore', 'ignore', 'inherit'] });
    p.on('error', reject);
    p.on('exit', (code) => {
      const ms = performance.now() - t0;
      if (code === 0) resolve({ ms: round(ms), rowsPerSec: round((ROWS / ms) * 1000) });
      else reject(new Error(`psql failed (${code})`));
    });
  });
}

// ── scenarios 1–4 ──────────────────────────────────────────────────────────────

interface Ctx {
  sut: ServiceUnderTest;
  agent: Agent;
  data: Data;
  pgUrl: string;
  csvConn: string;
  pgConn: string;
}

const S_OF = (ctx: Ctx, id: string): string => `/v1/orgs/${ctx.sut.orgId}/solutions/${id}`;

async function createSolution(ctx: Ctx, body: Record<string, unknown>): Promise<string> {
  return (await api<{ id: string }>(ctx.sut, 'POST', `/v1/orgs/${ctx.sut.orgId}/solutions`, { agentId: ctx.agent.agentId, ...body })).body.id;
}

const block = (n: number): string => `5e1f0000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/** Query the CSV entity → Create into the table, every mapping a plain field copy. */
function copyMap(name: string, csvConn: string, entity: string, pgConn: string, table: string, fields: readonly string[]): Record<string, unknown> {
  return {
    version: '3.0',
    name,
    batchSize: BATCH,
    blocks: [
      { blockId: block(1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: csvConn, entity },
      { blockId: block(2), name: 'W', blockType: 'Create', action: 'Create', connectionId: pgConn, entity: table, fieldMappings: fields.map((f) => ({ targetField: f, targetFormula: `Q.${f}` })) },
    ],
  };
}

/** The same Map for the engine child: the Connections' ids and their plain properties. */
function engineConfig(ctx: Ctx, map: Record<string, unknown>): ChildConfig {
  return {
    map,
    connections: {
      [ctx.csvConn]: { connector: 'CSV', properties: { folder: ctx.data.csvFolder } },
      [ctx.pgConn]: { connector: 'PostgreSQL', properties: { connectionString: ctx.pgUrl, schemas: 'public' } },
    },
  };
}

const checkpoint = (ctx: Ctx): Promise<void> => pgExec(ctx.pgUrl, 'CHECKPOINT');

async function count(url: string, table: string): Promise<number> {
  return Number((await pgRows<{ n: string }>(url, `SELECT count(*) AS n FROM ${table}`))[0]?.n ?? 0);
}

interface Step {
  ms: number;
  rowsPerSec: number;
  [k: string]: unknown;
}

async function scenarioRs(ctx: Ctx): Promise<Record<string, unknown>> {
  const sqliteConn = await createConnection(ctx.sut, 'RS source', SQLITE_CONNECTOR, { file: ctx.data.sqliteFile });
  const solutionId = await createSolution(ctx, {
    name: 'RS bench',
    solutionType: 'Replication',
    connectionIdForSource: sqliteConn,
    connectionIdForTarget: ctx.pgConn,
    replicationSettings: { selectionType: 'Selected', entities: ['rows'] },
    checkForBulk: true,
  });
  await prepare(ctx.sut, solutionId);
  // The same Replication as public clients send it and SPEC.md defaults it: without checkForBulk.
  const defaultId = await createSolution(ctx, {
    name: 'RS bench (default, no checkForBulk)',
    solutionType: 'Replication',
    connectionIdForSource: sqliteConn,
    connectionIdForTarget: ctx.pgConn,
    replicationSettings: { selectionType: 'Selected', entities: ['rows'] },
  });
  await prepare(ctx.sut, defaultId);
  // A first run creates the table (ensureEntity): the anchors write into that very table.
  log('rs: warm-up run (creates the target table)');
  await pgExec(ctx.pgUrl, 'DROP TABLE IF EXISTS rows');
  const warm = await startAndWait(ctx.sut, solutionId);
  log(`rs warm-up: ${warm.rowsPerSec.toLocaleString('en')} rows/s (${warm.wallMs} ms, ${warm.result})`);
  if (warm.processed !== ROWS) throw new Error(`the RS run processed ${warm.processed} rows, not ${ROWS}`);
  const ddl = await pgRows<{ column_name: string; data_type: string }>(ctx.pgUrl, `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'rows' ORDER BY ordinal_position`);
  const rounds: Array<Record<string, Step | number>> = [];
  for (let i = 0; i < ROUNDS; i++) {
    await pgExec(ctx.pgUrl, 'TRUNCATE rows');
    await checkpoint(ctx);
    let meter = cpuMeter();
    const copy = await psqlCopy(ctx.pgUrl, 'rows', ctx.data.csvFile);
    const psql: Step = { ...copy, ...meter() };
    log(`rs round ${i + 1}: psql \\copy ${psql.rowsPerSec.toLocaleString('en')} rows/s (${psql.ms} ms)`);

    await pgExec(ctx.pgUrl, 'TRUNCATE rows');
    await checkpoint(ctx);
    meter = cpuMeter();
    const t = await runChild('transfer', { sqliteFile: ctx.data.sqliteFile, pgUrl: ctx.pgUrl, table: 'rows' });
    const transfer: Step = { ms: t.ms, rowsPerSec: t.rowsPerSec, processMs: t.processMs, nodeCpuMs: t.cpuMs, peakRssMiB: t.peakRssMiB, pgCpuMs: meter().pgCpuMs };
    if (t.rows !== ROWS) throw new Error(`transfer wrote ${t.rows} rows`);
    log(`rs round ${i + 1}: transfer ${transfer.rowsPerSec.toLocaleString('en')} rows/s (${transfer.ms} ms, Node CPU ${t.cpuMs} ms)`);

    // replicate() in a child process, into a database without the table, as the Agent's run does it.
    await pgExec(ctx.pgUrl, 'DROP TABLE rows');
    await checkpoint(ctx);
    meter = cpuMeter();
    const stateDir = path.join(ctx.data.dir, `rs-state-${i}`);
    const e = await runChild('replicate', { sqliteFile: ctx.data.sqliteFile, pgUrl: ctx.pgUrl, table: 'rows', stateDir });
    fs.rmSync(stateDir, { recursive: true, force: true });
    const engine: Step = { ms: e.ms, rowsPerSec: e.rowsPerSec, processMs: e.processMs, nodeCpuMs: e.cpuMs, peakRssMiB: e.peakRssMiB, pgCpuMs: meter().pgCpuMs };
    if (e.rows !== ROWS) throw new Error(`replicate copied ${e.rows} rows`);
    log(`rs round ${i + 1}: replicate() ${engine.rowsPerSec.toLocaleString('en')} rows/s (${engine.ms} ms, Node CPU ${e.cpuMs} ms)`);

    // A target made anew: the replication copies everything again (its checkpoint goes with the table).
    await pgExec(ctx.pgUrl, 'DROP TABLE rows');
    await checkpoint(ctx);
    meter = cpuMeter(ctx.agent.workerPid);
    const run = await startAndWait(ctx.sut, solutionId);
    const rs: Step = { ms: run.wallMs, rowsPerSec: run.rowsPerSec, toStopRowsPerSec: run.toStopRowsPerSec, startCallMs: run.startCallMs, startLagMs: run.startLagMs, execMs: run.execMs, execRowsPerSec: round((run.processed / run.execMs) * 1000), endLagMs: run.endLagMs, result: run.result, ...meter() };
    if (run.processed !== ROWS || run.failed !== 0 || (await count(ctx.pgUrl, 'rows')) !== ROWS) throw new Error(`the RS run did not copy the ${ROWS} rows: ${JSON.stringify(run.execution)}`);
    log(`rs round ${i + 1}: RS through the API ${rs.rowsPerSec.toLocaleString('en')} rows/s (${rs.ms} ms; execution ${run.execMs} ms; start lag ${run.startLagMs} ms, end lag ${run.endLagMs} ms)`);

    // The default path: the same copy without checkForBulk (records, a batch per write call).
    await pgExec(ctx.pgUrl, 'DROP TABLE rows');
    await checkpoint(ctx);
    meter = cpuMeter(ctx.agent.workerPid);
    const plain = await startAndWait(ctx.sut, defaultId);
    const rsDefault: Step = { ms: plain.wallMs, rowsPerSec: plain.rowsPerSec, execMs: plain.execMs, result: plain.result, ...meter() };
    if (plain.processed !== ROWS || plain.failed !== 0 || (await count(ctx.pgUrl, 'rows')) !== ROWS) throw new Error(`the default RS run did not copy the ${ROWS} rows: ${JSON.stringify(plain.execution)}`);
    log(`rs round ${i + 1}: RS without checkForBulk ${rsDefault.rowsPerSec.toLocaleString('en')} rows/s (${rsDefault.ms} ms)`);
    rounds.push({
      psql,
      transfer,
      replicate: engine,
      rs,
      rsDefault,
      rsDefaultVsRs: r3(rsDefault.rowsPerSec / rs.rowsPerSec),
      rsDefaultVsPsql: r3(rsDefault.rowsPerSec / psql.rowsPerSec),
      rsVsTransfer: r3(rs.rowsPerSec / transfer.rowsPerSec),
      rsVsPsql: r3(rs.rowsPerSec / psql.rowsPerSec),
      rsVsReplicate: r3(rs.rowsPerSec / engine.rowsPerSec),
      replicateVsTransfer: r3(engine.rowsPerSec / transfer.rowsPerSec),
      transferVsPsql: r3(transfer.rowsPerSec / psql.rowsPerSec),
      load1: loadavg()[0] ?? 0,
    });
  }
  const med = (k: string): number => r3(median(rounds.map((r) => r[k] as number)));
  const rate = (k: string): number => round(median(rounds.map((r) => (r[k] as Step).rowsPerSec)));
  return {
    targetColumns: ddl.map((c) => `${c.column_name} ${c.data_type}`),
    warmUp: { ms: warm.wallMs, rowsPerSec: warm.rowsPerSec },
    rounds,
    medians: {
      psqlRowsPerSec: rate('psql'),
      transferRowsPerSec: rate('transfer'),
      replicateRowsPerSec: rate('replicate'),
      rsRowsPerSec: rate('rs'),
      rsDefaultRowsPerSec: rate('rsDefault'),
      rsDefaultVsRs: med('rsDefaultVsRs'),
      rsDefaultVsPsql: med('rsDefaultVsPsql'),
      rsVsTransfer: med('rsVsTransfer'),
      rsVsPsql: med('rsVsPsql'),
      rsVsReplicate: med('rsVsReplicate'),
      replicateVsTransfer: med('replicateVsTransfer'),
      transferVsPsql: med('transferVsPsql'),
    },
    goals: {
      rsVsTransfer: { goal: 0.9, value: med('rsVsTransfer'), met: med('rsVsTransfer') >= 0.9 },
      rsVsPsql: { goal: 0.75, value: med('rsVsPsql'), met: med('rsVsPsql') >= 0.75 },
      rsDefaultVsRs: { goal: 0.25, value: med('rsDefaultVsRs'), met: med('rsDefaultVsRs') >= 0.25 },
    },
  };
}

async function scenarioIs(ctx: Ctx, failing: boolean): Promise<Record<string, unknown>> {
  const table = failing ? 'is_fail' : 'is_rows';
  const map = copyMap(failing ? 'CSV to is_fail' : 'CSV to is_rows', ctx.csvConn, failing && FAILING_ROWS < ROWS ? 'head' : 'rows', ctx.pgConn, table, COLUMNS);
  const rows = failing ? Math.min(FAILING_ROWS, ROWS) : ROWS;
  const solutionId = await createSolution(ctx, { name: failing ? 'IS bench, 10% failing' : 'IS bench', solutionType: 'Integration', mapLinks: [] });
  await api(ctx.sut, 'POST', `${S_OF(ctx, solutionId)}/maps/advanced`, map);
  await prepare(ctx.sut, solutionId);
  const expectFailed = failing ? Math.floor(rows / 10) : 0;
  const rounds: Array<Record<string, Step | number>> = [];
  const runs: ApiRun[] = [];
  const name = failing ? 'failing' : 'is';
  for (let i = 0; i < (failing ? FAILING_ROUNDS : ROUNDS); i++) {
    let psql: Step | undefined;
    if (!failing) {
      await pgExec(ctx.pgUrl, `TRUNCATE ${table}`);
      await checkpoint(ctx);
      const meter = cpuMeter();
      psql = { ...(await psqlCopy(ctx.pgUrl, table, ctx.data.csvFile)), ...meter() };
      log(`${name} round ${i + 1}: psql \\copy ${psql.rowsPerSec.toLocaleString('en')} rows/s (${psql.ms} ms)`);
    }

    await pgExec(ctx.pgUrl, `TRUNCATE ${table}`);
    await checkpoint(ctx);
    let meter = cpuMeter();
    const e = await runChild('engine', engineConfig(ctx, map));
    const engine: Step = { ms: e.ms, rowsPerSec: e.rowsPerSec, processMs: e.processMs, failed: e.failed, nodeCpuMs: e.cpuMs, peakRssMiB: e.peakRssMiB, pgCpuMs: meter().pgCpuMs };
    if (e.rows !== rows || e.failed !== expectFailed) throw new Error(`the engine processed ${e.rows} and failed ${e.failed}`);
    log(`${name} round ${i + 1}: engine (ferry map run's path) ${engine.rowsPerSec.toLocaleString('en')} rows/s (${engine.ms} ms, Node CPU ${e.cpuMs} ms)`);

    await pgExec(ctx.pgUrl, `TRUNCATE ${table}`);
    await checkpoint(ctx);
    meter = cpuMeter(ctx.agent.workerPid);
    const run = await startAndWait(ctx.sut, solutionId);
    runs.push(run);
    const is: Step = { ms: run.wallMs, rowsPerSec: run.rowsPerSec, toStopRowsPerSec: run.toStopRowsPerSec, startCallMs: run.startCallMs, startLagMs: run.startLagMs, execMs: run.execMs, execRowsPerSec: round((run.processed / run.execMs) * 1000), endLagMs: run.endLagMs, failed: run.failed, result: run.result, ...meter() };
    const landed = await count(ctx.pgUrl, table);
    if (run.processed !== rows || run.failed !== expectFailed || landed !== rows - expectFailed) throw new Error(`the IS run: ${JSON.stringify(run.execution)}, ${landed} rows in ${table}`);
    log(`${name} round ${i + 1}: IS through the API ${is.rowsPerSec.toLocaleString('en')} rows/s (${is.ms} ms; execution ${run.execMs} ms; start lag ${run.startLagMs} ms, end lag ${run.endLagMs} ms; ${run.failed} failed)`);
    rounds.push({ ...(psql ? { psql } : {}), engine, is, isVsEngine: r3(is.rowsPerSec / engine.rowsPerSec), ...(psql ? { isVsPsql: r3(is.rowsPerSec / psql.rowsPerSec), engineVsPsql: r3(engine.rowsPerSec / psql.rowsPerSec) } : {}), load1: loadavg()[0] ?? 0 });
  }
  const med = (k: string): number => r3(median(rounds.map((r) => r[k] as number)));
  const rate = (k: string): number => round(median(rounds.map((r) => (r[k] as Step | undefined)?.rowsPerSec ?? 0)));
  const out: Record<string, unknown> = { rows, rounds, medians: { ...(failing ? {} : { psqlRowsPerSec: rate('psql'), isVsPsql: med('isVsPsql'), engineVsPsql: med('engineVsPsql') }), engineRowsPerSec: rate('engine'), isRowsPerSec: rate('is'), isVsEngine: med('isVsEngine') } };
  if (!failing) out['goals'] = { isVsPsql: { goal: 0.7, value: med('isVsPsql'), met: med('isVsPsql') >= 0.7 } };
  else out['errors'] = await errorPages(ctx, solutionId, runs.at(-1) as ApiRun, expectFailed);
  return out;
}

/** The failing run's errors through the API: Total-Count, and pages at offset 0 and at a deep offset, timed. */
async function errorPages(ctx: Ctx, solutionId: string, run: ApiRun, expected: number): Promise<Record<string, unknown>> {
  const H = `${S_OF(ctx, solutionId)}/history/${run.execution.id}/errors`;
  const timed = async (offset: number, limit: number): Promise<{ ms: number; n: number; total: number }> => {
    const t0 = performance.now();
    const res = await api<unknown[]>(ctx.sut, 'GET', `${H}?offset=${offset}&limit=${limit}`);
    return { ms: performance.now() - t0, n: res.body.length, total: Number(res.headers['total-count']) };
  };
  const total = (await timed(0, 1)).total;
  const deep = Math.max(0, total - 100);
  const first: number[] = [];
  const last: number[] = [];
  const full: number[] = [];
  let pageN = 0;
  for (let i = 0; i < 5; i++) {
    first.push((await timed(0, 100)).ms);
    const d = await timed(deep, 100);
    last.push(d.ms);
    pageN = d.n;
    full.push((await timed(Math.floor(total / 2), 1000)).ms);
  }
  return {
    totalCount: total,
    recordsFailed: run.failed,
    expected,
    matches: total === run.failed && total === expected,
    deepOffset: deep,
    deepPageRows: pageN,
    msPage100AtOffset0: r3(median(first)),
    msPage100AtDeepOffset: r3(median(last)),
    msPage1000AtMiddle: r3(median(full)),
  };
}

async function scenarioLatency(ctx: Ctx): Promise<Record<string, unknown>> {
  const tinyConn = await createConnection(ctx.sut, 'Tiny CSV', CSV_CONNECTOR, { folder: ctx.data.tinyFolder });
  const solutionId = await createSolution(ctx, { name: 'Start latency', solutionType: 'Integration', mapLinks: [] });
  await api(ctx.sut, 'POST', `${S_OF(ctx, solutionId)}/maps/advanced`, copyMap('Tiny to lat_rows', tinyConn, 'tiny', ctx.pgConn, 'lat_rows', ['id']));
  await prepare(ctx.sut, solutionId);
  const c = new pg.Client({ connectionString: ctx.pgUrl });
  await c.connect();
  const samples: Array<{ firstRowMs: number; startCallMs: number; startLagMs: number; execMs: number; endMs: number; endLagMs: number }> = [];
  try {
    for (let i = 0; i < STARTS + 1; i++) {
      await c.query('TRUNCATE lat_rows');
      const wall0 = Date.now();
      const run = await startAndWait(ctx.sut, solutionId, 120_000);
      const first = (await c.query<{ ms: string | null }>('SELECT (extract(epoch FROM min(inserted_at)) * 1000)::float8 AS ms FROM lat_rows')).rows[0]?.ms;
      if (run.processed !== 10 || first === null || first === undefined) throw new Error(`latency run: ${JSON.stringify(run.execution)}`);
      // The first start is a warm-up (the Agent's first run of the Solution: its Connections open).
      if (i === 0) {
        log(`latency warm-up: first row after ${Math.round(Number(first) - wall0)} ms`);
        continue;
      }
      samples.push({ firstRowMs: round(Number(first) - wall0), startCallMs: run.startCallMs, startLagMs: run.startLagMs, execMs: run.execMs, endMs: run.wallMs, endLagMs: run.endLagMs });
      await sleep(200);
    }
  } finally {
    await c.end();
  }
  const stat = (k: keyof (typeof samples)[number]) => {
    const xs = samples.map((s) => s[k]);
    return { median: median(xs), p90: quantile(xs, 0.9), min: Math.min(...xs), max: Math.max(...xs) };
  };
  const firstRow = stat('firstRowMs');
  log(`latency: POST start → first row median ${firstRow.median} ms (p90 ${firstRow.p90}, max ${firstRow.max})`);
  return {
    starts: samples.length,
    firstRowMs: firstRow,
    startCallMs: stat('startCallMs'),
    startLagMs: stat('startLagMs'),
    execMs: stat('execMs'),
    endSeenMs: stat('endMs'),
    endLagMs: stat('endLagMs'),
    goals: { firstRowMedianMs: { goal: 1000, value: firstRow.median, met: firstRow.median < 1000 } },
  };
}

// ── scenario 5: schedules at scale ─────────────────────────────────────────────

async function scenarioSchedules(pgUrl: string, dir: string): Promise<Record<string, unknown>> {
  const h = await harness();
  const sut = await benchService();
  await sut.start();
  const O = `/v1/orgs/${sut.orgId}`;
  const agents: Agent[] = [];
  const home = path.join(sut.dataDir, 'agents');
  const folder = path.join(dir, 'one');
  fs.mkdirSync(folder);
  fs.writeFileSync(path.join(folder, 'one.csv'), 'id\n1\n');
  fs.writeFileSync(path.join(folder, 'schema.json'), JSON.stringify({ entities: { 'one.csv': { fields: [{ name: 'id', type: 'integer' }] } } }));
  await pgExec(pgUrl, 'DROP TABLE IF EXISTS sched_runs; CREATE TABLE sched_runs (sol text NOT NULL, id integer, inserted_at timestamptz NOT NULL DEFAULT clock_timestamp())');
  const loads: number[] = [];
  const loadTimer = setInterval(() => loads.push(loadavg()[0] ?? 0), 10_000);
  try {
    log(`schedules: installing ${SCHED.agents} Agent instances`);
    const installed: Array<{ agentId: string; instance: number }> = [];
    for (let i = 0; i < SCHED.agents; i++) installed.push(await installAgent(sut, home));
    agents.push(...(await Promise.all(installed.map((inst) => runAgent(sut, home, inst.instance, inst.agentId)))));
    const csvConn = await createConnection(sut, 'One row', CSV_CONNECTOR, { folder });
    const pgConn = await createConnection(sut, 'Runs table', POSTGRES_CONNECTOR, { connectionString: pgUrl, schemas: 'public', poolSize: '2' });
    const schedule = {
      scheduleOption: 'Recurring',
      runOnceOptions: null,
      recurringOptions: {
        days: { daysOption: 'DaysInterval', daysInterval: 1 },
        times: { timeOption: 'TimeInterval', timeInterval: 1, timeIntervalUnit: 'minutes' },
        timeZone: null,
      },
    };
    const ids: string[] = Array.from({ length: SCHED.solutions }, () => '');
    const names: string[] = ids.map((_, i) => `S${String(i).padStart(5, '0')}`);
    log(`schedules: creating and preparing ${SCHED.solutions} Solutions`);
    const tPrep = performance.now();
    let next = 0;
    const worker = async (): Promise<void> => {
      for (;;) {
        const i = next++;
        if (i >= SCHED.solutions) return;
        const name = names[i] as string;
        const agent = agents[i % agents.length] as Agent;
        const id = (await api<{ id: string }>(sut, 'POST', `${O}/solutions`, { name, solutionType: 'Integration', agentId: agent.agentId, mapLinks: [] })).body.id;
        ids[i] = id;
        const map = {
          version: '3.0',
          name: `${name} map`,
          blocks: [
            { blockId: block(1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: csvConn, entity: 'one' },
            {
              blockId: block(2),
              name: 'W',
              blockType: 'Create',
              action: 'Create',
              connectionId: pgConn,
              entity: 'sched_runs',
              fieldMappings: [
                { targetField: 'sol', targetFormula: `"${name}"` },
                { targetField: 'id', targetFormula: 'Q.id' },
              ],
            },
          ],
        };
        await api(sut, 'POST', `${O}/solutions/${id}/maps/advanced`, map);
        await prepare(sut, id);
        await api(sut, 'PUT', `${O}/solutions/${id}/schedule`, schedule);
        if ((i + 1) % 100 === 0) log(`schedules: ${i + 1} Solutions prepared and scheduled`);
      }
    };
    await Promise.all(Array.from({ length: 8 }, () => worker()));
    const prepMs = performance.now() - tPrep;
    // Due times counted: every minute from the first one at least 20 s after the last schedule was set.
    const firstDue = Math.ceil((Date.now() + 20_000) / 60_000) * 60_000;
    const dues = Array.from({ length: SCHED.minutes }, (_, k) => firstDue + k * 60_000);
    const lastDue = dues.at(-1) as number;
    log(`schedules: ${SCHED.solutions} Solutions ready in ${Math.round(prepMs / 1000)} s; counting due times ${new Date(firstDue).toISOString()} … ${new Date(lastDue).toISOString()}`);
    // The middle: the Service down across one due time, then one Agent down across the next.
    const mid = dues[Math.floor(SCHED.minutes / 2)] as number;
    const events: Array<{ at: string; event: string }> = [];
    const note = (event: string): void => {
      events.push({ at: new Date().toISOString(), event });
      log(`schedules: ${event}`);
    };
    await sleep(Math.max(0, mid - 15_000 - Date.now()));
    note('Service stopping');
    await sut.stop();
    await sleep(Math.max(0, mid + 15_000 - Date.now()));
    await sut.start();
    note('Service started again');
    const victim = agents[0] as Agent;
    const agentDue = mid + 60_000 <= lastDue ? mid + 60_000 : mid;
    await sleep(Math.max(0, agentDue - 5_000 - Date.now()));
    note(`Agent ${victim.instance} stopping (SIGTERM)`);
    await victim.proc.stop();
    // Down across the due time: the Agent notices it late, at its start, and must run it once.
    await sleep(Math.max(0, agentDue + 10_000 - Date.now()));
    const again = await runAgent(sut, victim.home, victim.instance, victim.agentId);
    agents[0] = again;
    note(`Agent ${victim.instance} running again`);
    // Wait for the last due time's runs to be in History (or give up after 3 minutes).
    await sleep(Math.max(0, lastDue + 5_000 - Date.now()));
    const history = async (id: string): Promise<Execution[]> => (await api<Execution[]>(sut, 'GET', `${O}/solutions/${id}/history?limit=1000&laterThanDate=${encodeURIComponent(new Date(firstDue - 3_600_000).toISOString())}`)).body;
    const settled = async (): Promise<Map<string, Execution[]>> => {
      const all = new Map<string, Execution[]>();
      let k = 0;
      const w = async (): Promise<void> => {
        for (;;) {
          const i = k++;
          if (i >= ids.length) return;
          all.set(ids[i] as string, await history(ids[i] as string));
        }
      };
      await Promise.all(Array.from({ length: 8 }, () => w()));
      return all;
    };
    let byId = await settled();
    const deadline = Date.now() + 180_000;
    for (;;) {
      const open = [...byId.values()].flat().filter((e) => e.trigger === 'schedule' && e.result === 'InProgress').length;
      const atLast = [...byId.values()].filter((ex) => ex.some((e) => e.trigger === 'schedule' && Date.parse(e.dueAt ?? '') === lastDue)).length;
      if ((open === 0 && atLast === ids.length) || Date.now() > deadline) break;
      log(`schedules: waiting for History (${open} runs in progress, ${atLast}/${ids.length} Solutions with the last due time)`);
      await sleep(10_000);
      byId = await settled();
    }
    // Skipped due times as reported, per Solution.
    const skips = new Map<string, Array<{ dueAt: string; reason: string }>>();
    for (const id of ids) skips.set(id, (await api<Array<{ dueAt: string; reason: string }>>(sut, 'GET', `${O}/solutions/${id}/history/skipped?limit=1000`)).body);
    const perDue = dues.map((d) => ({ dueAt: new Date(d).toISOString(), fired: 0, doubles: 0, skipped: 0, missedUnreported: 0, lateMs: [] as number[], endMs: [] as number[] }));
    let doubles = 0;
    let missing = 0;
    let skippedReported = 0;
    let failedRuns = 0;
    const skipReasons: Record<string, number> = {};
    for (const id of ids) {
      const ex = (byId.get(id) ?? []).filter((e) => e.trigger === 'schedule');
      const sk = skips.get(id) ?? [];
      for (const e of ex) if (e.result !== 'CompletedSuccessfully' && Date.parse(e.dueAt ?? '') >= firstDue && Date.parse(e.dueAt ?? '') <= lastDue) failedRuns++;
      dues.forEach((d, k) => {
        const at = perDue[k] as (typeof perDue)[number];
        const fired = ex.filter((e) => Date.parse(e.dueAt ?? '') === d);
        const skipped = sk.filter((s) => Date.parse(s.dueAt) === d);
        if (fired.length > 0) at.fired++;
        if (fired.length > 1) {
          at.doubles++;
          doubles++;
        }
        for (const f of fired) {
          at.lateMs.push(Date.parse(f.start) - d);
          if (f.stop) at.endMs.push(Date.parse(f.stop) - d);
        }
        if (skipped.length > 0) {
          at.skipped++;
          skippedReported++;
          for (const s of skipped) skipReasons[s.reason] = (skipReasons[s.reason] ?? 0) + 1;
        }
        if (fired.length === 0 && skipped.length === 0) {
          at.missedUnreported++;
          missing++;
        }
      });
    }
    // The target's own count: one row per run that wrote.
    const rowsPerSol = await pgRows<{ n: string }>(pgUrl, `SELECT count(*) AS n FROM sched_runs WHERE inserted_at >= to_timestamp($1 / 1000.0) AND inserted_at < to_timestamp($2 / 1000.0)`, [firstDue, lastDue + 60_000]);
    const late = perDue.flatMap((p) => p.lateMs);
    const ends = perDue.flatMap((p) => p.endMs);
    const result = {
      solutions: SCHED.solutions,
      agents: SCHED.agents,
      minutes: SCHED.minutes,
      prepareSeconds: Math.round(prepMs / 1000),
      dueTimesExpected: SCHED.solutions * SCHED.minutes,
      fired: perDue.reduce((n, p) => n + p.fired, 0),
      doubles,
      skippedReported,
      skipReasons,
      missedUnreported: missing,
      runsNotSuccessful: failedRuns,
      targetRowsInWindow: Number(rowsPerSol[0]?.n ?? 0),
      startAfterDueMs: { median: median(late), p99: quantile(late, 0.99), max: Math.max(0, ...late) },
      endAfterDueMs: { median: median(ends), p99: quantile(ends, 0.99), max: Math.max(0, ...ends) },
      perDueTime: perDue.map((p) => ({ dueAt: p.dueAt, fired: p.fired, doubles: p.doubles, skipped: p.skipped, missedUnreported: p.missedUnreported, startAfterDueMsMedian: median(p.lateMs), startAfterDueMsMax: Math.max(0, ...p.lateMs), endAfterDueMsMax: Math.max(0, ...p.endMs) })),
      events,
      load1: { min: Math.min(...loads), max: Math.max(...loads) },
      goal: { everyDueTimeOnce: doubles === 0 && missing === 0 && skippedReported === 0 },
    };
    log(`schedules: ${result.fired}/${result.dueTimesExpected} due times fired, ${doubles} doubles, ${skippedReported} skipped (reported), ${missing} missing without a report`);
    return result;
  } finally {
    clearInterval(loadTimer);
    await Promise.all(agents.map((a) => a.proc.stop().catch(() => undefined)));
    killAgents();
    h.killAll();
    await sut.dispose();
    await pgExec(pgUrl, 'DROP TABLE IF EXISTS sched_runs').catch(() => undefined);
  }
}

// ── the run ────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-solutions-bench-'));
  const dbName = `ferry_sol_bench_${randomBytes(4).toString('hex')}`;
  const url = new URL(ADMIN_URL);
  url.pathname = `/${dbName}`;
  const pgUrl = url.toString();
  const out: Record<string, unknown> = {
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadAtStart: loadavg() },
    rows: ROWS,
    rounds: ROUNDS,
    batch: BATCH,
    nodeFlags: NODE_FLAGS.join(' '),
    ...(RS_SOURCE_INDEX ? { rsSourceIndex: true } : {}),
  };
  const loads: number[] = [];
  const loadTimer = setInterval(() => loads.push(loadavg()[0] ?? 0), 10_000);
  await pgExec(ADMIN_URL, `CREATE DATABASE ${dbName}`);
  pgCpu = new PgCpu(dbName);
  const h = await harness();
  let sut: ServiceUnderTest | undefined;
  let agent: Agent | undefined;
  try {
    const main4 = ['rs', 'is', 'failing', 'latency'].some((s) => SCENARIOS.has(s));
    if (main4) {
      log(`generating ${ROWS} rows in ${dir}`);
      const data = generate(dir);
      // The targets exist before the Connection's metadata is first loaded (prepare reads it from the cache).
      // is_fail: 1 record in 10 (id a multiple of 10) breaks its CHECK, so the target refuses it.
      await pgExec(
        pgUrl,
        `CREATE TABLE is_rows (${PG_COLUMNS}); CREATE TABLE is_fail (${PG_COLUMNS}, CHECK (id % 10 <> 0));
         CREATE TABLE lat_rows (id integer, inserted_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
      );
      sut = await benchService();
      await sut.start();
      const inst = await installAgent(sut, path.join(sut.dataDir, 'agents'));
      agent = await runAgent(sut, path.join(sut.dataDir, 'agents'), inst.instance, inst.agentId);
      log(`Service at ${sut.url}, Agent worker pid ${agent.workerPid}`);
      const ctx: Ctx = {
        sut,
        agent,
        data,
        pgUrl,
        csvConn: await createConnection(sut, 'Rows CSV', CSV_CONNECTOR, { folder: data.csvFolder }),
        pgConn: await createConnection(sut, 'Bench DB', POSTGRES_CONNECTOR, { connectionString: pgUrl, schemas: 'public' }),
      };
      if (SCENARIOS.has('rs')) out['rs'] = await scenarioRs(ctx);
      if (SCENARIOS.has('is')) out['is'] = await scenarioIs(ctx, false);
      if (SCENARIOS.has('failing')) {
        const f = await scenarioIs(ctx, true);
        const clean = (out['is'] as { medians?: { isRowsPerSec?: number } } | undefined)?.medians?.isRowsPerSec;
        const failingRate = (f['medians'] as { isRowsPerSec: number }).isRowsPerSec;
        if (clean) f['goals'] = { vsCleanRun: { goal: 0.5, value: r3(failingRate / clean), met: failingRate / clean >= 0.5 } };
        out['failing'] = f;
      }
      if (SCENARIOS.has('latency')) out['latency'] = await scenarioLatency(ctx);
      out['agentRssAtEndMiB'] = procRssMiB(agent.workerPid, 'VmRSS');
      // A graceful stop, so that a --cpu-prof profile is written.
      await agent.proc.stop();
      agent = undefined;
      killAgents();
      await sut.dispose();
      sut = undefined;
    }
    if (SCENARIOS.has('schedules')) out['schedules'] = await scenarioSchedules(pgUrl, dir);
  } finally {
    clearInterval(loadTimer);
    pgCpu.close();
    if (agent) await agent.proc.stop().catch(() => undefined);
    killAgents();
    h.killAll();
    await sut?.dispose().catch(() => undefined);
    await pgExec(ADMIN_URL, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((err: unknown) => log(`could not drop ${dbName}: ${String(err)}`));
    fs.rmSync(dir, { recursive: true, force: true });
  }
  out['load1'] = { min: Math.min(...loads, loadavg()[0] ?? 0), max: Math.max(...loads, loadavg()[0] ?? 0), atEnd: loadavg() };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

const childIndex = process.argv.indexOf('--child');
if (childIndex >= 0) await child(process.argv[childIndex + 1] ?? '');
else await main();
