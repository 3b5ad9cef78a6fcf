/**
 * The Replication engine against the Connector-level transfer and psql \copy, on the same rows
 * (docs/benchmarks.md "Replication"):
 *
 *   transfer    SQLite → PostgreSQL through the plugin host: query + Create, transfer() with one
 *               batch read ahead, into an empty table (test/bench/connectors.bench.ts' case)
 *   replicate   the first run of replicate() into a database without the table: ensureEntity,
 *               net change ordered by the stamp, Upsert by key, a checkpoint per batch
 *   net change  a second replicate() run after 1% of the rows changed
 *   psql        \copy of the same rows as CSV (the anchor)
 *
 *   npx tsx test/bench/replicate.bench.ts      → JSON on stdout, progress on stderr
 *
 * FERRY_BENCH_ROWS (default 1000000), FERRY_BENCH_PAIRS (default 3: rounds of the three cases in
 * turn, the median reported), FERRY_BENCH_DATABASE_URL (else FERRY_TEST_DATABASE_URL, else
 * postgres://postgres@127.0.0.1:5432/test): a server where it may create and drop a database;
 * FERRY_BENCH_CPU_PROF=DIR writes a `--cpu-prof` profile of each case's child process there.
 * Each case runs in a child process with the Agent worker's Node flags (benchNodeFlags), as the connectors bench does.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import pino from 'pino';
import { ConnectorHost } from '../../src/connectors/host.js';
import { transfer } from '../../src/connectors/transfer.js';
import { MemoryReplicationState, replicate } from '../../src/solutions/replicate.js';
import { FileReplicationState } from '../../src/solutions/replication-state.js';
import { benchNodeFlags } from './proc.js';
import { BENCH_PG_DDL, BENCH_SQLITE_DDL, writeBenchRows } from './rows.js';

const SELF = fileURLToPath(import.meta.url);
const CONNECTORS_DIR = path.resolve(path.dirname(SELF), '../../connectors');
const ROWS = Number(process.env['FERRY_BENCH_ROWS'] ?? 1_000_000);
const PAIRS = Number(process.env['FERRY_BENCH_PAIRS'] ?? 3);
/** FERRY_BENCH_CPU_PROF=DIR: a `--cpu-prof` profile of each case's child process in DIR. */
const PROFILE_DIR = process.env['FERRY_BENCH_CPU_PROF'];
const ADMIN_URL =
  process.env['FERRY_BENCH_DATABASE_URL'] ??
  process.env['FERRY_TEST_DATABASE_URL'] ??
  'postgres://postgres@127.0.0.1:5432/test';
const PG_DDL = BENCH_PG_DDL;
const SQLITE_DDL = BENCH_SQLITE_DDL;

interface Cfg {
  dir: string;
  pgUrl: string;
  sqliteFile: string;
}
interface Result {
  case: string;
  rows: number;
  ms: number;
  rowsPerSec: number;
}

const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? 0;

async function pgExec(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** The connectors bench's rows, into SQLite and a CSV file. */
function generate(cfg: Cfg): string {
  const db = new Database(cfg.sqliteFile);
  db.pragma('journal_mode = WAL');
  db.exec(SQLITE_DDL);
  const csv = path.join(cfg.dir, 'rows.csv');
  const fd = fs.openSync(csv, 'w');
  writeBenchRows(db, fd, ROWS);
  fs.closeSync(fd);
  db.close();
  return csv;
}

function runChild(name: string, cfg: Cfg): Promise<Result> {
  return new Promise((resolve, reject) => {
    const p = spawn(
      process.execPath,
      [
        ...benchNodeFlags(undefined),
        ...(PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : []),
        '--import',
        'tsx',
        SELF,
        '--child',
        name,
      ],
      { env: { ...process.env, FERRY_BENCH_CFG: JSON.stringify(cfg) }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as Result)
        : reject(new Error(`case ${name} failed (${code})`)),
    );
  });
}

async function child(name: string): Promise<void> {
  const cfg = JSON.parse(process.env['FERRY_BENCH_CFG'] ?? '{}') as Cfg;
  const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'warn' }) });
  await host.loadAll();
  const src = await host.open({
    connectorId: 'SQLite',
    connectionId: 'bench-sqlite',
    properties: { file: cfg.sqliteFile },
  });
  const dst = await host.open({
    connectorId: 'PostgreSQL',
    connectionId: 'bench-pg',
    properties: { connectionString: cfg.pgUrl },
  });
  await src.metadata();
  await dst.metadata();
  const t0 = performance.now();
  let rows: number;
  if (name === 'transfer') {
    rows = (await transfer(src.query('rows', undefined, { batchSize: 10_000 }), (b) => dst.write('Create', 'rows', b)))
      .written;
  } else {
    const state =
      name === 'replicate' ? new MemoryReplicationState() : new FileReplicationState(path.join(cfg.dir, 'state'));
    const r = await replicate({
      source: src,
      target: dst,
      entities: ['rows'],
      checkForBulk: true,
      signal: new AbortController().signal,
      state,
      log: pino({ level: 'warn' }),
    });
    if (r.fatal) throw new Error(r.fatal);
    rows = r.processed;
  }
  const ms = performance.now() - t0;
  await host.close();
  process.stdout.write(`${JSON.stringify({ case: name, rows, ms, rowsPerSec: (rows / ms) * 1000 })}\n`);
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-rs-bench-'));
  const dbName = `ferry_rs_bench_${randomBytes(4).toString('hex')}`;
  const url = new URL(ADMIN_URL);
  url.pathname = `/${dbName}`;
  const cfg: Cfg = { dir, pgUrl: url.toString(), sqliteFile: path.join(dir, 'source.db') };
  await pgExec(ADMIN_URL, `CREATE DATABASE ${dbName}`);
  const out: Record<string, number[]> = { psql: [], transfer: [], replicate: [], netChange: [] };
  try {
    log(`generating ${ROWS} rows in ${dir}`);
    const csv = generate(cfg).replace(/'/g, "''");
    const step = async (key: string, prepare: string, run: () => Promise<Result>): Promise<void> => {
      await pgExec(cfg.pgUrl, `${prepare}; CHECKPOINT`);
      const r = await run();
      log(`${key}: ${Math.round(r.rowsPerSec).toLocaleString('en')} rows/s (${Math.round(r.ms)} ms, ${r.rows} rows)`);
      out[key]?.push(Math.round(r.rowsPerSec));
    };
    const psql = (): Promise<Result> =>
      new Promise((resolve, reject) => {
        const t0 = performance.now();
        const p = spawn(
          'psql',
          [cfg.pgUrl, '-v', 'ON_ERROR_STOP=1', '-c', `\\copy rows FROM '${csv}' WITH (FORMAT csv)`],
          { stdio: ['ignore', 'ignore', 'inherit'] },
        );
        p.on('exit', (code) =>
          code === 0
            ? resolve({
                case: 'psql',
                rows: ROWS,
                ms: performance.now() - t0,
                rowsPerSec: (ROWS / (performance.now() - t0)) * 1000,
              })
            : reject(new Error('psql failed')),
        );
      });
    for (let i = 0; i < PAIRS; i++) {
      await step('psql', `DROP TABLE IF EXISTS rows; ${PG_DDL}`, psql);
      await step('transfer', `DROP TABLE IF EXISTS rows; ${PG_DDL}`, () => runChild('transfer', cfg));
      await step('replicate', 'DROP TABLE IF EXISTS rows', () => runChild('replicate', cfg));
    }
    // Net change: a first run that keeps its checkpoint, 1% of the rows changed, the second run timed.
    await pgExec(cfg.pgUrl, 'DROP TABLE IF EXISTS rows');
    await runChild('net-change', cfg);
    const db = new Database(cfg.sqliteFile);
    db.prepare(`UPDATE rows SET qty = qty + 1, updated = '2099-01-01T00:00:00' WHERE id % 100 = 0`).run();
    db.close();
    await step('netChange', 'SELECT 1', () => runChild('net-change', cfg));
  } finally {
    await pgExec(ADMIN_URL, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const m = Object.fromEntries(Object.entries(out).map(([k, v]) => [k, median(v)]));
  const ratio = (a: number | undefined, b: number | undefined): number =>
    a && b ? Math.round((a / b) * 1000) / 1000 : 0;
  process.stdout.write(
    `${JSON.stringify({ rows: ROWS, pairs: PAIRS, rowsPerSec: out, medians: m, replicateVsTransfer: ratio(m['replicate'], m['transfer']), replicateVsPsql: ratio(m['replicate'], m['psql']), transferVsPsql: ratio(m['transfer'], m['psql']), load: os.loadavg() }, null, 2)}\n`,
  );
}

if (process.argv[2] === '--child') await child(process.argv[3] ?? '');
else await main();
