/**
 * Reading a REST API through the HTTP / JSON API connector against the plainest client of the
 * same pages (docs/connectors.md "http"):
 *
 *   npx tsx test/bench/http-connector.bench.ts          → JSON on stdout, progress on stderr
 *
 *   server    a child process on 127.0.0.1 serving RECORDS records of `people`'s shape in pages of
 *             PAGE (`GET /people?page=N&per_page=PAGE` → `{ data: { items }, meta }`), each page's
 *             JSON made once at start, so the server costs the same for both readers
 *   anchor    fetch + res.text() + JSON.parse of each page in turn, counting the records
 *   connector the plugin host's query of the same entity (batches of 2000): the connector's
 *             pages (with one asked ahead), records typed to the definition, batches
 *
 * Each runs BENCH_ROUNDS times (default 3), alternating, after one warm-up of each; the figure is
 * the median of the rounds' ratios (connector ÷ anchor records per second; 1 = as fast as a bare
 * fetch loop). The load average at the start and the end says how busy the machine was.
 * Environment: BENCH_RECORDS (default 200000), BENCH_PAGE (default 1000), BENCH_ROUNDS.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import pino from 'pino';
import { ConnectorHost } from '../../src/connectors/host.js';

const RECORDS = Number(process.env['BENCH_RECORDS'] ?? 200_000);
const PAGE = Number(process.env['BENCH_PAGE'] ?? 1000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const CONNECTORS_DIR = path.resolve(import.meta.dirname, '../../connectors');

/** The server: plain Node, run with `node -e`; prints its port. */
const SERVER = `
const http = require('node:http');
const [records, size] = process.argv.slice(1).map(Number);
const pages = [];
for (let p = 1; (p - 1) * size < records || p === 1; p++) {
  const items = [];
  for (let i = (p - 1) * size + 1; i <= Math.min(records, p * size); i++)
    items.push({ id: i, name: 'Person ' + i, email: 'p' + i + '@example.com', score: i / 8,
      balance: (i % 10000) + '.25', active: i % 2 === 0, born: '1990-01-' + String(1 + (i % 28)).padStart(2, '0'),
      updated_at: '2024-03-05T08:30:' + String(i % 60).padStart(2, '0') + 'Z', big: i * 1000 });
  pages.push(Buffer.from(JSON.stringify({ data: { items }, meta: { page: p } })));
}
const empty = Buffer.from(JSON.stringify({ data: { items: [] } }));
const server = http.createServer((req, res) => {
  const page = Number(new URL(req.url, 'http://x').searchParams.get('page'));
  const body = pages[page - 1] ?? empty;
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
`;

const DEFINITION = JSON.stringify({
  entities: [
    {
      name: 'people',
      path: '/people',
      recordsPath: 'data.items',
      fields: [
        { name: 'id', type: 'integer' },
        { name: 'name', type: 'string' },
        { name: 'email', type: 'string' },
        { name: 'score', type: 'double' },
        { name: 'balance', type: 'decimal' },
        { name: 'active', type: 'boolean' },
        { name: 'born', type: 'date' },
        { name: 'updated_at', type: 'datetime' },
        { name: 'big', type: 'integer' },
      ],
      key: 'id',
      pagination: { type: 'page', pageParam: 'page', sizeParam: 'per_page', pageSize: PAGE },
    },
  ],
});

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const round2 = (x: number): number => Math.round(x * 100) / 100;

async function startServer(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['-e', SERVER, String(RECORDS), String(PAGE)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await once(child.stdout as NodeJS.ReadableStream, 'data')) as [Buffer];
  return { child, url: `http://127.0.0.1:${line.toString().trim()}` };
}

/** The anchor: each page fetched, read and parsed in turn. */
async function anchor(url: string): Promise<number> {
  let count = 0;
  for (let page = 1; ; page++) {
    const res = await fetch(`${url}/people?page=${page}&per_page=${PAGE}`, { headers: { accept: 'application/json' } });
    const doc = JSON.parse(await res.text()) as { data: { items: unknown[] } };
    count += doc.data.items.length;
    if (doc.data.items.length < PAGE) return count;
  }
}

async function connector(host: ConnectorHost, url: string, round: number): Promise<number> {
  const conn = await host.open({
    connectorId: 'HTTP / JSON API',
    connectionId: `bench-${round}`,
    properties: { baseUrl: url, definition: DEFINITION },
  });
  let count = 0;
  try {
    for await (const batch of conn.query('people')) count += batch.length;
  } finally {
    await conn.close();
  }
  return count;
}

async function timed(fn: () => Promise<number>): Promise<number> {
  const t0 = performance.now();
  const n = await fn();
  const s = (performance.now() - t0) / 1000;
  if (n !== RECORDS) throw new Error(`read ${n} records, expected ${RECORDS}`);
  return Math.round(n / s);
}

async function main(): Promise<void> {
  const loadStart = os.loadavg().map((x) => Math.round(x * 10) / 10);
  const { child, url } = await startServer();
  const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
  await host.loadAll();
  try {
    await anchor(url);
    await connector(host, url, 0);
    const anchorRates: number[] = [];
    const connectorRates: number[] = [];
    const ratios: number[] = [];
    for (let r = 1; r <= ROUNDS; r++) {
      const a = await timed(() => anchor(url));
      const c = await timed(() => connector(host, url, r));
      anchorRates.push(a);
      connectorRates.push(c);
      ratios.push(round2(c / a));
      process.stderr.write(`round ${r}: anchor ${a} records/s, connector ${c} records/s\n`);
    }
    process.stdout.write(
      `${JSON.stringify(
        {
          records: RECORDS,
          pageSize: PAGE,
          rounds: ROUNDS,
          anchorRecordsPerSec: anchorRates,
          connectorRecordsPerSec: connectorRates,
          ratios,
          medianRatio: median(ratios),
          cpus: os.cpus().length,
          loadStart,
          loadEnd: os.loadavg().map((x) => Math.round(x * 10) / 10),
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await host.close();
    child.kill();
  }
}

await main();
