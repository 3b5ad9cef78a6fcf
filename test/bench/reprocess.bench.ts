/**
 * Reprocessing at scale: one finished execution with 1,000,000 record errors (BENCH_ERRORS), all
 * marked and reprocessed through the API by a real Agent process into a real table
 * (docs/benchmarks.md "History"):
 *
 *   npx tsx test/bench/reprocess.bench.ts            # SQLite store
 *   FERRY_TEST_DATABASE_URL=postgres://… npx tsx …   # SQLite, then the PostgreSQL store
 *
 * Per store: the Service in a child process (serve-child.ts, so its peak RSS is its own), one
 * Agent (`ferry agent install`, then `ferry agent run` with its production settings, as
 * solutions.bench.ts runs it), and a Solution with one Map, Query a CSV → Create into a PostgreSQL
 * table in a database of the bench's own (the target "fixed": it accepts every record). The
 * execution and its errors are written straight into the store (history-seed.ts), each error with a
 * cloud failed record holding its record's source fields, attributed to that Map. Then
 * `POST H/{id}/mark?mark=true`, `POST H/{id}/reprocess` (the answer's time: it takes the marked
 * errors and asks the Agent), and History polled every 100 ms until the reprocess run has ended;
 * the Agent's and the Service's peak RSS (VmHWM, reset just before) and CPU over that time.
 *
 * Anchors, in the same run, into the same (truncated) table: the engine in a child process
 * (openRun + runMap, what `ferry map run` does) over the CSV, and over the same records handed to
 * the Map as the reprocess run's source (in memory: no Service, no pages); and the Solution's plain
 * run through the API (POST …/start, the CSV read by the Agent).
 *
 * Checks: the target holds the N records, the execution's `reprocessRecordsRemaining` is 0, none of
 * its errors can be reprocessed any more, and a second reprocess starts nothing.
 *
 * BENCH_ERRORS (default 1,000,000), BENCH_STORES (default sqlite, and postgres with
 * FERRY_TEST_DATABASE_URL), BENCH_NODE_FLAGS (default `--max-semi-space-size=128`, as
 * solutions.bench.ts), FERRY_BENCH_DATABASE_URL (else FERRY_TEST_DATABASE_URL, else
 * postgres://postgres@127.0.0.1:5432/test): a server where it creates and drops the target's
 * database. Prints one JSON document; progress on stderr.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import type { ConnectorRecord, RecordBatch } from '../../src/connectors/sdk.js';
import { encryptProperty } from '../../service/connections/properties-crypto.js';
import { SecretBox } from '../../service/crypto/master-key.js';
import { preinstalledConnectors } from '../../service/marketplace/catalogue.js';
import { openStore, type Store } from '../../service/store/store.js';
import { ferryDone, ROOT } from '../e2e/agent/harness.js';
import { createExecution, seedErrors, type SeedSource } from './history-seed.js';
import { benchRequest, startServiceChild, type StoreName } from './serve-child.js';
import { agentProcs, benchNodeFlags, killAgents, meter, rssTenths } from './proc.js';
import { BUILT_IN_CONNECTORS } from '../helpers/built-in-connectors.js';

const ENV = process.env;
const SELF = fileURLToPath(import.meta.url);
const CONNECTORS_DIR = path.join(ROOT, 'connectors');
const ERRORS = Number(ENV['BENCH_ERRORS'] ?? 1_000_000);
const STORES = (ENV['BENCH_STORES'] ?? (ENV['FERRY_TEST_DATABASE_URL'] ? 'sqlite,postgres' : 'sqlite'))
  .split(',')
  .filter((s): s is StoreName => s === 'sqlite' || s === 'postgres');
const NODE_FLAGS = benchNodeFlags(ENV['BENCH_NODE_FLAGS']);
const ADMIN_URL =
  ENV['FERRY_BENCH_DATABASE_URL'] ?? ENV['FERRY_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
/** The Map's batch size: the bulkLimit of the csv and postgres Connectors, as in solutions.bench.ts. */
const BATCH = 10_000;
const POLL_MS = 100;
const TABLE = 'reprocess_rows';

const CSV_CONNECTOR = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const POSTGRES_CONNECTOR = '18cc2a91-e317-4972-9c24-be9fc63775ab';

/** The records: the CSV's rows, and the source fields of each failed record (error `seq` is record `seq`). */
const FIELDS = [
  ['id', 'integer'],
  ['name', 'string'],
  ['email', 'string'],
  ['city', 'string'],
  ['amount', 'decimal'],
] as const;
const COLUMNS = FIELDS.map((f) => f[0]);
const source: SeedSource = (seq) => ({
  id: seq,
  name: `name_${seq}`,
  email: `user${seq}@example.com`,
  city: 'Lyon, France',
  amount: seq * 1.5,
});
const csvRow = (seq: number): string => `${seq},name_${seq},user${seq}@example.com,"Lyon, France",${seq * 1.5}\n`;

const log = (msg: string): void =>
  void process.stderr.write(`[reprocess ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round = (n: number): number => Math.round(n);
const r2 = (n: number): number => Math.round(n * 100) / 100;
const loadavg = (): number[] => os.loadavg().map((l) => r2(l));
function check(cond: boolean, what: string): void {
  if (!cond) throw new Error(`benchmark check failed: ${what}`);
}

// ── the target ─────────────────────────────────────────────────────────────────

async function pgQuery<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text)).rows;
  } finally {
    await c.end();
  }
}
const truncate = (url: string): Promise<unknown> => pgQuery(url, `TRUNCATE ${TABLE}; CHECKPOINT`);
/** The target's rows: how many, and the least and greatest id. */
async function landed(url: string): Promise<{ n: number; min: number; max: number }> {
  const [r] = await pgQuery<{ n: string; min: number | null; max: number | null }>(
    url,
    `SELECT count(*) AS n, min(id) AS min, max(id) AS max FROM ${TABLE}`,
  );
  return { n: Number(r?.n ?? 0), min: r?.min ?? 0, max: r?.max ?? 0 };
}

/** The CSV Connection's folder: rows.csv (the N records, with a header) and its schema.json. */
function writeCsv(dir: string): string {
  const folder = path.join(dir, 'csv');
  fs.mkdirSync(folder);
  const fd = fs.openSync(path.join(folder, 'rows.csv'), 'w');
  let buf = `${COLUMNS.join(',')}\n`;
  for (let i = 1; i <= ERRORS; i++) {
    buf += csvRow(i);
    if (buf.length > 1 << 20) {
      fs.writeSync(fd, buf);
      buf = '';
    }
  }
  fs.writeSync(fd, buf);
  fs.closeSync(fd);
  fs.writeFileSync(
    path.join(folder, 'schema.json'),
    JSON.stringify({
      entities: { 'rows.csv': { fields: FIELDS.map(([name, type]) => ({ name, type, primaryKey: name === 'id' })) } },
    }),
  );
  return folder;
}

// ── the Service's API ──────────────────────────────────────────────────────────

const pool = new http.Agent({ keepAlive: true });
async function api<T>(
  base: string,
  method: string,
  p: string,
  body?: unknown,
  expected: number[] = [200, 201],
): Promise<T> {
  const res = await benchRequest(base, method, p, {
    agent: pool,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!expected.includes(res.status))
    throw new Error(`${method} ${p} answered ${res.status}: ${res.text.slice(0, 500)}`);
  return (res.text ? JSON.parse(res.text) : undefined) as T;
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

interface Execution {
  id: number;
  processExecutionId: string;
  start: string;
  stop: string | null;
  result: string;
  recordsProcessed: number;
  recordsFailed: number;
  reprocessRecordsRemaining: number;
  isReprocessJob: boolean;
}

/** A Connection with its properties encrypted under the Organization's crypto token, as clients do. */
async function createConnection(
  base: string,
  orgId: number,
  name: string,
  connectorId: string,
  properties: Record<string, string>,
): Promise<string> {
  const token = (await api<{ apiCryptoToken: string }>(base, 'GET', `/v1/orgs/${orgId}/SecuritySettings`))
    .apiCryptoToken;
  const body = {
    name,
    connectorId,
    color: '#FF112233',
    properties: Object.entries(properties).map(([key, value]) => ({ key, value: encryptProperty(value, token) })),
  };
  return (await api<{ id: string }>(base, 'POST', `/v1/orgs/${orgId}/connections`, body)).id;
}

const block = (n: number): string => `5e1f0000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const MAP_NAME = `CSV to ${TABLE}`;
const WRITE_BLOCK = { blockId: block(2), name: 'W' };

/** Query the CSV → Create into the table, every mapping a plain field copy. */
function copyMap(csvConn: string, pgConn: string): Record<string, unknown> {
  return {
    version: '3.0',
    name: MAP_NAME,
    batchSize: BATCH,
    blocks: [
      { blockId: block(1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: csvConn, entity: 'rows' },
      {
        ...WRITE_BLOCK,
        blockType: 'Create',
        action: 'Create',
        connectionId: pgConn,
        entity: TABLE,
        fieldMappings: COLUMNS.map((f) => ({ targetField: f, targetFormula: `Q.${f}` })),
      },
    ],
  };
}

async function prepare(base: string, S: string): Promise<void> {
  const job = await api<{ id: string }>(base, 'POST', `${S}/prepare`);
  const done = await poll(
    'the prepare job',
    async () => {
      const res = await api<{ isComplete: boolean; hasError: boolean; message: string }>(
        base,
        'GET',
        `${S}/prepare/${job.id}`,
      );
      return res.isComplete ? res : undefined;
    },
    300_000,
  );
  check(!done.hasError, `prepare: ${done.message}`);
}

/** History polled until the run has ended; answers the execution and when the poll saw its end. */
async function ended(base: string, S: string, runId: string): Promise<{ execution: Execution; seenAt: number }> {
  const execution = await poll(
    `the end of run ${runId}`,
    async () => {
      // 404 until the run's first report has arrived.
      const res = await benchRequest(base, 'GET', `${S}/history/${runId}`, { agent: pool });
      if (res.status === 404) return undefined;
      if (res.status !== 200) throw new Error(`GET the execution answered ${res.status}: ${res.text.slice(0, 500)}`);
      const e = JSON.parse(res.text) as Execution;
      return e.result !== 'InProgress' ? e : undefined;
    },
    3_600_000,
  );
  return { execution, seenAt: Date.now() };
}

/**
 * Runs `fn` while asking the Service for its cheapest authenticated read (`GET …/securityrules`)
 * every 100 ms, one at a time on a connection of their own: how long it kept other requests waiting.
 */
async function probed<T>(
  base: string,
  orgId: number,
  fn: () => Promise<T>,
): Promise<{ result: T; probe: { calls: number; medianMs: number; maxMs: number } }> {
  const own = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const ms: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      const res = await benchRequest(base, 'GET', `/v1/orgs/${orgId}/securityrules`, { agent: own });
      check(res.status === 200, `probe answered ${res.status}`);
      ms.push(performance.now() - t0);
      await sleep(100);
    }
  })();
  try {
    const result = await fn();
    return {
      result,
      probe: {
        calls: ms.length,
        medianMs: r2([...ms].sort((a, b) => a - b)[ms.length >> 1] ?? 0),
        maxMs: r2(Math.max(0, ...ms)),
      },
    };
  } finally {
    running = false;
    await loop;
    own.destroy();
  }
}

// ── the Agent ──────────────────────────────────────────────────────────────────

/** Installs an Agent instance through the real CLI; answers its ID and instance number. */
async function installAgent(base: string, orgId: number, home: string): Promise<{ agentId: string; instance: number }> {
  const { agentInstallationKey } = await api<{ agentInstallationKey: string }>(
    base,
    'POST',
    `/v1/orgs/${orgId}/agents/provision_onpremise_agent`,
  );
  const { code, output } = await ferryDone([
    'agent',
    'install',
    '--home',
    home,
    '--key',
    agentInstallationKey,
    '--service',
    base,
    '--no-service',
  ]);
  const m = /as (ferry-agent-(\d+)) in (\S+)/.exec(output);
  if (code !== 0 || !m?.[2] || !m[3]) throw new Error(`agent install exited ${code}:\n${output}`);
  const { agentId } = JSON.parse(fs.readFileSync(path.join(m[3], 'config.json'), 'utf8')) as { agentId: string };
  return { agentId, instance: Number(m[2]) };
}

/**
 * `ferry agent run` with its production settings at log level info and BENCH_NODE_FLAGS on Node's
 * command line (its worker inherits them), in its own process group; waits until the Agent is
 * Running with the built-in Connectors. Answers the worker's PID and a graceful stop.
 */
async function runAgent(
  base: string,
  orgId: number,
  home: string,
  agent: { agentId: string; instance: number },
): Promise<{ workerPid: number; stop: () => Promise<void> }> {
  const p = spawn(
    process.execPath,
    [
      ...NODE_FLAGS,
      '--import',
      'tsx',
      'src/cli/main.ts',
      'agent',
      'run',
      '--home',
      home,
      '--instance',
      String(agent.instance),
    ],
    {
      cwd: ROOT,
      env: { ...ENV, FERRY_AGENT_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  agentProcs.add(p);
  let out = '';
  p.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  p.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
  void exited.then(() => agentProcs.delete(p));
  try {
    await poll(
      'the Agent Running with its built-in Connectors',
      async () => {
        const a = await api<{ status: string; installedConnectors: unknown[] }>(
          base,
          'GET',
          `/v1/orgs/${orgId}/agents/${agent.agentId}`,
        );
        return a.status === 'Running' && a.installedConnectors.length === BUILT_IN_CONNECTORS ? true : undefined;
      },
      180_000,
      200,
    );
  } catch (err) {
    process.stderr.write(out);
    throw err;
  }
  const workerPid = Number([...out.matchAll(/worker started pid (\d+)/g)].at(-1)?.[1] ?? -1);
  return {
    workerPid,
    async stop() {
      if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
      await exited;
    },
  };
}

// ── the engine anchors, in child processes ─────────────────────────────────────

interface EngineConfig {
  map: unknown;
  connections: Record<string, { connector: string; properties: Record<string, string> }>;
  /** `copies`: the Map's source is the N records handed over in batches (the reprocess run's source, without the Service). */
  source: 'csv' | 'copies';
}

interface EngineResult {
  rows: number;
  failed: number;
  ms: number;
  rowsPerSec: number;
  cpuMs: number;
  peakRssMiB: number;
  /** How the child ended, when not with 0. */
  exit?: number | string;
}

function runEngine(cfg: EngineConfig): Promise<EngineResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...NODE_FLAGS, '--import', 'tsx', SELF, '--engine'], {
      env: { ...ENV, FERRY_BENCH_CFG: JSON.stringify(cfg) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    // isolated-vm may abort a process at its teardown after the work is done (docs/formulas.md):
    // a result printed before that counts, with the exit noted.
    p.on('exit', (code, signal) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (line.startsWith('{'))
        resolve({ ...(JSON.parse(line) as EngineResult), ...(code === 0 ? {} : { exit: signal ?? code ?? -1 }) });
      else reject(new Error(`the engine child failed (${signal ?? code})`));
    });
  });
}

/** The engine child: openRun + runMap + close, timed from the open; its result as one JSON line. */
async function engineChild(): Promise<void> {
  const cfg = JSON.parse(ENV['FERRY_BENCH_CFG'] ?? '{}') as EngineConfig;
  const { MapModel } = await import('../../src/protocol/map.js');
  const { openRun } = await import('../../src/maps/open-run.js');
  const { runMap } = await import('../../src/maps/runtime/run.js');
  async function* copies(): AsyncGenerator<RecordBatch> {
    for (let i = 1; i <= ERRORS; i += BATCH)
      yield Array.from({ length: Math.min(BATCH, ERRORS - i + 1) }, (_, j) => source(i + j) as ConnectorRecord);
  }
  const model = MapModel.parse(cfg.map);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const run = await openRun(model, {
    connectorsDir: CONNECTORS_DIR,
    log: pino({ level: 'silent' }),
    connections: cfg.connections,
  });
  let stats;
  try {
    ({ stats } = await runMap(run.plan, {
      connections: run.connections,
      ...(cfg.source === 'copies' ? { source: copies() } : {}),
    }));
  } finally {
    await run.close();
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const result: EngineResult = {
    rows: stats.processed,
    failed: stats.failed,
    ms: round(ms),
    rowsPerSec: round((stats.processed / ms) * 1000),
    cpuMs: round((cpu.user + cpu.system) / 1000),
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

// ── one store ──────────────────────────────────────────────────────────────────

/** The anchors, into the same table: the engine over the CSV and over the records as a given source; the plain run through the API. */
async function anchorRuns(
  at: { store: StoreName; base: string; S: string; pids: { agent: number; service: number } },
  map: Record<string, unknown>,
  conns: { csvConn: string; pgConn: string; csvFolder: string },
  targetUrl: string,
): Promise<Record<string, unknown>> {
  const { store, base, S, pids } = at;
  const { csvConn, pgConn, csvFolder } = conns;
  const connections: EngineConfig['connections'] = {
    [csvConn]: { connector: 'CSV', properties: { folder: csvFolder } },
    [pgConn]: { connector: 'PostgreSQL', properties: { connectionString: targetUrl, schemas: 'public' } },
  };
  const anchors: Record<string, unknown> = {};
  for (const src of ['csv', 'copies'] as const) {
    await truncate(targetUrl);
    const e = await runEngine({ map, connections, source: src });
    check(
      e.rows === ERRORS && e.failed === 0 && (await landed(targetUrl)).n === ERRORS,
      `engine (${src}) wrote ${e.rows}, failed ${e.failed}`,
    );
    anchors[`engine ${src}`] = e;
    log(
      `${store}: engine over the ${src === 'csv' ? 'CSV' : 'records as its source'} ${e.rowsPerSec.toLocaleString('en')} rows/s (${e.ms} ms)`,
    );
  }
  await truncate(targetUrl);
  const m = meter(pids);
  const t0 = performance.now();
  const start = await api<{ runId: string; started: boolean }>(base, 'POST', `${S}/start`);
  check(start.started, 'the plain run started');
  const plain = await ended(base, S, start.runId);
  const plainMs = performance.now() - t0;
  check(
    plain.execution.recordsProcessed === ERRORS &&
      plain.execution.recordsFailed === 0 &&
      (await landed(targetUrl)).n === ERRORS,
    `the plain run: ${JSON.stringify(plain.execution)}`,
  );
  anchors['plain run'] = {
    ms: round(plainMs),
    rowsPerSec: round((ERRORS / plainMs) * 1000),
    execMs: Date.parse(plain.execution.stop ?? '') - Date.parse(plain.execution.start),
    ...m(),
  };
  log(
    `${store}: the plain run through the API ${round((ERRORS / plainMs) * 1000).toLocaleString('en')} rows/s (${round(plainMs)} ms)`,
  );
  await truncate(targetUrl);
  return anchors;
}

/** The checks after the reprocess run: N rows landed once, nothing left to reprocess, a second reprocess starts nothing. */
async function checkReprocessed(
  st: Store,
  base: string,
  H: string,
  executionId: number,
  targetUrl: string,
  run: { execution: Execution },
) {
  const target = await landed(targetUrl);
  const after = await api<Execution>(base, 'GET', H);
  const reprocessable = await st.db
    .selectFrom('executionErrors')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('executionId', '=', executionId)
    .where('canReprocess', '=', 1)
    .executeTakeFirstOrThrow();
  const pages = await Promise.all(
    [0, Math.floor(ERRORS / 2), Math.max(0, ERRORS - 100)].map((offset) =>
      api<Array<{ canReprocess: boolean; marked: boolean }>>(base, 'GET', `${H}/errors?offset=${offset}&limit=100`),
    ),
  );
  const t = performance.now();
  const second = await api<{ started: boolean; records: number }>(base, 'POST', `${H}/reprocess`);
  const secondMs = r2(performance.now() - t);
  const checks = {
    result: run.execution.result,
    recordsProcessed: run.execution.recordsProcessed,
    recordsFailed: run.execution.recordsFailed,
    isReprocessJob: run.execution.isReprocessJob,
    targetRows: target.n,
    targetIds: [target.min, target.max],
    reprocessRecordsRemaining: after.reprocessRecordsRemaining,
    errorsStillReprocessable: Number(reprocessable.n),
    pagesAllTaken: pages.every((p) => p.length > 0 && p.every((e) => !e.canReprocess && !e.marked)),
    secondReprocess: second,
  };
  check(
    checks.result === 'CompletedSuccessfully' &&
      checks.recordsProcessed === ERRORS &&
      checks.recordsFailed === 0 &&
      checks.isReprocessJob &&
      target.n === ERRORS &&
      target.min === 1 &&
      target.max === ERRORS &&
      checks.reprocessRecordsRemaining === 0 &&
      checks.errorsStillReprocessable === 0 &&
      checks.pagesAllTaken &&
      !second.started &&
      second.records === 0,
    `after the reprocess: ${JSON.stringify(checks)}`,
  );
  return { checks, secondMs };
}

async function benchStore(
  store: StoreName,
  dir: string,
  csvFolder: string,
  targetUrl: string,
): Promise<Record<string, unknown>> {
  const loads: number[] = [loadavg()[0] ?? 0];
  const loadTimer = setInterval(() => loads.push(loadavg()[0] ?? 0), 10_000);
  const child = await startServiceChild(store);
  const servicePid = child.child.pid ?? -1;
  const { url: base, orgId, dataDir, databaseUrl } = child.served;
  const st = await openStore({ databaseUrl, dataDir, preinstalledConnectors: preinstalledConnectors() });
  let agent: Awaited<ReturnType<typeof runAgent>> | undefined;
  try {
    const home = path.join(dir, `agent-${store}`);
    const installed = await installAgent(base, orgId, home);
    agent = await runAgent(base, orgId, home, installed);
    const pids = { agent: agent.workerPid, service: servicePid };
    log(`${store}: Service pid ${servicePid}, Agent worker pid ${agent.workerPid}`);

    const csvConn = await createConnection(base, orgId, 'Rows CSV', CSV_CONNECTOR, { folder: csvFolder });
    const pgConn = await createConnection(base, orgId, 'Target DB', POSTGRES_CONNECTOR, {
      connectionString: targetUrl,
      schemas: 'public',
    });
    const solutionId = (
      await api<{ id: string }>(base, 'POST', `/v1/orgs/${orgId}/solutions`, {
        name: 'Reprocess bench',
        solutionType: 'Integration',
        agentId: installed.agentId,
      })
    ).id;
    const S = `/v1/orgs/${orgId}/solutions/${solutionId}`;
    const map = copyMap(csvConn, pgConn);
    const mapId = (await api<{ id: number }>(base, 'POST', `${S}/maps/advanced`, map)).id;
    await prepare(base, S);

    const anchors = await anchorRuns({ store, base, S, pids }, map, { csvConn, pgConn, csvFolder }, targetUrl);

    // The failed execution: N errors of the Map, each with its record's source fields in the cloud.
    const secrets = SecretBox.fromDataDir(dataDir);
    const x = await createExecution(st, orgId, solutionId, installed.agentId, ERRORS, {
      map: { mapId, mapName: MAP_NAME, entity: 'rows', blockId: WRITE_BLOCK.blockId, blockName: WRITE_BLOCK.name },
      source,
    });
    const seedT0 = performance.now();
    await seedErrors(st, secrets, x, 0, ERRORS);
    const seedMs = round(performance.now() - seedT0);
    // The statistics autovacuum gathers within a minute or so of such a write (history.bench.ts),
    // and the seed's WAL checkpointed, so that the take does not pay for the seed's checkpoint.
    if (store === 'postgres') {
      await sql`analyze execution_errors, failed_records`.execute(st.db);
      await sql`checkpoint`.execute(st.db);
    }
    log(`${store}: ${ERRORS} errors seeded in ${seedMs} ms`);
    const H = `${S}/history/${x.executionId}`;

    // Mark all, then reprocess all; History polled until the reprocess run has ended.
    let t = performance.now();
    const marked = await api<{ changed: number; reprocessRecordsRemaining: number }>(
      base,
      'POST',
      `${H}/mark?mark=true`,
    );
    const markMs = r2(performance.now() - t);
    check(
      marked.changed === ERRORS && marked.reprocessRecordsRemaining === ERRORS,
      `mark all: ${JSON.stringify(marked)}`,
    );
    log(`${store}: mark all ${markMs} ms`);

    const loadAtReprocess = loadavg();
    const m = meter(pids);
    const wall0 = Date.now();
    t = performance.now();
    const tenths = rssTenths(pids);
    const call = await probed(base, orgId, () =>
      api<{ runId: string; started: boolean; records: number }>(base, 'POST', `${H}/reprocess`),
    );
    const answer = call.result;
    const callMs = r2(performance.now() - t);
    check(answer.started && answer.records === ERRORS, `reprocess: ${JSON.stringify(answer)}`);
    log(
      `${store}: reprocess answered in ${callMs} ms (other requests waited up to ${call.probe.maxMs} ms); waiting for run ${answer.runId}`,
    );
    const waited = await probed(base, orgId, () => ended(base, S, answer.runId));
    const run = waited.result;
    const wallMs = performance.now() - t;
    const usage = { ...m(), ...tenths.stop() };
    const started = Date.parse(run.execution.start);
    const stopped = Date.parse(run.execution.stop ?? '');
    log(
      `${store}: reprocess run ended ${run.execution.result} after ${round(wallMs)} ms (${round((ERRORS / wallMs) * 1000).toLocaleString('en')} records/s)`,
    );

    const { checks, secondMs } = await checkReprocessed(st, base, H, x.executionId, targetUrl, run);
    const rate = (ms: number): number => round((ERRORS / ms) * 1000);
    const reprocess = {
      callMs,
      startLagMs: started - wall0,
      execMs: stopped - started,
      toEndSeenMs: round(wallMs),
      endLagMs: round(wall0 + wallMs - stopped),
      recordsPerSec: rate(wallMs),
      execRecordsPerSec: rate(stopped - started),
      otherRequestsDuringCall: call.probe,
      otherRequestsDuringRun: waited.probe,
      ...usage,
    };
    const plainRate = (anchors['plain run'] as { rowsPerSec: number }).rowsPerSec;
    return {
      store,
      errors: ERRORS,
      seedMs,
      markAllMs: markMs,
      reprocess,
      secondReprocessMs: secondMs,
      anchors,
      ratios: {
        reprocessVsPlainRun: r2(reprocess.recordsPerSec / plainRate),
        reprocessVsEngineCopies: r2(reprocess.recordsPerSec / (anchors['engine copies'] as EngineResult).rowsPerSec),
        reprocessVsEngineCsv: r2(reprocess.recordsPerSec / (anchors['engine csv'] as EngineResult).rowsPerSec),
      },
      checks,
      load1: { atReprocess: loadAtReprocess, min: Math.min(...loads), max: Math.max(...loads, loadavg()[0] ?? 0) },
    };
  } finally {
    clearInterval(loadTimer);
    await agent?.stop().catch(() => undefined);
    killAgents();
    await st.close();
    await child.stop();
  }
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-reprocess-bench-'));
  const dbName = `ferry_reprocess_bench_${randomBytes(4).toString('hex')}`;
  const url = new URL(ADMIN_URL);
  url.pathname = `/${dbName}`;
  const targetUrl = url.toString();
  const out: Record<string, unknown> = {
    bench: 'reprocess',
    errors: ERRORS,
    node: process.version,
    cpus: os.cpus().length,
    loadAtStart: loadavg(),
    nodeFlags: NODE_FLAGS.join(' '),
  };
  await pgQuery(ADMIN_URL, `CREATE DATABASE ${dbName}`);
  try {
    await pgQuery(
      targetUrl,
      `CREATE TABLE ${TABLE} (id integer PRIMARY KEY, name text NOT NULL, email text NOT NULL, city text, amount numeric(12,2))`,
    );
    log(`writing ${ERRORS} records to ${dir}`);
    const csvFolder = writeCsv(dir);
    const results: Array<Record<string, unknown>> = [];
    for (const store of STORES) results.push(await benchStore(store, dir, csvFolder, targetUrl));
    out['results'] = results;
  } finally {
    killAgents();
    pool.destroy();
    await pgQuery(ADMIN_URL, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((err: unknown) =>
      log(`could not drop ${dbName}: ${String(err)}`),
    );
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

if (process.argv.includes('--engine')) await engineChild();
else await main();
