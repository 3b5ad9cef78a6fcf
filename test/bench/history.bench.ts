/**
 * History at scale: one execution with 1,000,000 record errors (BENCH_ERRORS), on a real Service
 * over HTTP:
 *
 *   npx tsx test/bench/history.bench.ts            # SQLite
 *   FERRY_TEST_DATABASE_URL=postgres://… npx tsx …  # SQLite, then PostgreSQL
 *
 * The Service runs in a child process (serve-child.ts), so its peak RSS is its own. The errors,
 * and a cloud failed record for each (sealed as the Service seals them), are written straight
 * into the store through the repositories (history-seed.ts), numbered as the
 * runErrors handler numbers them; the report path itself is measured in "Solutions". Then, per
 * store: pages of 100 errors at offsets 0, 500,000 and 999,900 (BENCH_PAGES calls each, median and
 * max), against the anchor of the same run, a plain `SELECT … ORDER BY seq LIMIT 100` of the same
 * table through the same driver, and the former `LIMIT 100 OFFSET n` query; the CSV export
 * (request, then the download read as a stream) with the Service's peak RSS, against the store's
 * own CSV writer (`sqlite3 -csv`, `psql \copy`) over the same errors; marking all errors
 * (`POST H/{id}/mark`, BENCH_MARK_ROUNDS times each way) against the read of the execution
 * (`GET H/{id}`, which counts the reprocessable errors as a mark-all's answer does), marking
 * errors one by one (BENCH_OWN_MARKS of them) before a mark-all clears those marks, and on
 * PostgreSQL the mark-all again after VACUUM; and the retention removal of the execution, the
 * longest single DELETE of 5,000 errors.
 *
 * The errors are written in steps: first BENCH_EXPORT_SIZES of them (default 250,000, then
 * 500,000), each followed by the export, before the rest; on PostgreSQL each step ends with
 * ANALYZE. The Service's kernel high-water mark of its resident set only ever rises, so, smallest
 * first, it shows whether a larger export needs more memory; its resident set is also sampled
 * every 50 ms during each export. Prints one JSON document; times are ms; the load average at the
 * start and the end of each store's run.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import pino from 'pino';
import { sql } from 'kysely';
import { SecretBox } from '../../service/crypto/master-key.js';
import { HistoryRetention } from '../../service/jobs/history-retention.js';
import { preinstalledConnectors } from '../../service/marketplace/catalogue.js';
import { deleteErrorsChunk } from '../../service/store/repos/executions.repo.js';
import { openStore, type Store } from '../../service/store/store.js';
import { ADMIN } from '../helpers/service.js';
import { createExecution, seedErrors, type SeededExecution } from './history-seed.js';
import { benchRequest, startServiceChild, type ServiceChild, type StoreName } from './serve-child.js';

const ERRORS = Number(process.env['BENCH_ERRORS'] ?? 1_000_000);
const PAGES = Number(process.env['BENCH_PAGES'] ?? 20);
const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];
const MARK_ROUNDS = Number(process.env['BENCH_MARK_ROUNDS'] ?? 3);
const OWN_MARKS = Number(process.env['BENCH_OWN_MARKS'] ?? 100);
const EXPORT_SIZES = (process.env['BENCH_EXPORT_SIZES'] ?? '500000,250000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0 && n < ERRORS)
  .sort((a, b) => a - b);
const RETENTION_CHUNK = 5000;

const median = (xs: number[]): number => round([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0);
const round = (ms: number): number => Math.round(ms * 100) / 100;
const ratio = (a: number, b: number): number | null => (b > 0 ? Math.round((a / b) * 10) / 10 : null);

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const start = performance.now();
  const result = await fn();
  return { ms: performance.now() - start, result };
}

function check(cond: boolean, what: string): void {
  if (!cond) throw new Error(`benchmark check failed: ${what}`);
}

const agent = new http.Agent({ keepAlive: true });
async function api<T>(
  base: string,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; body: T; text: string }> {
  const res = await benchRequest(base, method, p, {
    body: body === undefined ? undefined : JSON.stringify(body),
    agent,
  });
  return {
    status: res.status,
    text: res.text,
    body:
      (res.text && res.text.startsWith('{')) || res.text.startsWith('[')
        ? (JSON.parse(res.text) as T)
        : (undefined as T),
  };
}

/** Streams a download, counting bytes and lines, never holding it. */
function streamDownload(base: string, p: string): Promise<{ status: number; bytes: number; lines: number }> {
  const auth = `Basic ${Buffer.from(`${ADMIN.email}:${ADMIN.password}`).toString('base64')}`;
  return new Promise((resolve, reject) => {
    http
      .get(new URL(p, base), { headers: { authorization: auth }, agent }, (res) => {
        let bytes = 0;
        let lines = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          for (let i = c.indexOf(10); i !== -1; i = c.indexOf(10, i + 1)) lines += 1;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, lines }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

const loadAverage = (): number[] => os.loadavg().map((l) => Math.round(l * 100) / 100);

/**
 * Runs `fn` while sampling the Service child's resident set every `everyMs`: answers the result,
 * the time, the resident set just before, the highest sample, and the kernel's high-water mark
 * before and after.
 */
async function withRssSamples<T>(
  child: ServiceChild,
  everyMs: number,
  fn: () => Promise<T>,
): Promise<{
  result: T;
  ms: number;
  rssBeforeMiB: number;
  rssPeakSampledMiB: number;
  growthMiB: number;
  highWaterMiB: { before: number; after: number };
}> {
  const before = await child.rss();
  let peak = before.rssMiB;
  let running = true;
  const sampler = (async () => {
    while (running) {
      peak = Math.max(peak, (await child.rss()).rssMiB);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  let run: { ms: number; result: T };
  try {
    run = await timed(fn);
  } finally {
    running = false;
    await sampler;
  }
  const after = await child.rss();
  return {
    ...run,
    rssBeforeMiB: before.rssMiB,
    rssPeakSampledMiB: peak,
    growthMiB: peak - before.rssMiB,
    highWaterMiB: { before: before.peakRssMiB, after: after.peakRssMiB },
  };
}

/** Median ms of `times` runs of a plain query of the errors table through the store's own driver. */
async function anchorQuery(
  store: StoreName,
  dataDir: string,
  url: string | undefined,
  executionId: number,
  sqlText: string,
  times: number,
): Promise<number> {
  const ms: number[] = [];
  if (store === 'sqlite') {
    const db = new SQLite(path.join(dataDir, 'ferry.db'), { readonly: true });
    const stmt = db.prepare(sqlText);
    for (let i = 0; i < times + 2; i++) {
      const t = performance.now();
      const rows = stmt.all(executionId);
      if (i >= 2) ms.push(performance.now() - t);
      check(rows.length === 100, 'anchor rows');
    }
    db.close();
  } else {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const q = sqlText.replace('?', '$1');
    for (let i = 0; i < times + 2; i++) {
      const t = performance.now();
      const rows = await client.query(q, [executionId]);
      if (i >= 2) ms.push(performance.now() - t);
      check(rows.rowCount === 100, 'anchor rows');
    }
    await client.end();
  }
  return median(ms);
}

/** The store's own CSV writer over the same errors, to a file: the floor for an export. */
function anchorExport(
  store: StoreName,
  dataDir: string,
  url: string | undefined,
  executionId: number,
): { ms: number; bytes: number } {
  const file = path.join(os.tmpdir(), `history-anchor-${randomUUID()}.csv`);
  const cols =
    'id, failed_record_id, map_id, map_name, source_entity, block_id, block_name, code, error_message, error_detail, can_reprocess, marked, created';
  const select = `SELECT ${cols} FROM execution_errors WHERE execution_id = ${executionId} ORDER BY seq`;
  const start = performance.now();
  if (store === 'sqlite')
    execFileSync('sqlite3', ['-csv', '-header', path.join(dataDir, 'ferry.db'), `.output ${file}`, select]);
  else execFileSync('psql', [url ?? '', '-q', '-c', `\\copy (${select}) TO '${file}' WITH (FORMAT csv, HEADER)`]);
  const ms = performance.now() - start;
  const bytes = fs.statSync(file).size;
  fs.rmSync(file);
  return { ms: Math.round(ms), bytes };
}

/** One store's run: the Service child, the store opened beside it, and the execution under test. */
interface StoreRun {
  readonly store: StoreName;
  readonly child: ServiceChild;
  readonly base: string;
  readonly orgId: number;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  readonly st: Store;
  readonly execution: SeededExecution;
  readonly executionId: number;
  /** The execution's History path. */
  readonly H: string;
}

/** An Agent registered through the API, a Solution on it, and the execution its errors go to. */
async function createBenchExecution(
  child: ServiceChild,
  st: Store,
): Promise<{ execution: SeededExecution; H: string }> {
  const { url: base, orgId } = child.served;
  const key = await api<{ agentInstallationKey: string }>(
    base,
    'POST',
    `/v1/orgs/${orgId}/agents/provision_onpremise_agent`,
  );
  check(key.status === 200, `provision ${key.text}`);
  const reg = await benchRequest(base, 'POST', '/v1/agent/register', {
    agent,
    body: JSON.stringify({
      agentInstallationKey: key.body.agentInstallationKey,
      machineName: 'bench',
      serviceName: 'ferry-agent-1',
      version: '1.2.3',
      fingerprint: randomUUID(),
    }),
  });
  const agentId = (JSON.parse(reg.text) as { agentId: string }).agentId;
  const sol = await api<{ id: string }>(base, 'POST', `/v1/orgs/${orgId}/solutions`, {
    name: 'History bench',
    solutionType: 'Integration',
    agentId,
  });
  check(sol.status === 201, `solution ${sol.text}`);
  const solutionId = sol.body.id;
  const execution = await createExecution(st, orgId, solutionId, agentId, ERRORS);
  return { execution, H: `/v1/orgs/${orgId}/solutions/${solutionId}/history/${execution.executionId}` };
}

/** The export: request, then the download read as a stream; the child's memory around and during it. */
async function exportOf(run: StoreRun, errors: number) {
  const { base, H } = run;
  const sampled = await withRssSamples(run.child, 50, async () => {
    const req = await api<{ exportId: number }>(base, 'GET', `${H}/export`);
    check(req.status === 200, `export request ${req.text}`);
    return streamDownload(base, `${H}/export/${req.body.exportId}`);
  });
  check(
    sampled.result.status === 200 && sampled.result.lines === errors + 1,
    `export lines ${sampled.result.lines} of ${errors}`,
  );
  return {
    errors,
    ms: Math.round(sampled.ms),
    mib: round(sampled.result.bytes / 2 ** 20),
    rowsPerSecond: Math.round((errors / sampled.ms) * 1000),
    serviceRssMiB: { before: sampled.rssBeforeMiB, peakSampled: sampled.rssPeakSampledMiB, growth: sampled.growthMiB },
    servicePeakRssMiB: sampled.highWaterMiB,
  };
}

/**
 * The errors written in steps, smallest size first, the export at each of EXPORT_SIZES: were the
 * export's memory to grow with the execution, the high-water mark would rise at each step.
 */
async function seedWithExports(
  run: StoreRun,
): Promise<{ seedMs: number; exportsBySize: Array<Awaited<ReturnType<typeof exportOf>>> }> {
  const secrets = SecretBox.fromDataDir(run.dataDir);
  let seedMs = 0;
  let seededErrors = 0;
  const seedTo = async (size: number): Promise<void> => {
    seedMs += (await timed(() => seedErrors(run.st, secrets, run.execution, seededErrors, size))).ms;
    seededErrors = size;
    // The statistics autovacuum gathers within a minute or so of such a write. On the bench's
    // fresh database the tables were never analyzed: PostgreSQL then expects a handful of rows
    // per execution and reads a page of errors by bitmap scan and sort of every error after it.
    if (run.store === 'postgres') await sql`analyze execution_errors, failed_records`.execute(run.st.db);
  };
  const exportsBySize: Array<Awaited<ReturnType<typeof exportOf>>> = [];
  for (const size of EXPORT_SIZES) {
    await seedTo(size);
    exportsBySize.push(await exportOf(run, size));
  }
  await seedTo(ERRORS);
  return { seedMs, exportsBySize };
}

/** Pages at offsets through the API; the anchors through the driver, in the same run. */
async function measurePages(run: StoreRun) {
  const { store, base, orgId, dataDir, databaseUrl, executionId, H } = run;
  const offsets = [0, Math.floor(ERRORS / 2), Math.max(0, ERRORS - 100)];
  const pages: Record<string, unknown> = {};
  for (const offset of offsets) {
    const ms: number[] = [];
    for (let i = 0; i < PAGES + 2; i++) {
      const { ms: t, result } = await timed(() =>
        api<Array<{ id: string }>>(base, 'GET', `${H}/errors?offset=${offset}&limit=100`),
      );
      check(result.status === 200 && result.body.length === 100, `page at ${offset}`);
      if (i >= 2) ms.push(t);
    }
    pages[String(offset)] = { medianMs: median(ms), maxMs: round(Math.max(...ms)) };
  }
  const anchorFirst = await anchorQuery(
    store,
    dataDir,
    databaseUrl,
    executionId,
    'SELECT * FROM execution_errors WHERE execution_id = ? ORDER BY seq LIMIT 100',
    PAGES,
  );
  const formerDeep = await anchorQuery(
    store,
    dataDir,
    databaseUrl,
    executionId,
    `SELECT * FROM execution_errors WHERE execution_id = ? ORDER BY seq LIMIT 100 OFFSET ${offsets[2]}`,
    5,
  );
  const cheapest: number[] = [];
  for (let i = 0; i < PAGES + 2; i++) {
    const { ms } = await timed(() => api(base, 'GET', `/v1/orgs/${orgId}/securityrules`));
    if (i >= 2) cheapest.push(ms);
  }
  return {
    pages,
    anchors: {
      selectFirst100Ms: anchorFirst,
      formerOffsetQueryAtDeepestMs: formerDeep,
      cheapestAuthenticatedGetMs: median(cheapest),
    },
    pageRatioToCheapestGet: Object.fromEntries(
      Object.entries(pages).map(([k, v]) => [k, ratio((v as { medianMs: number }).medianMs, median(cheapest))]),
    ),
  };
}

async function markAllOnce(run: StoreRun, mark: boolean) {
  const { ms, result } = await timed(() =>
    api<{ changed: number; reprocessRecordsRemaining: number }>(run.base, 'POST', `${run.H}/mark?mark=${mark}`),
  );
  check(result.status === 200 && result.body.reprocessRecordsRemaining === ERRORS, `mark all ${result.text}`);
  return { ms: round(ms), changed: result.body.changed };
}

/**
 * Marking every error, each way, MARK_ROUNDS times, against the read of the execution (GET H/{id}),
 * which counts its reprocessable errors as a mark-all's answer does (reprocessRecordsRemaining).
 */
async function markAllRounds(run: StoreRun, first: boolean) {
  const read: number[] = [];
  for (let i = 0; i < 5; i++) read.push((await timed(() => api(run.base, 'GET', run.H))).ms);
  const rounds: Array<{ mark: boolean; ms: number; changed: number }> = [];
  for (let i = 0; i < MARK_ROUNDS; i++) {
    for (const mark of [first, !first]) rounds.push({ mark, ...(await markAllOnce(run, mark)) });
  }
  check(
    rounds.every((r) => r.changed === ERRORS),
    'every mark-all changed every error',
  );
  const ms = (mark: boolean): number[] => rounds.filter((r) => r.mark === mark).map((r) => r.ms);
  return { markMs: ms(true), unmarkMs: ms(false), executionReadMedianMs: median(read) };
}

/** Mark-all rounds; then OWN_MARKS errors one by one (each its own mark), which the next mark-all clears. */
async function measureMarks(run: StoreRun) {
  const { base, H } = run;
  const markRounds = await markAllRounds(run, true);
  const ownPage = await api<Array<{ id: string }>>(
    base,
    'GET',
    `${H}/errors?offset=${Math.floor(ERRORS / 3)}&limit=${OWN_MARKS}`,
  );
  const markOne: number[] = [];
  for (const e of ownPage.body) {
    const { ms, result } = await timed(() =>
      api<{ marked: boolean }>(base, 'POST', `${H}/errors/${e.id}/mark?mark=true`),
    );
    check(result.status === 200 && result.body.marked, `mark one ${result.text}`);
    markOne.push(ms);
  }
  const afterOwn = await markAllOnce(run, true);
  check(afterOwn.changed === ERRORS - OWN_MARKS, `mark all after ${OWN_MARKS} own marks changed ${afterOwn.changed}`);
  // PostgreSQL counts by an index-only scan once VACUUM has set the visibility map (autovacuum
  // does after enough inserts); before, by reading the table.
  let afterVacuum: Awaited<ReturnType<typeof markAllRounds>> | undefined;
  if (run.store === 'postgres') {
    await sql`vacuum execution_errors`.execute(run.st.db);
    // Every error is marked now (afterOwn): unmark first.
    afterVacuum = await markAllRounds(run, false);
  }
  return {
    ...markRounds,
    changedEach: ERRORS,
    markOneMedianMs: median(markOne),
    markAllAfterOwnMarks: { ownMarks: OWN_MARKS, ...afterOwn },
    ...(afterVacuum ? { afterVacuum } : {}),
  };
}

/** Retention: the errors 5,000 per DELETE (the longest one is how long the store is held), then the rest of the pass. */
async function measureRetention(run: StoreRun) {
  const chunks: number[] = [];
  const removal = await timed(async () => {
    for (let i = 0; i < 10; i++) {
      const { ms } = await timed(() => deleteErrorsChunk(run.st.db, run.executionId, RETENTION_CHUNK));
      chunks.push(ms);
    }
    return new HistoryRetention({ store: run.st, log: pino({ level: 'silent' }), retentionDays: 1 }).run(
      new Date(Date.now() + 2 * 86_400_000),
    );
  });
  check(removal.result.executions === 1, 'retention removed the execution');
  return {
    ms: Math.round(removal.ms),
    longestDeleteOf5000ErrorsMs: round(Math.max(...chunks)),
    medianDeleteOf5000ErrorsMs: median(chunks),
    removed: removal.result,
  };
}

async function benchStore(store: StoreName): Promise<Record<string, unknown>> {
  const loadAtStart = loadAverage();
  const child = await startServiceChild(store);
  const { url: base, orgId, dataDir, databaseUrl } = child.served;
  const st = await openStore({ databaseUrl, dataDir, preinstalledConnectors: preinstalledConnectors() });
  try {
    const { execution, H } = await createBenchExecution(child, st);
    const run: StoreRun = {
      store,
      child,
      base,
      orgId,
      dataDir,
      databaseUrl,
      st,
      execution,
      executionId: execution.executionId,
      H,
    };
    const { seedMs, exportsBySize } = await seedWithExports(run);
    const { pages, anchors, pageRatioToCheapestGet } = await measurePages(run);
    const exportRun = await exportOf(run, ERRORS);
    exportsBySize.push(exportRun);
    const anchor = anchorExport(store, dataDir, databaseUrl, run.executionId);
    const markAll = await measureMarks(run);
    const retention = await measureRetention(run);
    return {
      store,
      errors: ERRORS,
      seedMs: Math.round(seedMs),
      pages,
      anchors,
      pageRatioToCheapestGet,
      export: {
        ...exportRun,
        anchor: {
          tool: store === 'sqlite' ? 'sqlite3 -csv' : 'psql \\copy',
          ms: anchor.ms,
          mib: round(anchor.bytes / 2 ** 20),
        },
        ratioToAnchor: ratio(exportRun.ms, anchor.ms),
      },
      exportsBySize,
      markAll,
      retention,
      loadAverage: { start: loadAtStart, end: loadAverage() },
    };
  } finally {
    await st.close();
    await child.stop();
  }
}

const results: Array<Record<string, unknown>> = [];
results.push(await benchStore('sqlite'));
if (PG_URL) results.push(await benchStore('postgres'));
agent.destroy();
process.stdout.write(
  `${JSON.stringify({ bench: 'history', errors: ERRORS, node: process.version, results }, null, 2)}\n`,
);
