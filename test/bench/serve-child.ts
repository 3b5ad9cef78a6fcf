/**
 * The Service a benchmark measures, in a child process of its own (this file run with `--serve`),
 * so that its peak RSS (the kernel's high-water mark, `maxRSS`) is its own and not the client's.
 * The child prints where it listens, answers `rss` messages, and cleans up when its stdin closes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ServiceConfigInput } from '../../service/config.js';
import { ADMIN } from '../helpers/service.js';
import { serviceData } from '../helpers/service-on-dir.js';

export type StoreName = 'sqlite' | 'postgres';

/** What the child Service reports when it is up. */
export interface Served {
  url: string;
  orgId: number;
  dataDir: string;
  databaseUrl?: string;
}

/** The child's memory, in MiB: its peak resident set so far and its resident set now. */
export interface Rss {
  peakRssMiB: number;
  rssMiB: number;
}

/** This process's peak resident set so far (the kernel's high-water mark), in MiB. */
export const peakRssMiB = (): number => Math.round(process.resourceUsage().maxRSS / 1024);

async function serve(store: StoreName, config: Partial<ServiceConfigInput>): Promise<void> {
  // Rate limits far above what any benchmark sends, so none of its calls is refused.
  const data = await serviceData({ name: store }, { rateLimitPerMinute: 100_000_000, ...config });
  const service = await data.start();
  const served: Served = {
    url: service.url,
    orgId: service.orgId,
    dataDir: data.dataDir,
    ...(data.databaseUrl ? { databaseUrl: data.databaseUrl } : {}),
  };
  process.stdout.write(`${JSON.stringify(served)}\n`);
  process.on('message', (msg) => {
    if (msg === 'rss')
      process.send?.({
        peakRssMiB: peakRssMiB(),
        rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
      } satisfies Rss);
  });
  process.stdin.resume();
  process.stdin.on('end', () => {
    void (async () => {
      await service.close();
      await data.dispose();
      process.exit(0);
    })();
  });
}

export interface ServiceChild {
  child: ChildProcess;
  served: Served;
  /** Asks the child for its memory. */
  rss: () => Promise<Rss>;
  /** Closes the child's stdin, so it closes the Service and removes its data, and waits for it to exit. */
  stop: () => Promise<void>;
}

/** Starts the Service child for a store, with `config` over the benchmarks' defaults; resolves once it listens. */
export async function startServiceChild(
  store: StoreName,
  config: Partial<ServiceConfigInput> = {},
): Promise<ServiceChild> {
  const args = [...process.execArgv, fileURLToPath(import.meta.url), '--serve', store, JSON.stringify(config)];
  const child = spawn(process.execPath, args, {
    stdio: ['pipe', 'pipe', 'inherit', 'ipc'],
    env: process.env,
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const served = await new Promise<Served>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the Service exited with ${code}`)));
    lines.once('line', (line) => resolve(JSON.parse(line) as Served));
  });
  const rss = (): Promise<Rss> =>
    new Promise((resolve) => {
      child.once('message', (msg) => resolve(msg as Rss));
      child.send('rss');
    });
  const stop = async (): Promise<void> => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.stdin?.end();
    await exited;
  };
  return { child, served, rss, stop };
}

export interface BenchResponse {
  status: number;
  text: string;
}

export interface BenchRequest {
  /** A string, or a file streamed from disk. */
  body?: string | { file: string };
  contentType?: string;
  /** The connection pool; `false` opens a connection for this request alone. */
  agent: http.Agent | false;
}

const AUTH = `Basic ${Buffer.from(`${ADMIN.email}:${ADMIN.password}`).toString('base64')}`;

/** One request to the Service at `base` as its administrator. */
export function benchRequest(
  base: string,
  method: string,
  pathAndQuery: string,
  { body, contentType = 'application/json', agent }: BenchRequest,
): Promise<BenchResponse> {
  const headers: Record<string, string | number> = { authorization: AUTH };
  if (body !== undefined) headers['content-type'] = contentType;
  if (typeof body === 'object') headers['content-length'] = fs.statSync(body.file).size;
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(pathAndQuery, base), { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (typeof body === 'object') fs.createReadStream(body.file).pipe(req);
    else req.end(body);
  });
}

if (process.argv[2] === '--serve' && path.resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) {
  const config = JSON.parse(process.argv[4] ?? '{}') as Partial<ServiceConfigInput>;
  await serve(process.argv[3] === 'postgres' ? 'postgres' : 'sqlite', config);
}
