/**
 * Lookup Tables at 200,000 values, on a real Service over HTTP:
 *
 *   npx tsx test/bench/lookup-tables.bench.ts            # SQLite
 *   FERRY_TEST_DATABASE_URL=postgres://… npx tsx …       # SQLite, then PostgreSQL
 *
 * The Service runs in a child process (serve-child.ts), so its peak RSS is its own. Per
 * store, in BENCH_ROUNDS rounds (median reported): create a table with 200,000 values in one POST;
 * import a 200,000-line CSV into an empty table in one POST; and the anchors, on the same disk and
 * server in the same round: the same rows written into a table of the same shape and indexes by a
 * raw multi-row INSERT through the same driver, and by the store's own bulk loader
 * (`sqlite3 .import` / `psql \copy`) when installed. Then 10,000 lookups (value2 for value1) over
 * HTTP against as many calls of the cheapest authenticated read (Security Rules); export and
 * download the CSV; GET the table as JSON; load it for a Map run (loadLookupTables) and look up in
 * memory. Prints one JSON document; times are milliseconds, ratios are ours ÷ anchor.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { loadLookupTables } from '../../service/store/repos/lookup-tables.repo.js';
import { SQLITE_MAX_PARAMS } from '../../service/store/repos/lookup-values.repo.js';
import { preinstalledConnectors } from '../../service/marketplace/catalogue.js';
import { openStore } from '../../service/store/store.js';
import { uuidV7 } from '../../service/util/uuid-v7.js';
import { newId } from '../../service/util/values.js';
import { benchRequest, peakRssMiB, startServiceChild, type BenchResponse, type StoreName } from './serve-child.js';

const VALUES = Number(process.env['BENCH_VALUES'] ?? 200_000);
const LOOKUPS = Number(process.env['BENCH_LOOKUPS'] ?? 10_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const CONCURRENCY = 8;
const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];

interface Pair {
  value1: string;
  value2: string;
}

/** Deterministic data: unique value1 codes, value2 texts with a comma in every tenth. */
function pairs(n: number): Pair[] {
  return Array.from({ length: n }, (_, i) => ({
    value1: `CODE-${String(i).padStart(7, '0')}`,
    value2: i % 10 === 0 ? `Name ${i}, Inc.` : `Name ${i}`,
  }));
}

const csvField = (v: string): string => (/[",\r\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);
const toCsv = (rows: Pair[]): string =>
  `value1,value2\r\n${rows.map((r) => `${csvField(r.value1)},${csvField(r.value2)}\r\n`).join('')}`;

const perSecond = (n: number, ms: number): number => Math.round((n / Math.max(ms, 1)) * 1000);
const ratio = (a: number, b: number | undefined): number | null => (b ? Math.round((a / b) * 100) / 100 : null);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const mib = (chars: number): number => Math.round((chars / 2 ** 20) * 10) / 10;

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const start = performance.now();
  const result = await fn();
  return { ms: Math.round(performance.now() - start), result };
}

function check(cond: boolean, what: string): void {
  if (!cond) throw new Error(`benchmark check failed: ${what}`);
}

function hasCommand(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

class Client {
  readonly #agent = new http.Agent({ keepAlive: true });
  constructor(readonly base: string) {}

  request(method: string, pathAndQuery: string, body?: string, contentType?: string): Promise<BenchResponse> {
    return benchRequest(this.base, method, pathAndQuery, { body, contentType, agent: this.#agent });
  }

  async json<T>(
    method: string,
    pathAndQuery: string,
    body?: unknown,
  ): Promise<{ status: number; body: T; text: string }> {
    const res = await this.request(
      method,
      pathAndQuery,
      body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    );
    return { status: res.status, text: res.text, body: JSON.parse(res.text) as T };
  }

  close(): void {
    this.#agent.destroy();
  }
}

const DDL = (collate: string): string[] => [
  `CREATE TABLE anchor (id text PRIMARY KEY, table_id text NOT NULL, seq integer NOT NULL, value1 text${collate} NOT NULL, value2 text${collate} NOT NULL, creation_date text NOT NULL, last_modification_date text NOT NULL)`,
  'CREATE UNIQUE INDEX anchor_seq ON anchor (table_id, seq)',
  'CREATE INDEX anchor_v1 ON anchor (table_id, value1, value2, seq)',
  'CREATE INDEX anchor_v2 ON anchor (table_id, value2, value1, seq)',
];

/** The rows as the store holds them (ID, table ID, seq, value1, value2, two dates), as CSV for the bulk loaders. */
function fullRowsCsv(rows: Pair[], now: string): string {
  const tableId = newId();
  return rows
    .map((r, i) => `${uuidV7()},${tableId},${i},${csvField(r.value1)},${csvField(r.value2)},${now},${now}\n`)
    .join('');
}

/** Raw multi-row INSERTs through better-sqlite3 (one transaction), then `sqlite3 .import`, into fresh files. */
function sqliteAnchor(dir: string, rows: Pair[]): { rawInsertMs: number; bulkLoaderMs?: number } {
  const file = path.join(dir, `anchor-${newId()}.db`);
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  for (const ddl of DDL('')) db.exec(ddl);
  const tableId = newId();
  const now = new Date().toISOString();
  const perStmt = Math.floor(SQLITE_MAX_PARAMS / 7);
  const start = performance.now();
  db.transaction(() => {
    for (let i = 0; i < rows.length; i += perStmt) {
      const part = rows.slice(i, i + perStmt);
      db.prepare(`INSERT INTO anchor VALUES ${part.map(() => '(?,?,?,?,?,?,?)').join(',')}`).run(
        part.flatMap((r, j) => [uuidV7(), tableId, i + j, r.value1, r.value2, now, now]),
      );
    }
  })();
  const rawInsertMs = Math.round(performance.now() - start);
  db.close();
  fs.rmSync(file, { force: true });
  if (!hasCommand('sqlite3')) return { rawInsertMs };
  const csvFile = path.join(dir, 'anchor.csv');
  fs.writeFileSync(csvFile, fullRowsCsv(rows, now));
  const cli = path.join(dir, `anchor-cli-${newId()}.db`);
  execFileSync('sqlite3', [cli, 'PRAGMA journal_mode=WAL;', ...DDL('').map((d) => `${d};`)]);
  const t = performance.now();
  execFileSync('sqlite3', [cli, 'PRAGMA synchronous=NORMAL;', '.mode csv', `.import ${csvFile} anchor`]);
  const bulkLoaderMs = Math.round(performance.now() - t);
  fs.rmSync(cli, { force: true });
  return { rawInsertMs, bulkLoaderMs };
}

/** Raw multi-row INSERTs through pg (at most 65,535 parameters each, one transaction), then `psql \copy`. */
async function postgresAnchor(
  databaseUrl: string,
  dir: string,
  rows: Pair[],
): Promise<{ rawInsertMs: number; bulkLoaderMs?: number }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('DROP TABLE IF EXISTS anchor');
    for (const ddl of DDL(' COLLATE "C"')) await client.query(ddl);
    const tableId = newId();
    const now = new Date().toISOString();
    const perStmt = Math.floor(65_535 / 7);
    const start = performance.now();
    await client.query('BEGIN');
    for (let i = 0; i < rows.length; i += perStmt) {
      const part = rows.slice(i, i + perStmt);
      const tuples = part.map((_, j) => `(${Array.from({ length: 7 }, (_, k) => `$${j * 7 + k + 1}`).join(',')})`);
      await client.query(
        `INSERT INTO anchor VALUES ${tuples.join(',')}`,
        part.flatMap((r, j) => [uuidV7(), tableId, i + j, r.value1, r.value2, now, now]),
      );
    }
    await client.query('COMMIT');
    const rawInsertMs = Math.round(performance.now() - start);
    if (!hasCommand('psql')) return { rawInsertMs };
    const csvFile = path.join(dir, 'anchor.csv');
    fs.writeFileSync(csvFile, fullRowsCsv(rows, now));
    await client.query('TRUNCATE anchor');
    const t = performance.now();
    execFileSync('psql', [databaseUrl, '-q', '-c', `\\copy anchor FROM '${csvFile}' WITH (FORMAT csv)`]);
    return { rawInsertMs, bulkLoaderMs: Math.round(performance.now() - t) };
  } finally {
    await client.query('DROP TABLE IF EXISTS anchor');
    await client.end();
  }
}

/** Runs `n` calls with at most `concurrency` in flight; returns the latencies in ms, sorted. */
async function pool(n: number, concurrency: number, call: (i: number) => Promise<void>): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const t = performance.now();
        await call(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return latencies.sort((a, b) => a - b);
}

const percentile = (sorted: number[], p: number): number =>
  Math.round((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0) * 100) / 100;

/**
 * ROUNDS rounds of writes at `L` (the Lookup Tables path): a table created with every value in one
 * POST, a CSV imported into an empty one, and the anchors of the store. Answers the rounds' times
 * and the last table created.
 */
async function writeRounds(
  api: Client,
  L: string,
  where: { store: StoreName; databaseUrl: string | undefined; scratch: string },
  rows: Pair[],
  csv: string,
) {
  const { store, databaseUrl, scratch } = where;
  const rounds: Array<{ create: number; import: number; rawInsert: number; bulkLoader?: number }> = [];
  let tableId = '';
  let tableName = '';
  let createBodyChars = 0;
  for (let round = 0; round < ROUNDS; round++) {
    tableName = `Bench ${round}`;
    const createBody = JSON.stringify({
      name: tableName,
      description: `${rows.length} values`,
      lookupTableValues: rows,
    });
    createBodyChars = createBody.length;
    const create = await timed(() => api.request('POST', L, createBody));
    check(create.result.status === 201, `create answered ${create.result.status}: ${create.result.text.slice(0, 300)}`);
    tableId = (JSON.parse(create.result.text) as { id: string }).id;

    const empty = await api.json<{ id: string }>('POST', L, { name: `Bench import ${round}` });
    const imported = await timed(() =>
      api.request('POST', `${L}/${empty.body.id}/import?hasHeaderRow=true`, csv, 'text/csv'),
    );
    check(
      imported.result.status === 200 && imported.result.text.includes(`"valuesImported":${rows.length}`),
      `import answered ${imported.result.status}: ${imported.result.text.slice(0, 300)}`,
    );

    const anchor =
      store === 'sqlite' ? sqliteAnchor(scratch, rows) : await postgresAnchor(databaseUrl ?? '', scratch, rows);
    rounds.push({
      create: create.ms,
      import: imported.ms,
      rawInsert: anchor.rawInsertMs,
      ...(anchor.bulkLoaderMs ? { bulkLoader: anchor.bulkLoaderMs } : {}),
    });
  }
  return { rounds, tableId, tableName, createBodyChars };
}

async function benchStore(store: StoreName, rows: Pair[]): Promise<Record<string, unknown>> {
  const { served, rss, stop } = await startServiceChild(store);
  const api = new Client(served.url);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-bench-anchor-'));
  try {
    const L = `/v1/orgs/${served.orgId}/lookuptables`;
    const csv = toCsv(rows);
    const startRss = (await rss()).peakRssMiB;
    const { rounds, tableId, tableName, createBodyChars } = await writeRounds(
      api,
      L,
      { store, databaseUrl: served.databaseUrl, scratch },
      rows,
      csv,
    );
    const writesRss = (await rss()).peakRssMiB;
    const createMs = median(rounds.map((r) => r.create));
    const importMs = median(rounds.map((r) => r.import));
    const rawInsertMs = median(rounds.map((r) => r.rawInsert));
    const loaderMs = rounds.every((r) => r.bulkLoader) ? median(rounds.map((r) => r.bulkLoader ?? 0)) : undefined;

    let state = 12345;
    const random = (): number => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state / 2 ** 31;
    };
    const keys = Array.from({ length: LOOKUPS }, () => rows[Math.floor(random() * rows.length)] as Pair);
    const refName = encodeURIComponent(tableName);
    const lookups = await timed(() =>
      pool(LOOKUPS, CONCURRENCY, async (i) => {
        const key = keys[i] as Pair;
        const res = await api.json<{ value2: string }>(
          'GET',
          `${L}/${refName}/values/value2/${encodeURIComponent(key.value1)}`,
        );
        if (res.status !== 200 || res.body.value2 !== key.value2)
          throw new Error(`lookup ${key.value1} answered ${res.status}`);
      }),
    );
    // The same number of calls of the cheapest authenticated Organization read, which pays the
    // same authentication, Security Rule and role checks as a lookup.
    const baseline = await timed(() =>
      pool(LOOKUPS, CONCURRENCY, async () => {
        const res = await api.request('GET', `/v1/orgs/${served.orgId}/securityrules`);
        if (res.status !== 200) throw new Error(`security rules answered ${res.status}`);
      }),
    );

    const exportId = (await api.json<{ exportId: number }>('GET', `${L}/${tableId}/export`)).body.exportId;
    const download = await timed(() => api.request('GET', `${L}/${tableId}/export/${exportId}`));
    check(download.result.status === 200 && download.result.text.length > csv.length / 2, 'export downloaded');
    const get = await timed(() => api.request('GET', `${L}/${tableId}`));
    check(get.result.status === 200 && get.result.text.length > createBodyChars, 'GET returned the values');
    const readsRss = (await rss()).peakRssMiB;

    const local = await openStore({
      databaseUrl: served.databaseUrl,
      dataDir: served.dataDir,
      preinstalledConnectors: preinstalledConnectors(),
    });
    try {
      const load = await timed(() => loadLookupTables(local.db, served.orgId, [tableName]));
      const inMemory = await timed(async () => {
        let found = 0;
        for (let i = 0; i < 1_000_000; i++)
          if (load.result.value2(tableName, (keys[i % keys.length] as Pair).value1) !== undefined) found++;
        return found;
      });
      check(inMemory.result === 1_000_000, 'in-memory lookups all matched');
      return {
        store,
        values: rows.length,
        rounds: ROUNDS,
        create: {
          ms: createMs,
          valuesPerSecond: perSecond(rows.length, createMs),
          bodyMiB: mib(createBodyChars),
          responseMiB: mib(get.result.text.length),
          vsRawInsert: ratio(createMs, rawInsertMs),
          vsBulkLoader: ratio(createMs, loaderMs),
        },
        import: {
          ms: importMs,
          rowsPerSecond: perSecond(rows.length, importMs),
          csvMiB: mib(csv.length),
          vsRawInsert: ratio(importMs, rawInsertMs),
          vsBulkLoader: ratio(importMs, loaderMs),
        },
        lookupsHttp: {
          count: LOOKUPS,
          concurrency: CONCURRENCY,
          ms: lookups.ms,
          perSecond: perSecond(LOOKUPS, lookups.ms),
          p50Ms: percentile(lookups.result, 0.5),
          p99Ms: percentile(lookups.result, 0.99),
          vsSecurityRulesRead: ratio(lookups.ms, baseline.ms),
        },
        exportDownload: {
          ms: download.ms,
          rowsPerSecond: perSecond(rows.length, download.ms),
          csvMiB: mib(download.result.text.length),
        },
        getTableJson: { ms: get.ms, mib: mib(get.result.text.length) },
        loadForRun: { ms: load.ms, inMemoryLookupsPerSecond: perSecond(1_000_000, inMemory.ms) },
        servicePeakRssMiB: { atStart: startRss, afterWrites: writesRss, afterReads: readsRss },
        anchor: {
          rawInsertMs,
          bulkLoaderMs: loaderMs ?? null,
          securityRulesReadsPerSecond: perSecond(LOOKUPS, baseline.ms),
          rounds,
        },
      };
    } finally {
      await local.close();
    }
  } finally {
    api.close();
    fs.rmSync(scratch, { recursive: true, force: true });
    await stop();
  }
}

async function main(): Promise<void> {
  const rows = pairs(VALUES);
  const loadBefore = os.loadavg()[0] ?? 0;
  const stores: StoreName[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];
  const results = [];
  for (const store of stores) results.push(await benchStore(store, rows));
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'lookup-tables',
        node: process.version,
        cpus: os.cpus().length,
        // Other work on the machine skews the times; the ratios compare steps measured side by side.
        loadAverage1m: {
          before: Math.round(loadBefore * 10) / 10,
          after: Math.round((os.loadavg()[0] ?? 0) * 10) / 10,
        },
        clientPeakRssMiB: peakRssMiB(),
        results,
      },
      null,
      2,
    )}\n`,
  );
}

await main();
