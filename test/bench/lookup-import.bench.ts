/**
 * A 60 MB CSV import (1.4 million lines) into a Lookup Table, and what the rest of the Service
 * sees meanwhile:
 *
 *   npx tsx test/bench/lookup-import.bench.ts            # SQLite
 *   FERRY_TEST_DATABASE_URL=postgres://… npx tsx …       # SQLite, then PostgreSQL
 *
 * The Service runs in a child process (serve-child.ts), so its peak RSS (the kernel's high-water
 * mark, `maxRSS`) is its own. Per store: `/healthz` once every 50 ms for 5 s with
 * nothing else running (idle latency); then the import, streamed from a file in one POST
 * (text/csv), with `/healthz` still fired every 50 ms until the import answers. Beside each,
 * the same for a lookup of another table's value by key (an authenticated Organization read). Prints one JSON
 * document; times are milliseconds. BENCH_IMPORT_LINES changes the line count.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchRequest, startServiceChild, type BenchResponse, type StoreName } from './serve-child.js';

const LINES = Number(process.env['BENCH_IMPORT_LINES'] ?? 1_400_000);
const IDLE_MS = 5_000;
const HEALTH_EVERY_MS = 50;
const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];

/** One request on a connection of its own; the body is a string or a file streamed from disk. */
const request = (
  base: string,
  method: string,
  pathAndQuery: string,
  body?: string | { file: string },
  contentType?: string,
): Promise<BenchResponse> => benchRequest(base, method, pathAndQuery, { body, contentType, agent: false });

const percentile = (sorted: number[], p: number): number =>
  Math.round((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0) * 10) / 10;

/** Fires a GET of `probe` every 50 ms (without waiting for the previous one) until `until` settles; answers the latencies, sorted. */
async function latencies(base: string, probe: string, until: Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  const pending: Array<Promise<void>> = [];
  let done = false;
  void until.finally(() => (done = true));
  while (!done) {
    const t = performance.now();
    pending.push(
      request(base, 'GET', probe).then((res) => {
        if (res.status !== 200) throw new Error(`${probe} answered ${res.status}`);
        latencies.push(performance.now() - t);
      }),
    );
    await Promise.race([until, new Promise<void>((resolve) => setTimeout(resolve, HEALTH_EVERY_MS))]).catch(
      () => undefined,
    );
  }
  await Promise.all(pending);
  return latencies.sort((a, b) => a - b);
}

const summary = (xs: number[]): Record<string, number> => ({
  count: xs.length,
  p50Ms: percentile(xs, 0.5),
  p99Ms: percentile(xs, 0.99),
  maxMs: percentile(xs, 1),
});

async function benchStore(store: StoreName, csvFile: string): Promise<Record<string, unknown>> {
  const { served, rss, stop } = await startServiceChild(store);
  try {
    const L = `/v1/orgs/${served.orgId}/lookuptables`;
    const created = await request(served.url, 'POST', L, JSON.stringify({ name: 'Imported' }));
    if (created.status !== 201) throw new Error(`create answered ${created.status}`);
    const tableId = (JSON.parse(created.text) as { id: string }).id;
    // The lookup a Map makes: a value of another table by its key, through authentication, the
    // Organization's role and Security Rule checks.
    const codes = await request(
      served.url,
      'POST',
      L,
      JSON.stringify({ name: 'Codes', lookupTableValues: [{ value1: 'DE', value2: 'Germany' }] }),
    );
    if (codes.status !== 201) throw new Error(`create answered ${codes.status}`);
    const lookup = `${L}/Codes/values/value2/DE`;
    const idleWait = new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const [idle, idleLookup] = await Promise.all([
      latencies(served.url, '/healthz', idleWait),
      latencies(served.url, lookup, idleWait),
    ]);
    const before = await rss();
    const start = performance.now();
    const importing = request(
      served.url,
      'POST',
      `${L}/${tableId}/import?hasHeaderRow=true`,
      { file: csvFile },
      'text/csv',
    );
    const [during, duringLookup] = await Promise.all([
      latencies(served.url, '/healthz', importing),
      latencies(served.url, lookup, importing),
    ]);
    const imported = await importing;
    const importMs = Math.round(performance.now() - start);
    if (imported.status !== 200 || !imported.text.includes(`"valuesImported":${LINES}`))
      throw new Error(`import answered ${imported.status}: ${imported.text.slice(0, 300)}`);
    const after = await rss();
    const idleP99 = percentile(idle, 0.99);
    return {
      store,
      lines: LINES,
      csvMiB: Math.round((fs.statSync(csvFile).size / 2 ** 20) * 10) / 10,
      import: { ms: importMs, linesPerSecond: Math.round((LINES / importMs) * 1000) },
      healthzIdle: summary(idle),
      healthzDuringImport: {
        ...summary(during),
        p99VsIdleP99: Math.round((percentile(during, 0.99) / Math.max(idleP99, 0.1)) * 10) / 10,
      },
      lookupIdle: summary(idleLookup),
      lookupDuringImport: {
        ...summary(duringLookup),
        p99VsIdleP99:
          Math.round((percentile(duringLookup, 0.99) / Math.max(percentile(idleLookup, 0.99), 0.1)) * 10) / 10,
      },
      servicePeakRssMiB: {
        beforeImport: before.peakRssMiB,
        afterImport: after.peakRssMiB,
        importAdded: after.peakRssMiB - before.peakRssMiB,
      },
    };
  } finally {
    await stop();
  }
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-bench-import-'));
  const csvFile = path.join(dir, 'import.csv');
  try {
    // 45 bytes a line: 1.4 million lines are 63 MB (60.1 MiB), under the 64 MiB body limit.
    const out = fs.createWriteStream(csvFile);
    out.write('value1,value2\r\n');
    for (let i = 0; i < LINES; i += 10_000) {
      let chunk = '';
      for (let j = i; j < Math.min(LINES, i + 10_000); j++)
        chunk += `CODE-${String(j).padStart(7, '0')},Name of imported value ${String(j).padStart(7, '0')}\r\n`;
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    await new Promise<void>((resolve) => out.end(() => resolve()));
    const loadBefore = os.loadavg()[0] ?? 0;
    const stores: StoreName[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];
    const results = [];
    for (const store of stores) results.push(await benchStore(store, csvFile));
    process.stdout.write(
      `${JSON.stringify(
        {
          benchmark: 'lookup-import',
          node: process.version,
          cpus: os.cpus().length,
          loadAverage1m: {
            before: Math.round(loadBefore * 10) / 10,
            after: Math.round((os.loadavg()[0] ?? 0) * 10) / 10,
          },
          results,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
