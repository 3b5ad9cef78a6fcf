import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { buildService } from '../../service/build-service.js';
import { parseServiceConfig, type ServiceConfigInput } from '../../service/config.js';
import { ADMIN, type ApiResponse, type RequestOptions, type TestService } from './service.js';
import { createTestDatabase, type StoreTarget } from './stores.js';

/**
 * A data folder (and PostgreSQL database) that outlives the Services started on it, for tests of
 * what a Service restart keeps. `start` builds and listens; the caller closes each Service, then
 * `dispose`s the data.
 */
export interface ServiceData {
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  start(overrides?: Partial<ServiceConfigInput>): Promise<TestService>;
  dispose(): Promise<void>;
}

export async function serviceData(target: StoreTarget, base: Partial<ServiceConfigInput> = {}): Promise<ServiceData> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-data-'));
  const database = target.name === 'postgres' ? await createTestDatabase() : undefined;
  return {
    dataDir,
    databaseUrl: database?.url,
    async start(overrides = {}) {
      const config = parseServiceConfig({}, {
        port: 0,
        host: '127.0.0.1',
        dataDir,
        databaseUrl: database?.url,
        adminEmail: ADMIN.email,
        adminPassword: ADMIN.password,
        rateLimitPerMinute: 1_000_000,
        rateLimitPerDay: 100_000_000,
        logLevel: 'silent',
        ...base,
        ...overrides,
      });
      const service = await buildService(config, { logger: pino({ level: 'silent' }) });
      const url = await service.listen();
      return {
        url,
        admin: ADMIN,
        orgId: service.bootstrap.orgId,
        service,
        dataDir,
        request: (method, pathAndQuery, opts) => request(url, method, pathAndQuery, opts),
        close: () => service.close(),
      };
    },
    async dispose() {
      await database?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function request<T>(base: string, method: string, pathAndQuery: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
  const auth = opts.auth === undefined ? ADMIN : opts.auth;
  const headers: Record<string, string> = { ...opts.headers };
  if (auth) headers['authorization'] = `Basic ${Buffer.from(`${auth.email}:${auth.password}`).toString('base64')}`;
  const payload = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  if (payload !== undefined) headers['content-type'] ??= 'application/json';
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(pathAndQuery, base), { method, headers, ...(opts.from ? { localAddress: opts.from } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const body: unknown = /json/.test(res.headers['content-type'] ?? '') && text ? JSON.parse(text) : text;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: body as T });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}
