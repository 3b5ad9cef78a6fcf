import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import type { HostConnection } from '../../src/connectors/connection.js';
import { ConnectorHost } from '../../src/connectors/host.js';
import { compilePlan, type MapPlan } from '../../src/maps/compiler/plan.js';

const FIXTURE = new URL('../fixtures/maps/query-create/', import.meta.url).pathname;
const CONNECTORS = new URL('../../connectors/', import.meta.url).pathname;

/** One case of the query-create Map: its folders, its open connections and its compiled plan. */
export interface QueryCreateCase {
  dir: string;
  dbFile: string;
  conns: Map<string, HostConnection>;
  plan: MapPlan;
  close(): Promise<void>;
}

export interface QueryCreateOptions {
  /** The people.csv to read; the fixture's own when absent. */
  csv?: string;
  /** The CSV folder's schema.json; the fixture's own when absent. */
  schema?: string;
  /** Overrides of the Map model (for example `batchSize`). */
  model?: Record<string, unknown>;
  /** More properties of the SQLite target Connection (for example `busyTimeoutMs`). */
  target?: Record<string, string>;
  /** The target database's DDL; the fixture's own (contacts, keyed by id) when absent. */
  targetSql?: string;
}

/**
 * The query-create fixture's Map (CSV people → SQLite contacts, net change) on the real csv and
 * sqlite plugins, for tests of runs across time: registers the plugin host and a temporary folder
 * for the test file, and answers a function that sets up one fresh case (source folder, target
 * database, connections, plan).
 */
export function useQueryCreateMap(prefix: string): (opts?: QueryCreateOptions) => Promise<QueryCreateCase> {
  let host: ConnectorHost;
  let tmp: string;
  let n = 0;
  beforeAll(async () => {
    host = new ConnectorHost({ dir: CONNECTORS, log: pino({ level: 'silent' }) });
    await host.loadAll();
    tmp = await fsp.mkdtemp(path.join(os.tmpdir(), `ferry-${prefix}-`));
  });
  afterAll(async () => {
    await host.close();
    await fsp.rm(tmp, { recursive: true, force: true });
  });
  return async (opts = {}) => {
    const dir = path.join(tmp, `case-${++n}`);
    await fsp.cp(path.join(FIXTURE, 'input'), path.join(dir, 'src'), { recursive: true });
    if (opts.csv !== undefined) await fsp.writeFile(path.join(dir, 'src', 'people.csv'), opts.csv);
    if (opts.schema !== undefined) await fsp.writeFile(path.join(dir, 'src', 'schema.json'), opts.schema);
    const dbFile = path.join(dir, 'target.db');
    const db = new Database(dbFile);
    db.exec(opts.targetSql ?? (await fsp.readFile(path.join(dir, 'src', 'target.sql'), 'utf8')));
    db.close();
    await fsp.rm(path.join(dir, 'src', 'target.sql'));
    const src = await host.open({
      connectorId: 'CSV',
      connectionId: `src-${n}`,
      properties: { folder: path.join(dir, 'src') },
    });
    const dst = await host.open({
      connectorId: 'SQLite',
      connectionId: `db-${n}`,
      properties: { file: dbFile, ...opts.target },
    });
    const model = JSON.parse(await fsp.readFile(path.join(FIXTURE, 'map.json'), 'utf8')) as Record<string, unknown>;
    const plan = compilePlan({ ...model, ...opts.model }, { src: await src.metadata(), db: await dst.metadata() });
    return {
      dir,
      dbFile,
      conns: new Map([
        ['src', src],
        ['db', dst],
      ]),
      plan,
      async close() {
        await src.close();
        await dst.close();
      },
    };
  };
}
