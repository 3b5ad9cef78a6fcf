/**
 * What metrics cost the API (docs/benchmarks.md "Metrics"):
 *
 *   npx tsx test/bench/metrics.bench.ts
 *
 * One Service on SQLite in a child process (serve-child.ts) without metrics (the default: the
 * anchor) and one with them switched on (FERRY_METRICS_TOKEN), alternating, BENCH_ROUNDS rounds of
 * BENCH_REQUESTS calls of GET /v1/orgs/{id}/agents (Basic auth, Security Rule, rate limit, a store
 * read: the common path), 8 in flight: requests/s and the Service's CPU per request. Then the scrape
 * itself: ms and bytes of GET /metrics on the Service with metrics. Prints one JSON document;
 * medians over the rounds; ratios are with ÷ without of the same round.
 */
import http from 'node:http';
import os from 'node:os';
import { procCpuMs } from './proc.js';
import { benchRequest, startServiceChild, type ServiceChild } from './serve-child.js';

const REQUESTS = Number(process.env['BENCH_REQUESTS'] ?? 4_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const IN_FLIGHT = 8;
const TOKEN = 'bench-metrics-token-0123456789';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const round1 = (x: number): number => Math.round(x * 10) / 10;

async function load(svc: ServiceChild): Promise<{ rps: number; cpuUsPerRequest: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  const path = `/v1/orgs/${svc.served.orgId}/agents`;
  const pid = svc.child.pid ?? 0;
  let next = 0;
  const cpu = procCpuMs(pid);
  const start = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next++ < REQUESTS) {
        const res = await benchRequest(svc.served.url, 'GET', path, { agent });
        if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${res.text}`);
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  agent.destroy();
  return { rps: Math.round(REQUESTS / seconds), cpuUsPerRequest: round1(((procCpuMs(pid) - cpu) * 1000) / REQUESTS) };
}

async function scrape(svc: ServiceChild): Promise<{ ms: number; bytes: number }> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 20; i++) {
    const start = performance.now();
    const text = await new Promise<string>((resolve, reject) => {
      http
        .get(new URL('/metrics', svc.served.url), { headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () =>
            res.statusCode === 200 ? resolve(body) : reject(new Error(`/metrics ${res.statusCode}`)),
          );
        })
        .on('error', reject);
    });
    times.push(performance.now() - start);
    bytes = Buffer.byteLength(text);
  }
  return { ms: round1(median(times)), bytes };
}

const loadBefore = os.loadavg()[0];
const without = await startServiceChild('sqlite');
const withMetrics = await startServiceChild('sqlite', { metricsToken: TOKEN });
const rounds: Array<{ without: Awaited<ReturnType<typeof load>>; with: Awaited<ReturnType<typeof load>> }> = [];
try {
  // A warm-up of each, so that neither round 1 pays for the other's JIT.
  await load(without);
  await load(withMetrics);
  for (let r = 0; r < ROUNDS; r++) rounds.push({ without: await load(without), with: await load(withMetrics) });
  const scraped = await scrape(withMetrics);
  const result = {
    bench: 'metrics',
    requests: REQUESTS,
    rounds: ROUNDS,
    withoutMetrics: {
      rps: median(rounds.map((r) => r.without.rps)),
      cpuUsPerRequest: median(rounds.map((r) => r.without.cpuUsPerRequest)),
    },
    withMetrics: {
      rps: median(rounds.map((r) => r.with.rps)),
      cpuUsPerRequest: median(rounds.map((r) => r.with.cpuUsPerRequest)),
    },
    ratioRps: Math.round(median(rounds.map((r) => r.with.rps / r.without.rps)) * 100) / 100,
    ratioCpuPerRequest:
      Math.round(median(rounds.map((r) => r.with.cpuUsPerRequest / r.without.cpuUsPerRequest)) * 100) / 100,
    scrape: scraped,
    loadAverage: { before: round1(loadBefore ?? 0), after: round1(os.loadavg()[0] ?? 0) },
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await without.stop();
  await withMetrics.stop();
}
