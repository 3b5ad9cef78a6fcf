/**
 * The MariaDB Connector against the servers' own bulk loaders, in one run on one machine
 * (docs/benchmarks.md "MariaDB"):
 *
 *   load data   the anchor: the mariadb client's LOAD DATA LOCAL INFILE of the CSV file
 *   csv → maria the CSV Connector → the MariaDB Connector's Create through the plugin host
 *               (transfer(), one batch read ahead), bulkMethod auto (LOAD DATA LOCAL from a stream)
 *   … packed    the same as packed batches (queryPacked → writePacked): what a Map of plain field
 *               copies and a Replication's first copy move, straight from the CSV's bytes into LOAD DATA
 *   … insert    records with bulkMethod insert (multi-row INSERT statements), to compare the two
 *   \copy       the anchor of the replication: psql \copy of the same CSV into PostgreSQL
 *   maria → pg  the first run of replicate() from the MariaDB table into PostgreSQL: ensureEntity,
 *               the snapshot read in key order, Upsert by key, a checkpoint per batch
 *
 *   npx tsx test/bench/mariadb.bench.ts      → JSON on stdout, progress on stderr
 *
 * FERRY_BENCH_ROWS (default 1000000), FERRY_BENCH_PAIRS (default 3: each case right after its
 * anchor, the median of the pairs' ratios reported), FERRY_BENCH_MARIADB_URL (else
 * FERRY_TEST_MARIADB_URL, else mysql://root@127.0.0.1:3306/test) and FERRY_BENCH_DATABASE_URL
 * (else FERRY_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test): servers where the
 * bench may create and drop a database; FERRY_BENCH_CASES (for example `mariaToPostgres`): only
 * these cases, each with its anchor; FERRY_BENCH_CPU_PROF=DIR: a CPU profile of each case's child. Needs the `mariadb` and `psql` clients on the PATH.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import pg from 'pg';
import pino from 'pino';
import { ConnectorHost } from '../../src/connectors/host.js';
import { transfer } from '../../src/connectors/transfer.js';
import { MemoryReplicationState, replicate } from '../../src/solutions/replicate.js';
import { benchChildFlags, procCpuMs } from './proc.js';
import { writeBenchCsv } from './rows.js';

const SELF = fileURLToPath(import.meta.url);
const CONNECTORS_DIR = path.resolve(path.dirname(SELF), '../../connectors');
const ROWS = Number(process.env['FERRY_BENCH_ROWS'] ?? 1_000_000);
const PAIRS = Number(process.env['FERRY_BENCH_PAIRS'] ?? 3);
const CASES = process.env['FERRY_BENCH_CASES']?.split(',').map((c) => c.trim());
const chosen = (c: string): boolean => !CASES || CASES.includes(c);
const MARIA_URL = new URL(
  process.env['FERRY_BENCH_MARIADB_URL'] ?? process.env['FERRY_TEST_MARIADB_URL'] ?? 'mysql://root@127.0.0.1:3306/test',
);
const PG_ADMIN =
  process.env['FERRY_BENCH_DATABASE_URL'] ??
  process.env['FERRY_TEST_DATABASE_URL'] ??
  'postgres://postgres@127.0.0.1:5432/test';

const MARIA_DDL = `CREATE TABLE bench_rows (id int PRIMARY KEY, name text, email text, amount decimal(12,2), qty int,
  price double, active boolean, created date, updated datetime(6), note text) ENGINE=InnoDB`;
const PG_DDL = `CREATE TABLE rows (id integer PRIMARY KEY, name text, email text, amount numeric(12,2), qty integer,
  price double precision, active boolean, created date, updated timestamptz, note text)`;

interface Cfg {
  dir: string;
  csvFolder: string;
  maria: Record<string, string>;
  pgUrl: string;
}
interface Result {
  case: string;
  rows: number;
  ms: number;
  rowsPerSec: number;
  cpuMs?: number;
}

const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

function mariaOptions(database?: string): mysql.ConnectionOptions {
  return {
    host: MARIA_URL.hostname,
    port: Number(MARIA_URL.port || 3306),
    user: decodeURIComponent(MARIA_URL.username || 'root'),
    password: decodeURIComponent(MARIA_URL.password),
    multipleStatements: true,
    ...(database ? { database } : {}),
  };
}

async function mariaExec(database: string | undefined, sql: string): Promise<void> {
  const c = await mysql.createConnection(mariaOptions(database));
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function pgExec(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A command's run as a Result of ROWS rows. */
function timedCommand(name: string, cmd: string, args: string[]): Promise<Result> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    p.on('error', reject);
    p.on('exit', (code) => {
      const ms = performance.now() - t0;
      if (code === 0) resolve({ case: name, rows: ROWS, ms, rowsPerSec: (ROWS / ms) * 1000 });
      else reject(new Error(`${cmd} failed (${code})`));
    });
  });
}

function runChild(name: string, cfg: Cfg): Promise<Result> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...benchChildFlags(), '--import', 'tsx', SELF, '--child', name], {
      env: { ...process.env, FERRY_BENCH_CFG: JSON.stringify(cfg) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
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
  const maria = await host.open({
    connectorId: 'MariaDB',
    connectionId: 'bench-maria',
    properties: { ...cfg.maria, ...(name === 'csvToMariaInsert' ? { bulkMethod: 'insert' } : {}) },
  });
  await maria.metadata();
  const cpu0 = procCpuMs(process.pid);
  const t0 = performance.now();
  let rows: number;
  if (name === 'mariaToPostgres') {
    const dst = await host.open({
      connectorId: 'PostgreSQL',
      connectionId: 'bench-pg',
      properties: { connectionString: cfg.pgUrl },
    });
    await dst.metadata();
    const r = await replicate({
      source: maria,
      target: dst,
      entities: ['bench_rows'],
      checkForBulk: true,
      signal: new AbortController().signal,
      state: new MemoryReplicationState(),
      log: pino({ level: 'warn' }),
    });
    if (r.fatal) throw new Error(r.fatal);
    rows = r.processed;
  } else if (name === 'csvToMariaPacked') {
    const csv = await host.open({
      connectorId: 'CSV',
      connectionId: 'bench-csv',
      properties: { folder: cfg.csvFolder },
    });
    const source = csv.queryPacked('rows', undefined, { batchSize: 10_000 });
    if (!source) throw new Error('the CSV Connector does not read this query packed');
    // One batch read ahead, as transfer() and a packed copy do.
    const it = source[Symbol.asyncIterator]();
    let next = it.next();
    rows = 0;
    for (;;) {
      const r = await next;
      if (r.done) break;
      next = it.next();
      const results = await maria.writePacked('Create', 'bench_rows', r.value);
      if (results.some((x) => !x.ok)) throw new Error('records failed');
      rows += r.value.rows;
    }
  } else {
    const csv = await host.open({
      connectorId: 'CSV',
      connectionId: 'bench-csv',
      properties: { folder: cfg.csvFolder },
    });
    const res = await transfer(csv.query('rows', undefined, { batchSize: 10_000 }), (b) =>
      maria.write('Create', 'bench_rows', b),
    );
    if (res.failed) throw new Error(`${res.failed} records failed`);
    rows = res.written;
  }
  const ms = performance.now() - t0;
  const cpuMs = procCpuMs(process.pid) - cpu0;
  await host.close();
  process.stdout.write(`${JSON.stringify({ case: name, rows, ms, rowsPerSec: (rows / ms) * 1000, cpuMs })}\n`);
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-maria-bench-'));
  const name = `ferry_maria_bench_${randomBytes(4).toString('hex')}`;
  const pgUrl = new URL(PG_ADMIN);
  pgUrl.pathname = `/${name}`;
  const cfg: Cfg = {
    dir,
    csvFolder: path.join(dir, 'csv'),
    maria: {
      host: MARIA_URL.hostname,
      port: MARIA_URL.port || '3306',
      user: decodeURIComponent(MARIA_URL.username || 'root'),
      ...(MARIA_URL.password ? { password: decodeURIComponent(MARIA_URL.password) } : {}),
      database: name,
    },
    pgUrl: pgUrl.toString(),
  };
  await mariaExec(undefined, `CREATE DATABASE ${name} CHARACTER SET utf8mb4`);
  await pgExec(PG_ADMIN, `CREATE DATABASE ${name}`);
  const out: Record<string, Result[]> = {};
  const ratios: Record<string, number[]> = {
    csvToMaria: [],
    csvToMariaPacked: [],
    csvToMariaInsert: [],
    mariaToPostgres: [],
  };
  try {
    log(`generating ${ROWS} rows in ${dir}`);
    await writeBenchCsv(cfg.csvFolder, ROWS);
    const file = path.join(cfg.csvFolder, 'rows.csv');
    const mariaArgs = [
      '--local-infile=1',
      `-h${MARIA_URL.hostname}`,
      `-P${MARIA_URL.port || '3306'}`,
      `-u${decodeURIComponent(MARIA_URL.username || 'root')}`,
      ...(MARIA_URL.password ? [`-p${decodeURIComponent(MARIA_URL.password)}`] : []),
      name,
      '-e',
      `LOAD DATA LOCAL INFILE '${file.replace(/'/g, "''")}' INTO TABLE bench_rows FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' LINES TERMINATED BY '\\n' IGNORE 1 LINES (id, name, email, amount, qty, price, @active, created, @updated, note) SET active = (@active = 'true'), updated = REPLACE(REPLACE(@updated, 'T', ' '), 'Z', '')`,
    ];
    const record = (r: Result): Result => {
      (out[r.case] ??= []).push(r);
      log(`${r.case}: ${Math.round(r.rowsPerSec).toLocaleString('en')} rows/s (${Math.round(r.ms)} ms)`);
      return r;
    };
    const freshMaria = (): Promise<void> => mariaExec(name, `DROP TABLE IF EXISTS bench_rows; ${MARIA_DDL}`);
    for (let i = 0; i < PAIRS; i++) {
      let loaded = false;
      for (const c of ['csvToMaria', 'csvToMariaPacked', 'csvToMariaInsert'] as const) {
        if (!chosen(c)) continue;
        loaded = true;
        await freshMaria();
        const anchor = record(await timedCommand('loadData', 'mariadb', mariaArgs));
        await freshMaria();
        const r = record(await runChild(c, cfg));
        ratios[c]?.push(r.rowsPerSec / anchor.rowsPerSec);
      }
      if (!chosen('mariaToPostgres')) continue;
      if (!loaded) {
        // The replication's source: the rows as the server's own LOAD DATA puts them.
        await freshMaria();
        await timedCommand('loadData', 'mariadb', mariaArgs);
      }
      await pgExec(cfg.pgUrl, `DROP TABLE IF EXISTS rows; ${PG_DDL}; CHECKPOINT`);
      const copy = record(
        await timedCommand('psqlCopy', 'psql', [
          cfg.pgUrl,
          '-v',
          'ON_ERROR_STOP=1',
          '-c',
          `\\copy rows FROM '${file.replace(/'/g, "''")}' WITH (FORMAT csv, HEADER true)`,
        ]),
      );
      await pgExec(cfg.pgUrl, 'DROP TABLE IF EXISTS bench_rows; CHECKPOINT');
      const r = record(await runChild('mariaToPostgres', cfg));
      ratios['mariaToPostgres']?.push(r.rowsPerSec / copy.rowsPerSec);
    }
  } finally {
    await mariaExec(undefined, `DROP DATABASE IF EXISTS ${name}`);
    await pgExec(PG_ADMIN, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const round = (x: number): number => Math.round(x * 1000) / 1000;
  process.stdout.write(
    `${JSON.stringify(
      {
        rows: ROWS,
        pairs: PAIRS,
        goals: { csvToMaria: 0.7, csvToMariaPacked: 0.7, mariaToPostgres: 0.7 },
        medians: Object.fromEntries(
          Object.entries(ratios)
            .filter(([, v]) => v.length > 0)
            .map(([k, v]) => [k, round(median(v))]),
        ),
        ratios: Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, v.map(round)])),
        rowsPerSec: Object.fromEntries(
          Object.entries(out).map(([k, v]) => [k, v.map((r) => Math.round(r.rowsPerSec))]),
        ),
        cpuMsPerMillion: Object.fromEntries(
          Object.entries(out)
            .filter(([, v]) => v[0]?.cpuMs !== undefined)
            .map(([k, v]) => [k, v.map((r) => Math.round(((r.cpuMs ?? 0) / r.rows) * 1_000_000))]),
        ),
        load: os.loadavg(),
      },
      null,
      2,
    )}\n`,
  );
}

if (process.argv[2] === '--child') await child(process.argv[3] ?? '');
else await main();
