/**
 * Change capture from PostgreSQL (docs/benchmarks.md "Change capture"; docs/change-capture.md):
 *
 *   first copy  the first run of a Logical Replication of `rows` (10 columns, FERRY_BENCH_ROWS,
 *               default 1,000,000) from one database into another without the table: the slot
 *               made, the copy, the (empty) catch-up — against psql \copy of the same rows as CSV
 *               into the source table (the anchor, same run). Goal ≥ 0.75.
 *   sustained   a continuous capture in a child process while the parent writes FERRY_BENCH_CDC_RATE
 *               changes a second (default 5,000: inserts, updates, deletes in transactions of 50)
 *               for FERRY_BENCH_CDC_SECONDS (default 60); ten times a second a tick row is
 *               committed, and the lag of each tick is when the target first has it minus its commit
 *               (polled every 50 ms). Goal: lag < 2 s; the changes the writer made are all applied.
 *
 *   npx tsx test/bench/change-capture.bench.ts      → JSON on stdout, progress on stderr
 *
 * FERRY_BENCH_DATABASE_URL (else FERRY_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test):
 * a server with wal_level=logical where it may create and drop databases.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import pino from 'pino';
import { ConnectorHost } from '../../src/connectors/host.js';
import { replicateChanges } from '../../src/solutions/change-capture.js';
import { benchChildFlags } from './proc.js';
import { BENCH_PG_DDL, BENCH_SQLITE_DDL, writeBenchRows } from './rows.js';

const SELF = fileURLToPath(import.meta.url);
const CONNECTORS_DIR = path.resolve(path.dirname(SELF), '../../connectors');
const ROWS = Number(process.env['FERRY_BENCH_ROWS'] ?? 1_000_000);
const RATE = Number(process.env['FERRY_BENCH_CDC_RATE'] ?? 5000);
const SECONDS = Number(process.env['FERRY_BENCH_CDC_SECONDS'] ?? 60);
const ADMIN_URL =
  process.env['FERRY_BENCH_DATABASE_URL'] ??
  process.env['FERRY_TEST_DATABASE_URL'] ??
  'postgres://postgres@127.0.0.1:5432/test';
const PG_DDL = BENCH_PG_DDL;
const SQLITE_DDL = BENCH_SQLITE_DDL;

interface Cfg {
  dir: string;
  source: string;
  target: string;
  slot: string;
  entities: string[];
  continuous: boolean;
}

const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

async function sql<T extends pg.QueryResultRow = Record<string, unknown>>(url: string, text: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text)).rows;
  } finally {
    await c.end();
  }
}

function dbUrl(name: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

/** A capture run in a child process: first run (it ends) or continuous (until SIGTERM). */
function startChild(cfg: Cfg): {
  proc: ChildProcess;
  done: Promise<{ processed: number; ms: number; copyMs: number }>;
} {
  const flags = benchChildFlags();
  const proc = spawn(process.execPath, [...flags, '--import', 'tsx', SELF, '--child'], {
    env: { ...process.env, FERRY_BENCH_CFG: JSON.stringify(cfg) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  const done = new Promise<{ processed: number; ms: number; copyMs: number }>((resolve, reject) => {
    proc.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as { processed: number; ms: number; copyMs: number })
        : reject(new Error(`capture child failed (${code})`)),
    );
  });
  return { proc, done };
}

async function child(): Promise<void> {
  const cfg = JSON.parse(process.env['FERRY_BENCH_CFG'] ?? '{}') as Cfg;
  const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'warn' }) });
  await host.loadAll();
  const source = await host.open({
    connectorId: 'PostgreSQL',
    connectionId: 's',
    properties: { connectionString: cfg.source },
  });
  const target = await host.open({
    connectorId: 'PostgreSQL',
    connectionId: 't',
    properties: { connectionString: cfg.target },
  });
  const stop = new AbortController();
  process.on('SIGTERM', () => stop.abort());
  const t0 = performance.now();
  const r = await replicateChanges({
    source,
    target,
    entities: cfg.entities,
    checkForBulk: true,
    signal: stop.signal,
    name: cfg.slot,
    settings: { continuous: cfg.continuous, retainedWarnBytes: 1 << 30 },
    stateDir: path.join(cfg.dir, 'state'),
    log: pino({ level: process.env['FERRY_BENCH_LOG'] ?? 'warn' }, pino.destination(2)),
  });
  if (r.fatal) throw new Error(r.fatal);
  const ms = performance.now() - t0;
  await host.close();
  // The first copy's own time: the entity's statistics from the copy (before the catch-up's).
  const copyMs = r.statistics[0]?.totalMs ?? ms;
  process.stdout.write(`${JSON.stringify({ processed: r.processed, ms, copyMs })}\n`);
}

function psqlCopy(url: string, csv: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(
      'psql',
      [url, '-v', 'ON_ERROR_STOP=1', '-c', `\\copy rows FROM '${csv.replace(/'/g, "''")}' WITH (FORMAT csv)`],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    p.on('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error('psql failed'))));
  });
}

async function firstCopy(cfg: Cfg, csv: string): Promise<Record<string, number>> {
  await sql(cfg.source, `${PG_DDL}; CHECKPOINT`);
  const psqlMs = await psqlCopy(cfg.source, csv);
  await sql(cfg.source, 'VACUUM ANALYZE rows');
  await sql(cfg.source, 'CHECKPOINT');
  const r = await startChild({ ...cfg, entities: ['rows'], continuous: false }).done;
  const [n] = await sql<{ n: number }>(cfg.target, 'SELECT count(*)::int AS n FROM rows');
  if (n?.n !== ROWS) throw new Error(`the target has ${n?.n} rows, not ${ROWS}`);
  const psqlRate = (ROWS / psqlMs) * 1000;
  const runRate = (ROWS / r.ms) * 1000;
  const copyRate = (ROWS / r.copyMs) * 1000;
  log(
    `psql \\copy ${Math.round(psqlRate)} rows/s; first copy ${Math.round(copyRate)} rows/s; whole first run (slot, copy, catch-up) ${Math.round(runRate)} rows/s`,
  );
  return {
    psqlRowsPerSec: Math.round(psqlRate),
    copyRowsPerSec: Math.round(copyRate),
    firstRunRowsPerSec: Math.round(runRate),
    copyVsPsql: Math.round((copyRate / psqlRate) * 1000) / 1000,
    firstRunVsPsql: Math.round((runRate / psqlRate) * 1000) / 1000,
  };
}

async function sustained(cfg: Cfg): Promise<Record<string, number>> {
  await sql(
    cfg.source,
    'CREATE TABLE ticks (id integer PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())',
  );
  const run = startChild({ ...cfg, entities: ['rows', 'ticks'], continuous: true });
  const writer = new pg.Client({ connectionString: cfg.source });
  const target = new pg.Client({ connectionString: cfg.target });
  await writer.connect();
  await target.connect();
  // The same capture, now with ticks: its (empty) first copy, then the changes; the first tick lands.
  await writer.query('INSERT INTO ticks (id) VALUES (0)');
  for (let i = 0; ; i++) {
    const got = await target.query('SELECT 1 FROM ticks WHERE id = 0').catch(() => ({ rowCount: 0 }));
    if (got.rowCount) break;
    if (i > 6000) throw new Error('the capture did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  log(`sustained: ${RATE} changes/s for ${SECONDS} s`);
  const committed = new Map<number, number>();
  const seen = new Map<number, number>();
  let changes = 0;
  let tick = 0;
  let stop = false;
  let nextId = ROWS + 1;
  const poll = (async () => {
    while (!stop || seen.size < tick) {
      const r = await target.query<{ m: number | null }>('SELECT max(id) AS m FROM ticks');
      const m = r.rows[0]?.m ?? 0;
      const now = Date.now();
      for (let i = 1; i <= m; i++) if (!seen.has(i)) seen.set(i, now);
      if (stop && Date.now() - (committed.get(tick) ?? 0) > 30_000) break;
      await new Promise((res) => setTimeout(res, 50));
    }
  })();
  const t0 = Date.now();
  const perTxn = 50;
  const txnsPerSec = RATE / perTxn;
  let txns = 0;
  while (Date.now() - t0 < SECONDS * 1000) {
    const due = t0 + (txns / txnsPerSec) * 1000;
    if (Date.now() < due) await new Promise((r) => setTimeout(r, due - Date.now()));
    const parts: string[] = [];
    for (let k = 0; k < perTxn; k++) {
      const id = 1 + Math.floor(Math.random() * ROWS);
      const kind = k % 5;
      if (kind < 2) parts.push(`INSERT INTO rows (id, name, qty) VALUES (${nextId++}, 'new', 1)`);
      else if (kind < 4) parts.push(`UPDATE rows SET qty = qty + 1, name = 'c${txns}' WHERE id = ${id}`);
      else parts.push(`DELETE FROM rows WHERE id = ${id}`);
    }
    await writer.query(`BEGIN; ${parts.join('; ')}; COMMIT`);
    changes += perTxn;
    txns++;
    if (Date.now() - t0 >= (tick + 1) * 100) {
      tick++;
      await writer.query(`INSERT INTO ticks (id) VALUES (${tick})`);
      committed.set(tick, Date.now());
    }
  }
  const elapsed = (Date.now() - t0) / 1000;
  stop = true;
  await poll;
  const lags = [...committed].map(([id, at]) => (seen.get(id) ?? Infinity) - at).sort((a, b) => a - b);
  const pct = (p: number): number => lags[Math.min(lags.length - 1, Math.floor(lags.length * p))] ?? Infinity;
  // Every change applied: the two sides equal once the last tick is in.
  const summary = `SELECT count(*)::int AS n, coalesce(sum(qty), 0)::bigint AS q, md5(string_agg(id || ':' || coalesce(name, ''), ',' ORDER BY id)) AS h FROM rows`;
  const [a] = await sql<{ n: number; q: string; h: string }>(cfg.source, summary);
  const [b] = await sql<{ n: number; q: string; h: string }>(cfg.target, summary);
  run.proc.kill('SIGTERM');
  await run.done;
  await writer.end();
  await target.end();
  const result = {
    changesPerSec: Math.round(changes / elapsed),
    ticks: lags.length,
    lagP50Ms: pct(0.5),
    lagP99Ms: pct(0.99),
    lagMaxMs: lags[lags.length - 1] ?? Infinity,
    equal: a?.n === b?.n && a?.q === b?.q && a?.h === b?.h ? 1 : 0,
  };
  log(`sustained: ${JSON.stringify(result)}`);
  return result;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-cdc-bench-'));
  const id = randomBytes(4).toString('hex');
  const [srcDb, dstDb] = [`ferry_cdc_src_${id}`, `ferry_cdc_dst_${id}`];
  await sql(ADMIN_URL, `CREATE DATABASE ${srcDb}`);
  await sql(ADMIN_URL, `CREATE DATABASE ${dstDb}`);
  const cfg: Cfg = {
    dir,
    source: dbUrl(srcDb),
    target: dbUrl(dstDb),
    slot: `ferry_bench_${id}`,
    entities: [],
    continuous: false,
  };
  try {
    log(`generating ${ROWS} rows in ${dir}`);
    const db = new Database(path.join(dir, 'rows.db'));
    db.exec(SQLITE_DDL);
    const csv = path.join(dir, 'rows.csv');
    const fd = fs.openSync(csv, 'w');
    writeBenchRows(db, fd, ROWS);
    fs.closeSync(fd);
    db.close();
    const copy = await firstCopy(cfg, csv);
    const live = SECONDS > 0 ? await sustained(cfg) : {};
    process.stdout.write(
      `${JSON.stringify({ rows: ROWS, firstCopy: copy, sustained: { rateGoal: RATE, seconds: SECONDS, ...live }, load: os.loadavg() }, null, 2)}\n`,
    );
  } finally {
    await sql(
      ADMIN_URL,
      `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '${cfg.slot}'`,
    ).catch(() => undefined);
    await sql(ADMIN_URL, `DROP DATABASE IF EXISTS ${srcDb} WITH (FORCE)`);
    await sql(ADMIN_URL, `DROP DATABASE IF EXISTS ${dstDb} WITH (FORCE)`);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--child') await child();
else await main();
