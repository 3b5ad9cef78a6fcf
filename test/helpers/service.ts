import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { buildService, type BuildOptions, type FerryService } from '../../service/build-service.js';
import { parseServiceConfig, type ServiceConfig, type ServiceConfigInput } from '../../service/config.js';
import { createTestDatabase, type StoreTarget } from './stores.js';

export interface ApiResponse<T = unknown> {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: T;
}

export interface Credentials {
  email: string;
  password: string;
}

export interface RequestOptions {
  /** Credentials for Basic auth; defaults to the bootstrap administrator. `null` sends none. */
  auth?: Credentials | null;
  /** A JSON value, or a string sent as is. */
  body?: unknown;
  headers?: Record<string, string>;
  /** The local address to call from, e.g. 127.0.0.2, to test Security Rules. */
  from?: string;
}

export interface TestService {
  readonly url: string;
  readonly admin: Credentials;
  readonly orgId: number;
  readonly service: FerryService;
  readonly dataDir: string;
  request<T = unknown>(method: string, pathAndQuery: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

export const ADMIN: Credentials = { email: 'admin@ferry.test', password: 'Admin-password-1' };

/**
 * The configuration of a test Service on `dataDir` (PostgreSQL when `databaseUrl` is set): an
 * ephemeral loopback port, the test administrator, silent logs and rate limits lifted, unless
 * `overrides` set them.
 */
export function testServiceConfig(
  dataDir: string,
  databaseUrl: string | undefined,
  overrides: Partial<ServiceConfigInput> = {},
): ServiceConfig {
  return parseServiceConfig(
    {},
    {
      port: 0,
      host: '127.0.0.1',
      dataDir,
      databaseUrl,
      adminEmail: ADMIN.email,
      adminPassword: ADMIN.password,
      bootstrapAllow: '127.0.0.1,::1',
      rateLimitPerMinute: 1_000_000,
      rateLimitPerDay: 100_000_000,
      logLevel: 'silent',
      ...overrides,
    },
  );
}

/**
 * Starts a real Service on a loopback port with its own data folder (and its own PostgreSQL
 * database for the postgres target). Rate limits are lifted unless the test sets them.
 */
export async function startService(
  target: StoreTarget,
  overrides: Partial<ServiceConfigInput> = {},
  opts: Omit<BuildOptions, 'logger'> = {},
): Promise<TestService> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-test-'));
  const database = target.name === 'postgres' ? await createTestDatabase() : undefined;
  const config = testServiceConfig(dataDir, database?.url, overrides);
  const service = await buildService(config, { ...opts, logger: pino({ level: 'silent' }) });
  const url = await service.listen();
  const agent = new http.Agent({ keepAlive: true });

  return {
    url,
    admin: ADMIN,
    orgId: service.bootstrap.orgId,
    service,
    dataDir,
    request: (method, pathAndQuery, opts = {}) => request(url, agent, method, pathAndQuery, opts),
    async close() {
      agent.destroy();
      await service.close();
      await database?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** One API call to the Service at `base`, through `agent` (Node's global one when undefined) unless it is made `from` another local address. */
export function request<T>(
  base: string,
  agent: http.Agent | undefined,
  method: string,
  pathAndQuery: string,
  opts: RequestOptions = {},
): Promise<ApiResponse<T>> {
  const auth = opts.auth === undefined ? ADMIN : opts.auth;
  const headers: Record<string, string> = { ...opts.headers };
  if (auth) headers['authorization'] = `Basic ${Buffer.from(`${auth.email}:${auth.password}`).toString('base64')}`;
  let payload: string | undefined;
  if (opts.body !== undefined) {
    payload = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const url = new URL(pathAndQuery, base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method, headers, agent: opts.from ? undefined : agent, ...(opts.from ? { localAddress: opts.from } : {}) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          if (/json/.test(res.headers['content-type'] ?? '') && text) body = JSON.parse(text);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: body as T });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}
