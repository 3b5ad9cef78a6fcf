/**
 * Connector throughput against the datastores' own bulk loaders, measured in one run on one
 * machine (docs/benchmarks.md "Connectors"):
 *
 *   anchors   psql \copy of the CSV into PostgreSQL; the sqlite3 CLI's .import into SQLite
 *   cases     csv → postgres, sqlite → postgres, csv → sqlite, csv → postgres Upsert,
 *             all through the plugin host (query + bulk write, transfer() with one batch read ahead)
 *   memory    each case runs in a child process that reports its peak RSS; csv → postgres and
 *             sqlite → postgres also run at 1/10, 1/3 and twice the rows to show that peak RSS
 *             does not grow with them
 *   fallback  cost of a bad record in a COPY batch (bisection) against clean batches
 *
 *   npx tsx test/bench/connectors.bench.ts            → JSON on stdout, progress on stderr
 *
 * Each goal case runs FERRY_BENCH_PAIRS times (default 5), each time right after its anchor and
 * each step after a CHECKPOINT of the server; the median of the pairs' ratios is the figure (the
 * machine is shared: pairing cancels most of the other processes' load, and single pairs still
 * move by ±0.1 on a 2-core machine, so the median of five rather than three). FERRY_BENCH_ONLY=csvToPostgres,sqliteToPostgres,… runs only those goal
 * cases (names as in the output's `pairs`), without the reference and memory runs.
 *
 * Environment: FERRY_BENCH_DATABASE_URL (else FERRY_TEST_DATABASE_URL, else
 * postgres://postgres@127.0.0.1:5432/test) names a server where the bench may create and drop a
 * database; FERRY_BENCH_ROWS (default 1000000); FERRY_BENCH_BATCH (default 10000: the bulkLimit
 * of the postgres and sqlite connectors, what a connector-to-connector copy uses);
 * FERRY_BENCH_NODE_FLAGS (default `--max-semi-space-size=128`, the Agent's recommended V8 flag:
 * batches of 10000 records outgrow V8's default young generation). Reference runs with batch 2000
 * and without the flag are reported beside. Needs `psql` and `sqlite3` on the PATH
 * (apt-get install -y postgresql-client sqlite3).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import Database from 'better-sqlite3';
import pino from 'pino';
import { ConnectorHost } from '../../src/connectors/host.js';
import { transfer } from '../../src/connectors/transfer.js';
import type { ConnectorRecord, WriteAction } from '../../src/connectors/sdk.js';
import { benchNodeFlags } from './proc.js';
import { BENCH_SQLITE_DDL, writeBenchCsv } from './rows.js';

const SELF = fileURLToPath(import.meta.url);
const CONNECTORS_DIR = path.resolve(path.dirname(SELF), '../../connectors');
const ROWS = Number(process.env['FERRY_BENCH_ROWS'] ?? 1_000_000);
/** Row counts of the memory runs: peak RSS must not grow with them. */
const MEMORY_ROWS = [Math.max(1000, Math.floor(ROWS / 10)), Math.max(1000, Math.floor(ROWS / 3)), ROWS * 2];
const BATCH = Number(process.env['FERRY_BENCH_BATCH'] ?? 10_000);
const NODE_FLAGS = benchNodeFlags(process.env['FERRY_BENCH_NODE_FLAGS']);
/** How many times each goal case runs beside its anchor. */
const PAIRS = Number(process.env['FERRY_BENCH_PAIRS'] ?? 5);
/** Comma-separated goal cases to run (csvToPostgres, upsertPostgresConflicts, …); absent = all, with the reference and memory runs. */
const ONLY = process.env['FERRY_BENCH_ONLY']?.split(',').filter(Boolean);

interface PairResult {
  goal: number;
  median?: number;
  ratios: number[];
  anchorRowsPerSec: number[];
  rowsPerSec: number[];
  peakRssMB: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}
const ADMIN_URL =
  process.env['FERRY_BENCH_DATABASE_URL'] ??
  process.env['FERRY_TEST_DATABASE_URL'] ??
  'postgres://postgres@127.0.0.1:5432/test';

const PG_DDL = `CREATE TABLE rows (id integer PRIMARY KEY, name text, email text, amount numeric(12,2), qty integer,
  price double precision, active boolean, created date, updated timestamptz, note text)`;
const SQLITE_DDL = BENCH_SQLITE_DDL;

interface Config {
  dir: string;
  pgUrl: string;
  csvFolder: string;
  sqliteFile: string;
  batch: number;
  /** Connection properties of the sqlite target beyond `file`. */
  sqliteProps?: Record<string, string>;
  nodeFlags?: string[];
}

interface CaseResult {
  case: string;
  rows: number;
  failed: number;
  ms: number;
  rowsPerSec: number;
  peakRssMB: number;
  extra?: Record<string, number>;
}

const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

// ── data ───────────────────────────────────────────────────────────────────────

async function pgExec(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

function freshSqlite(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) fs.rmSync(f, { force: true });
  const db = new Database(file);
  db.exec(SQLITE_DDL);
  db.close();
}

// ── anchors ────────────────────────────────────────────────────────────────────

function timed(cmd: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${cmd} failed (${code}): ${err}`)),
    );
  });
}

async function anchorCopy(cfg: Config, rows: number): Promise<CaseResult> {
  await pgExec(cfg.pgUrl, 'TRUNCATE rows');
  const file = path.join(cfg.csvFolder, 'rows.csv').replace(/'/g, "''");
  const ms = await timed('psql', [
    cfg.pgUrl,
    '-v',
    'ON_ERROR_STOP=1',
    '-c',
    `\\copy rows FROM '${file}' WITH (FORMAT csv, HEADER)`,
  ]);
  return { case: 'psql \\copy (anchor)', rows, failed: 0, ms, rowsPerSec: (rows / ms) * 1000, peakRssMB: 0 };
}

async function anchorImport(cfg: Config, rows: number): Promise<CaseResult> {
  freshSqlite(cfg.sqliteFile);
  const file = path.join(cfg.csvFolder, 'rows.csv');
  const ms = await timed('sqlite3', [cfg.sqliteFile, `.import --csv --skip 1 ${file} rows`]);
  return { case: 'sqlite3 .import (anchor)', rows, failed: 0, ms, rowsPerSec: (rows / ms) * 1000, peakRssMB: 0 };
}

// ── cases through the connectors (each in a child process) ─────────────────────

function runChild(name: string, cfg: Config): Promise<CaseResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...(cfg.nodeFlags ?? NODE_FLAGS), '--import', 'tsx', SELF, '--child', name], {
      env: { ...process.env, FERRY_BENCH_CFG: JSON.stringify(cfg) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`case ${name} failed (${code})`));
      resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as CaseResult);
    });
  });
}

async function child(name: string): Promise<void> {
  const cfg = JSON.parse(process.env['FERRY_BENCH_CFG'] ?? '{}') as Config;
  const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'warn' }) });
  await host.loadAll();
  const csv = () => host.open({ connectorId: 'CSV', connectionId: 'bench-csv', properties: { folder: cfg.csvFolder } });
  const postgres = () =>
    host.open({ connectorId: 'PostgreSQL', connectionId: 'bench-pg', properties: { connectionString: cfg.pgUrl } });
  const sqlite = () =>
    host.open({
      connectorId: 'SQLite',
      connectionId: 'bench-sqlite',
      properties: { file: cfg.sqliteFile, ...cfg.sqliteProps },
    });
  const pairs: Record<
    string,
    () => Promise<{ src: Awaited<ReturnType<typeof csv>>; dst: Awaited<ReturnType<typeof csv>>; action: WriteAction }>
  > = {
    'csv-postgres': async () => ({ src: await csv(), dst: await postgres(), action: 'Create' }),
    'csv-postgres-upsert': async () => ({ src: await csv(), dst: await postgres(), action: 'Upsert' }),
    'sqlite-postgres': async () => ({ src: await sqlite(), dst: await postgres(), action: 'Create' }),
    'csv-sqlite': async () => ({ src: await csv(), dst: await sqlite(), action: 'Create' }),
    'csv-read': async () => ({ src: await csv(), dst: await csv(), action: 'Create' }),
  };
  let result: CaseResult;
  if (name === 'copy-fallback') {
    result = await copyFallback(await postgres(), cfg);
  } else if (name === 'csv-parse') {
    result = await csvParseOnly(cfg);
  } else {
    const make = pairs[name];
    if (!make) throw new Error(`unknown case ${name}`);
    const { src, dst, action } = await make();
    await src.metadata();
    await dst.metadata();
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const stats =
      name === 'csv-read'
        ? await transfer(src.query('rows', undefined, { batchSize: cfg.batch }), async (b) =>
            b.map(() => ({ ok: true, affected: 1 }) as const),
          )
        : await transfer(src.query('rows', undefined, { batchSize: cfg.batch }), (b) => dst.write(action, 'rows', b));
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    // Node's own CPU time (every thread of the process) for the copy: what it costs beside the datastore's.
    result = {
      case: name,
      rows: stats.written,
      failed: stats.failed,
      ms,
      rowsPerSec: (stats.written / ms) * 1000,
      peakRssMB: 0,
      extra: { nodeCpuMs: Math.round((cpu.user + cpu.system) / 1000) },
    };
  }
  await host.close();
  if (name !== 'copy-fallback' && name !== 'csv-parse')
    result.peakRssMB = Math.round(process.resourceUsage().maxRSS / 1024);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** csv-parse alone over the file (the issue's 130k rows/s reference point). */
async function csvParseOnly(cfg: Config): Promise<CaseResult> {
  const { parse } = await import('csv-parse');
  const t0 = performance.now();
  let rows = 0;
  const parser = fs.createReadStream(path.join(cfg.csvFolder, 'rows.csv')).pipe(parse({ columns: true }));
  for await (const _ of parser as AsyncIterable<unknown>) rows++;
  const ms = performance.now() - t0;
  return { case: 'csv-parse alone', rows, failed: 0, ms, rowsPerSec: (rows / ms) * 1000, peakRssMB: 0 };
}

/**
 * The price of the COPY fallback: 50 batches with one bad record each (bisected until it stands
 * alone) against 50 clean batches of the same size.
 */
async function copyFallback(dst: Awaited<ReturnType<ConnectorHost['open']>>, cfg: Config): Promise<CaseResult> {
  const batches = 50;
  const make = (b: number, bad: boolean): ConnectorRecord[] =>
    Array.from({ length: cfg.batch }, (_, i) => {
      const id = b * cfg.batch + i + 1;
      const r: ConnectorRecord = {
        id,
        name: `n${id}`,
        email: `e${id}@x`,
        amount: '1.50',
        qty: i,
        price: 1.5,
        active: true,
        created: '2024-01-01',
        updated: '2024-01-01T00:00:00Z',
        note: 'x',
      };
      if (bad && i === (b * 7919) % cfg.batch) r['price'] = 'not a number';
      return r;
    });
  // Batches are built before the clock starts for each one, so only the writes are timed.
  const run = async (bad: boolean): Promise<{ ms: number; failed: number }> => {
    for await (const _ of dst.nativeQuery('TRUNCATE rows')) void _;
    let ms = 0;
    let failed = 0;
    for (let b = 0; b < batches; b++) {
      const batch = make(b, bad);
      const t0 = performance.now();
      failed += (await dst.write('Create', 'rows', batch)).filter((r) => !r.ok).length;
      ms += performance.now() - t0;
    }
    return { ms, failed };
  };
  const clean = await run(false);
  const bad = await run(true);
  const rows = batches * cfg.batch;
  return {
    case: 'COPY fallback (one bad record per batch)',
    rows,
    failed: bad.failed,
    ms: bad.ms,
    rowsPerSec: (rows / bad.ms) * 1000,
    peakRssMB: 0,
    extra: { cleanMsPerBatch: clean.ms / batches, badMsPerBatch: bad.ms / batches, costRatio: bad.ms / clean.ms },
  };
}

// ── the run ────────────────────────────────────────────────────────────────────

function need(cmd: string, hint: string): void {
  const r = spawnSync(cmd, ['--version'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} is not installed: ${hint}`);
}

/**
 * The goal cases against their anchors, the ones FERRY_BENCH_ONLY names when it is set; the SQLite
 * file `connectorDb` is what the sqlite → postgres case reads.
 */
async function goalPairs(
  cfg: Config,
  connectorDb: string,
  record: (r: CaseResult) => CaseResult,
): Promise<Record<string, PairResult>> {
  // Each goal case runs right after its anchor, PAIRS times; a pair's ratio compares two runs a
  // few seconds apart, so the load other processes put on the machine cancels out as far as it
  // can. The median ratio is reported, with every pair.
  const pairs: Record<string, PairResult> = {};
  const checkpoint = (): Promise<void> => pgExec(cfg.pgUrl, 'CHECKPOINT');
  const pair = async (
    key: string,
    goal: number,
    anchor: () => Promise<CaseResult>,
    run: () => Promise<CaseResult>,
  ): Promise<void> => {
    if (ONLY && !ONLY.includes(key)) return;
    const p: PairResult = { goal, ratios: [], anchorRowsPerSec: [], rowsPerSec: [], peakRssMB: 0 };
    for (let i = 0; i < PAIRS; i++) {
      // Each step starts after a checkpoint: neither pays for writing out the other's dirty pages.
      await checkpoint();
      const a = record(await anchor());
      await checkpoint();
      const c = record(await run());
      p.ratios.push(Math.round((c.rowsPerSec / a.rowsPerSec) * 1000) / 1000);
      p.anchorRowsPerSec.push(Math.round(a.rowsPerSec));
      p.rowsPerSec.push(Math.round(c.rowsPerSec));
      p.peakRssMB = Math.max(p.peakRssMB, c.peakRssMB);
    }
    pairs[key] = { ...p, median: median(p.ratios) };
  };
  const truncate = (): Promise<void> => pgExec(cfg.pgUrl, 'TRUNCATE rows');

  await pair(
    'csvToPostgres',
    0.6,
    () => anchorCopy(cfg, ROWS),
    async () => (await truncate(), runChild('csv-postgres', cfg)),
  );
  // The anchor leaves the table full: every upserted row conflicts.
  await pair(
    'upsertPostgresConflicts',
    0.35,
    () => anchorCopy(cfg, ROWS),
    async () => ({
      ...(await runChild('csv-postgres-upsert', cfg)),
      case: 'csv-postgres-upsert (every row conflicts)',
    }),
  );
  await pair(
    'upsertPostgresNew',
    0.35,
    () => anchorCopy(cfg, ROWS),
    async () => (
      await truncate(),
      { ...(await runChild('csv-postgres-upsert', cfg)), case: 'csv-postgres-upsert (every row new)' }
    ),
  );
  await pair(
    'csvToSqlite',
    0.8,
    () => anchorImport(cfg, ROWS),
    async () => {
      freshSqlite(connectorDb);
      return {
        ...(await runChild('csv-sqlite', {
          ...cfg,
          sqliteFile: connectorDb,
          sqliteProps: { journalMode: 'WAL', synchronous: 'NORMAL' },
        })),
        case: 'csv-sqlite (WAL, synchronous NORMAL)',
      };
    },
  );
  if ((!ONLY || ONLY.includes('sqliteToPostgres')) && !fs.existsSync(connectorDb)) {
    freshSqlite(connectorDb);
    await runChild('csv-sqlite', {
      ...cfg,
      sqliteFile: connectorDb,
      sqliteProps: { journalMode: 'WAL', synchronous: 'NORMAL' },
    });
  }
  await pair(
    'sqliteToPostgres',
    0.65,
    () => anchorCopy(cfg, ROWS),
    async () => (await truncate(), runChild('sqlite-postgres', { ...cfg, sqliteFile: connectorDb })),
  );
  return pairs;
}

/** The reference runs, the runs at smaller row counts for memory, and the parts of the CSV path alone. */
async function referenceRuns(cfg: Config, dir: string, smalls: Config[], record: (r: CaseResult) => CaseResult) {
  const truncate = (): Promise<void> => pgExec(cfg.pgUrl, 'TRUNCATE rows');
  // Reference runs: the default batch size and V8 flags; SQLite's own default journal settings.
  await truncate();
  const csvPg2000 = record({
    ...(await runChild('csv-postgres', { ...cfg, batch: 2000, nodeFlags: [] })),
    case: 'csv-postgres (batch 2000, default V8 flags)',
  });
  await truncate();
  const csvPgNoFlags = record({
    ...(await runChild('csv-postgres', { ...cfg, nodeFlags: [] })),
    case: `csv-postgres (batch ${BATCH}, default V8 flags)`,
  });
  const copyRef = record(await anchorCopy(cfg, ROWS));
  const defaultsDb = path.join(dir, 'defaults.db');
  freshSqlite(defaultsDb);
  const csvSqliteDefaults = record({
    ...(await runChild('csv-sqlite', { ...cfg, sqliteFile: defaultsDb })),
    case: 'csv-sqlite (database defaults: rollback journal, synchronous FULL)',
  });
  const impRef = record(await anchorImport(cfg, ROWS));

  const smallRuns: CaseResult[] = [];
  for (const [i, s] of smalls.entries()) {
    await truncate();
    smallRuns.push(record({ ...(await runChild('csv-postgres', s)), case: `csv-postgres (${MEMORY_ROWS[i]} rows)` }));
  }
  // sqlite → postgres at the same row counts: the reader thread holds batches of its own.
  const sqliteSmallRuns: CaseResult[] = [];
  for (const [i, s] of smalls.entries()) {
    const db = path.join(dir, `connector-${MEMORY_ROWS[i]}.db`);
    freshSqlite(db);
    await runChild('csv-sqlite', { ...s, sqliteFile: db, sqliteProps: { journalMode: 'WAL', synchronous: 'NORMAL' } });
    await truncate();
    sqliteSmallRuns.push(
      record({
        ...(await runChild('sqlite-postgres', { ...cfg, sqliteFile: db })),
        case: `sqlite-postgres (${MEMORY_ROWS[i]} rows)`,
      }),
    );
    for (const f of [db, `${db}-wal`, `${db}-shm`]) fs.rmSync(f, { force: true });
  }
  const fallback = record(await runChild('copy-fallback', cfg));
  const read = record({ ...(await runChild('csv-read', cfg)), case: 'csv connector read alone' });
  const parseOnly = record(await runChild('csv-parse', cfg));
  return {
    csvPg2000,
    csvPgNoFlags,
    copyRef,
    csvSqliteDefaults,
    impRef,
    smallRuns,
    sqliteSmallRuns,
    fallback,
    read,
    parseOnly,
  };
}

async function main(): Promise<void> {
  need('psql', 'apt-get install -y postgresql-client');
  need('sqlite3', 'apt-get update && apt-get install -y sqlite3');
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-bench-'));
  const dbName = `ferry_bench_${randomBytes(4).toString('hex')}`;
  const pgUrl = new URL(ADMIN_URL);
  pgUrl.pathname = `/${dbName}`;
  const cfg: Config = {
    dir,
    pgUrl: pgUrl.toString(),
    csvFolder: path.join(dir, 'csv'),
    sqliteFile: path.join(dir, 'anchor.db'),
    batch: BATCH,
  };
  const smalls: Config[] = MEMORY_ROWS.map((n) => ({ ...cfg, csvFolder: path.join(dir, `csv-${n}`) }));
  const results: CaseResult[] = [];
  const record = (r: CaseResult): CaseResult => {
    const cpu = r.extra?.['nodeCpuMs'];
    log(
      `${r.case}: ${Math.round(r.rowsPerSec).toLocaleString('en')} rows/s (${Math.round(r.ms)} ms, ${r.rows} rows, ${r.failed} failed${r.peakRssMB ? `, peak RSS ${r.peakRssMB} MB` : ''}${cpu ? `, Node CPU ${cpu} ms` : ''})`,
    );
    results.push(r);
    return r;
  };
  await pgExec(ADMIN_URL, `CREATE DATABASE ${dbName}`);
  try {
    log(`generating ${ROWS} rows in ${dir}`);
    await writeBenchCsv(cfg.csvFolder, ROWS);
    for (const [i, s] of smalls.entries()) await writeBenchCsv(s.csvFolder, MEMORY_ROWS[i] as number);
    await pgExec(cfg.pgUrl, PG_DDL);

    const connectorDb = path.join(dir, 'connector.db');
    const pairs = await goalPairs(cfg, connectorDb, record);
    if (ONLY) {
      const load = os.loadavg().map((l) => Math.round(l * 100) / 100);
      process.stdout.write(`${JSON.stringify({ load, rows: ROWS, batch: BATCH, pairs }, null, 2)}\n`);
      return;
    }

    const {
      csvPg2000,
      csvPgNoFlags,
      copyRef,
      csvSqliteDefaults,
      impRef,
      smallRuns,
      sqliteSmallRuns,
      fallback,
      read,
      parseOnly,
    } = await referenceRuns(cfg, dir, smalls, record);

    const ratio = (r: CaseResult, base: CaseResult): number =>
      Math.round((r.rowsPerSec / base.rowsPerSec) * 1000) / 1000;
    const summary = {
      machine: {
        cpus: os.cpus().length,
        model: os.cpus()[0]?.model,
        load: os.loadavg().map((l) => Math.round(l * 100) / 100),
        node: process.version,
      },
      rows: ROWS,
      batch: BATCH,
      nodeFlags: NODE_FLAGS.join(' '),
      pairs,
      references: {
        csvToPostgresBatch2000DefaultFlags: ratio(csvPg2000, copyRef),
        csvToPostgresDefaultFlags: ratio(csvPgNoFlags, copyRef),
        csvToSqliteDatabaseDefaults: ratio(csvSqliteDefaults, impRef),
        csvReadAloneVsCsvParse: ratio(read, parseOnly),
      },
      peakRssMB: Object.fromEntries([
        ...smallRuns.map((r, i) => [`csvToPostgres_${MEMORY_ROWS[i]}`, r.peakRssMB]),
        [`csvToPostgres_${ROWS}`, pairs['csvToPostgres']?.peakRssMB ?? 0],
        ...sqliteSmallRuns.map((r, i) => [`sqliteToPostgres_${MEMORY_ROWS[i]}`, r.peakRssMB]),
        [`sqliteToPostgres_${ROWS}`, pairs['sqliteToPostgres']?.peakRssMB ?? 0],
      ]),
      copyFallback: fallback.extra,
      results: results.map((r) => ({ ...r, ms: Math.round(r.ms), rowsPerSec: Math.round(r.rowsPerSec) })),
    };
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await pgExec(ADMIN_URL, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((err: unknown) =>
      log(`could not drop ${dbName}: ${String(err)}`),
    );
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

const childIndex = process.argv.indexOf('--child');
if (childIndex >= 0) {
  await child(process.argv[childIndex + 1] ?? '');
} else {
  await main();
}
