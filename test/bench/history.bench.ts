/**
 * History at scale: one execution with 1,000,000 record errors (BENCH_ERRORS), on a real Service
 * over HTTP:
 *
 *   npx tsx test/bench/history.bench.ts            # SQLite
 *   FERRY_TEST_DATABASE_URL=postgres://… npx tsx …  # SQLite, then PostgreSQL
 *
 * The Service runs in a child process (serve-child.ts), so its peak RSS is its own. The errors,
 * and a cloud failed record for each (sealed as the Service seals them), are written straight
 * into the store through the repositories (insertErrors, insertFailedRecords), numbered as the
 * runErrors handler numbers them; the report path itself is measured in "Solutions". Then, per
 * store: pages of 100 errors at offsets 0, 500,000 and 999,900 (BENCH_PAGES calls each, median and
 * max), against the anchor of the same run, a plain `SELECT … ORDER BY seq LIMIT 100` of the same
 * table through the same driver, and the former `LIMIT 100 OFFSET n` query; the CSV export
 * (request, then the download read as a stream) with the Service's peak RSS, against the store's
 * own CSV writer (`sqlite3 -csv`, `psql \copy`) over the same errors; marking all errors
 * (`POST H/{id}/mark?mark=true`) when the route exists; and the retention removal of the
 * execution, the longest single DELETE of 5,000 errors. Prints one JSON document; times are ms.
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
import { SecretBox } from '../../service/crypto/master-key.js';
import { HistoryRetention } from '../../service/jobs/history-retention.js';
import { preinstalledConnectors } from '../../service/marketplace/catalogue.js';
import { deleteErrorsChunk, insertErrors, insertExecutionIfNew } from '../../service/store/repos/executions.repo.js';
import { insertFailedRecords } from '../../service/store/repos/failed-records.repo.js';
import { openStore, type Store } from '../../service/store/store.js';
import { ADMIN } from '../helpers/service.js';
import { benchRequest, startServiceChild, type StoreName } from './serve-child.js';

const ERRORS = Number(process.env['BENCH_ERRORS'] ?? 1_000_000);
const PAGES = Number(process.env['BENCH_PAGES'] ?? 20);
const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];
const ROWS_PER_INSERT = 1000;
const ROWS_PER_TX = 50_000;

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
async function api<T>(base: string, method: string, p: string, body?: unknown): Promise<{ status: number; body: T; text: string }> {
  const res = await benchRequest(base, method, p, { body: body === undefined ? undefined : JSON.stringify(body), agent });
  return { status: res.status, text: res.text, body: (res.text && res.text.startsWith('{')) || res.text.startsWith('[') ? (JSON.parse(res.text) as T) : (undefined as T) };
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

/** One execution with `n` errors, each with a cloud failed record, written through the repositories. */
async function seed(store: Store, secrets: SecretBox, orgId: number, solutionId: string, agentId: string, n: number): Promise<{ executionId: number; runId: string }> {
  const runId = randomUUID();
  const now = new Date().toISOString();
  await insertExecutionIfNew(store.db, {
    runId, solutionId, orgId, agentId, trigger: 'start', dueAt: null, start: now, stop: now, result: 'CompletedWithErrors',
    recordsProcessed: n, recordsFailed: n, details: null, stopped: 0, isReprocessJob: 0, sourceDataLocal: 0, statistics: '[]', lastProgressAt: null,
  });
  const { id } = await store.db.selectFrom('executions').select('id').where('runId', '=', runId).executeTakeFirstOrThrow();
  const executionId = Number(id);
  for (let tx = 0; tx < n; tx += ROWS_PER_TX) {
    await store.bulkTransaction(async (t) => {
      for (let i = tx; i < Math.min(n, tx + ROWS_PER_TX); i += ROWS_PER_INSERT) {
        const count = Math.min(ROWS_PER_INSERT, n - i);
        const errors = Array.from({ length: count }, (_, j) => {
          const seq = i + j + 1;
          return {
            id: randomUUID(), executionId, seq, mapId: 7, mapName: 'Accounts', sourceEntity: 'account', blockId: 'b2', blockName: 'Create contact', code: 'RUN_WRITE_FAILED',
            errorMessage: `Record ${seq} refused: duplicate value in "Email", row skipped`, errorDetail: `{"status":409,"row":${seq}}`, canReprocess: 1, marked: 0, failedRecordId: randomUUID(), created: now,
          };
        });
        await insertErrors(t, errors);
        await insertFailedRecords(
          t,
          errors.map((e) => ({
            id: e.failedRecordId, runId, solutionId, orgId, mapId: 7, mapName: 'Accounts', entity: 'account', blockId: 'b2', blockName: 'Create contact', code: e.code, errorMessage: e.errorMessage,
            source: secrets.seal(JSON.stringify({ Name: `Account ${e.seq}`, Email: `user${e.seq}@example.com`, City: 'Lyon, France', Amount: e.seq * 1.5 })), created: now,
          })),
        );
      }
    });
  }
  return { executionId, runId };
}

/** Median ms of `times` runs of a plain query of the errors table through the store's own driver. */
async function anchorQuery(store: StoreName, dataDir: string, url: string | undefined, executionId: number, sqlText: string, times: number): Promise<number> {
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
function anchorExport(store: StoreName, dataDir: string, url: string | undefined, executionId: number): { ms: number; bytes: number } {
  const file = path.join(os.tmpdir(), `history-anchor-${randomUUID()}.csv`);
  const cols = 'id, failed_record_id, map_id, map_name, source_entity, block_id, block_name, code, error_message, error_detail, can_reprocess, marked, created';
  const select = `SELECT ${cols} FROM execution_errors WHERE execution_id = ${executionId} ORDER BY seq`;
  const start = performance.now();
  if (store === 'sqlite') execFileSync('sqlite3', ['-csv', '-header', path.join(dataDir, 'ferry.db'), `.output ${file}`, select]);
  else execFileSync('psql', [url ?? '', '-q', '-c', `\\copy (${select}) TO '${file}' WITH (FORMAT csv, HEADER)`]);
  const ms = performance.now() - start;
  const bytes = fs.statSync(file).size;
  fs.rmSync(file);
  return { ms: Math.round(ms), bytes };
}

async function benchStore(store: StoreName): Promise<Record<string, unknown>> {
  const child = await startServiceChild(store);
  const { url: base, orgId, dataDir, databaseUrl } = child.served;
  const st = await openStore({ databaseUrl, dataDir, preinstalledConnectors: preinstalledConnectors() });
  try {
    const secrets = SecretBox.fromDataDir(dataDir);
    const key = await api<{ agentInstallationKey: string }>(base, 'POST', `/v1/orgs/${orgId}/agents/provision_onpremise_agent`);
    check(key.status === 200, `provision ${key.text}`);
    const reg = await benchRequest(base, 'POST', '/v1/agent/register', {
      agent,
      body: JSON.stringify({ agentInstallationKey: key.body.agentInstallationKey, machineName: 'bench', serviceName: 'ferry-agent-1', version: '1.2.3', fingerprint: randomUUID() }),
    });
    const agentId = (JSON.parse(reg.text) as { agentId: string }).agentId;
    const sol = await api<{ id: string }>(base, 'POST', `/v1/orgs/${orgId}/solutions`, { name: 'History bench', solutionType: 'Integration', agentId });
    check(sol.status === 201, `solution ${sol.text}`);
    const solutionId = sol.body.id;

    const seeded = await timed(() => seed(st, secrets, orgId, solutionId, agentId, ERRORS));
    const { executionId } = seeded.result;
    const H = `/v1/orgs/${orgId}/solutions/${solutionId}/history/${executionId}`;

    // Pages at offsets through the API; the anchors through the driver, in the same run.
    const offsets = [0, Math.floor(ERRORS / 2), Math.max(0, ERRORS - 100)];
    const pages: Record<string, unknown> = {};
    for (const offset of offsets) {
      const ms: number[] = [];
      for (let i = 0; i < PAGES + 2; i++) {
        const { ms: t, result } = await timed(() => api<Array<{ id: string }>>(base, 'GET', `${H}/errors?offset=${offset}&limit=100`));
        check(result.status === 200 && result.body.length === 100, `page at ${offset}`);
        if (i >= 2) ms.push(t);
      }
      pages[String(offset)] = { medianMs: median(ms), maxMs: round(Math.max(...ms)) };
    }
    const anchorFirst = await anchorQuery(store, dataDir, databaseUrl, executionId, 'SELECT * FROM execution_errors WHERE execution_id = ? ORDER BY seq LIMIT 100', PAGES);
    const formerDeep = await anchorQuery(store, dataDir, databaseUrl, executionId, `SELECT * FROM execution_errors WHERE execution_id = ? ORDER BY seq LIMIT 100 OFFSET ${offsets[2]}`, 5);
    const cheapest: number[] = [];
    for (let i = 0; i < PAGES + 2; i++) {
      const { ms } = await timed(() => api(base, 'GET', `/v1/orgs/${orgId}/securityrules`));
      if (i >= 2) cheapest.push(ms);
    }

    // The export: request, then the download read as a stream; the child's peak RSS around it.
    const rssBefore = await child.rss();
    const exportRun = await timed(async () => {
      const req = await api<{ exportId: number }>(base, 'GET', `${H}/export`);
      check(req.status === 200, `export request ${req.text}`);
      return streamDownload(base, `${H}/export/${req.body.exportId}`);
    });
    const rssAfter = await child.rss();
    check(exportRun.result.status === 200 && exportRun.result.lines === ERRORS + 1, `export lines ${exportRun.result.lines}`);
    const anchor = anchorExport(store, dataDir, databaseUrl, executionId);

    // Marking every error, when the route exists (one UPDATE).
    const mark = await timed(() => api(base, 'POST', `${H}/mark?mark=true`));
    const markAll = mark.result.status === 404 && !mark.result.text.includes('Execution') ? null : { status: mark.result.status, ms: Math.round(mark.ms) };

    // Retention: the errors 5,000 per DELETE (the longest one is how long the store is held), then the rest of the pass.
    const chunks: number[] = [];
    const removal = await timed(async () => {
      for (let i = 0; i < 10; i++) {
        const { ms } = await timed(() => deleteErrorsChunk(st.db, executionId, 5000));
        chunks.push(ms);
      }
      return new HistoryRetention({ store: st, log: pino({ level: 'silent' }), retentionDays: 1 }).run(new Date(Date.now() + 2 * 86_400_000));
    });
    check(removal.result.executions === 1, 'retention removed the execution');

    return {
      store,
      errors: ERRORS,
      seedMs: Math.round(seeded.ms),
      pages,
      anchors: { selectFirst100Ms: anchorFirst, formerOffsetQueryAtDeepestMs: formerDeep, cheapestAuthenticatedGetMs: median(cheapest) },
      pageRatioToCheapestGet: Object.fromEntries(Object.entries(pages).map(([k, v]) => [k, ratio((v as { medianMs: number }).medianMs, median(cheapest))])),
      export: {
        ms: Math.round(exportRun.ms),
        mib: round(exportRun.result.bytes / 2 ** 20),
        rowsPerSecond: Math.round((ERRORS / exportRun.ms) * 1000),
        servicePeakRssMiB: { before: rssBefore.peakRssMiB, after: rssAfter.peakRssMiB },
        anchor: { tool: store === 'sqlite' ? 'sqlite3 -csv' : 'psql \\copy', ms: anchor.ms, mib: round(anchor.bytes / 2 ** 20) },
        ratioToAnchor: ratio(exportRun.ms, anchor.ms),
      },
      markAll,
      retention: {
        ms: Math.round(removal.ms),
        longestDeleteOf5000ErrorsMs: round(Math.max(...chunks)),
        medianDeleteOf5000ErrorsMs: median(chunks),
        removed: removal.result,
      },
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
process.stdout.write(`${JSON.stringify({ bench: 'history', errors: ERRORS, node: process.version, results }, null, 2)}\n`);
