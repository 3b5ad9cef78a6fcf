import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { buildService } from '../../service/build-service.js';
import type { ServiceConfigInput } from '../../service/config.js';
import { ADMIN, request, testServiceConfig, type TestService } from './service.js';
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
      const config = testServiceConfig(dataDir, database?.url, { ...base, ...overrides });
      const service = await buildService(config, { logger: pino({ level: 'silent' }) });
      const url = await service.listen();
      return {
        url,
        admin: ADMIN,
        orgId: service.bootstrap.orgId,
        service,
        dataDir,
        request: (method, pathAndQuery, opts) => request(url, undefined, method, pathAndQuery, opts),
        close: () => service.close(),
      };
    },
    async dispose() {
      await database?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Replicas of one Service (docs/deploy.md): one PostgreSQL database and one master key, a data
 * folder each. `start` starts one more; `dispose` (after the caller closed them) removes the rest.
 */
export interface ServiceReplicas {
  /** The database the replicas share. */
  readonly databaseUrl: string;
  start(overrides?: Partial<ServiceConfigInput>): Promise<TestService>;
  dispose(): Promise<void>;
}

export async function serviceReplicas(base: Partial<ServiceConfigInput> = {}): Promise<ServiceReplicas> {
  const data = await serviceData({ name: 'postgres' }, { masterKey: randomBytes(32).toString('base64'), ...base });
  const folders: string[] = [];
  return {
    databaseUrl: data.databaseUrl ?? '',
    start(overrides = {}) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-replica-'));
      folders.push(dataDir);
      return data.start({ dataDir, ...overrides });
    },
    async dispose() {
      await data.dispose();
      for (const f of folders) fs.rmSync(f, { recursive: true, force: true });
    },
  };
}
