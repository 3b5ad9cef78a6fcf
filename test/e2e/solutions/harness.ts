/**
 * Solutions end to end: a real Service, a real Agent process with the Organization's Connectors,
 * its CSV files and SQLite targets, Connections, Solutions and Maps created through the API, and
 * helpers to prepare, start and wait for History.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { encryptProperty } from '../../../service/connections/properties-crypto.js';
import {
  ferry,
  install,
  killAll,
  serviceUnderTest,
  until,
  untilStatus,
  type ServiceUnderTest,
} from '../agent/harness.js';
import { BUILT_IN_CONNECTORS } from '../../helpers/built-in-connectors.js';

export const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
export const POSTGRES = '18cc2a91-e317-4972-9c24-be9fc63775ab';
export const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';

export interface Execution {
  id: number;
  processExecutionId: string;
  result: string;
  recordsProcessed: number;
  recordsFailed: number;
  details: string | null;
  trigger?: string;
}

/** Installs an Agent under the Service's data folder, runs it, and waits until it has the built-in Connectors. */
export async function runningAgent(
  sut: ServiceUnderTest,
  env: Record<string, string> = {},
): Promise<{ agentId: string; home: string; dir: string; proc: ReturnType<typeof ferry> }> {
  const home = path.join(sut.dataDir, 'agents');
  const agent = await install(sut, home);
  const proc = ferry(['agent', 'run', '--home', home], env);
  await untilStatus(sut, agent.agentId, 'Running');
  await until(
    'the built-in connectors on the Agent',
    async () => {
      const res = await sut.request<{ installedConnectors: unknown[] }>(
        'GET',
        `/v1/orgs/${sut.orgId}/agents/${agent.agentId}`,
      );
      return res.body.installedConnectors.length === BUILT_IN_CONNECTORS ? true : undefined;
    },
    90_000,
  );
  return { agentId: agent.agentId, home, dir: agent.dir, proc };
}

/** Creates a Connection with its properties encrypted under the Organization's crypto token, as clients do. */
export async function createConnection(
  sut: ServiceUnderTest,
  name: string,
  connectorId: string,
  properties: Record<string, string>,
): Promise<string> {
  const token = (await sut.request<{ apiCryptoToken: string }>('GET', `/v1/orgs/${sut.orgId}/SecuritySettings`)).body
    .apiCryptoToken;
  const res = await sut.request<{ id: string }>('POST', `/v1/orgs/${sut.orgId}/connections`, {
    body: {
      name,
      connectorId,
      color: '#FF112233',
      properties: Object.entries(properties).map(([key, value]) => ({ key, value: encryptProperty(value, token) })),
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

/** Prepares and waits for the job; answers it. */
/** One error of a Map in a prepare job's mapErrorModels. */
export interface MapBlockError {
  blockId: string | null;
  blockName: string | null;
  code: string;
  message: string;
}

export async function prepared(
  sut: ServiceUnderTest,
  solutionId: string,
): Promise<{
  hasError: boolean;
  message: string;
  mapErrorModels: Array<{ mapId: number; message: string; errors: MapBlockError[] }>;
}> {
  const S = `/v1/orgs/${sut.orgId}/solutions/${solutionId}`;
  const job = await sut.request<{ id: string }>('POST', `${S}/prepare`);
  expect(job.status, JSON.stringify(job.body)).toBe(200);
  return until(
    'the prepare job',
    async () => {
      const res = await sut.request<{
        isComplete: boolean;
        hasError: boolean;
        message: string;
        mapErrorModels: Array<{ mapId: number; message: string; errors: MapBlockError[] }>;
      }>('GET', `${S}/prepare/${job.body.id}`);
      return res.body.isComplete ? res.body : undefined;
    },
    120_000,
  );
}

/** The execution of a run once it has ended. */
export async function finished(
  sut: ServiceUnderTest,
  solutionId: string,
  runId: string,
  ms = 180_000,
): Promise<Execution> {
  const S = `/v1/orgs/${sut.orgId}/solutions/${solutionId}`;
  return until(
    `the end of run ${runId}`,
    async () => {
      const res = await sut.request<Execution[]>('GET', `${S}/history?limit=1000`);
      const e = Array.isArray(res.body) ? res.body.find((x) => x.processExecutionId === runId) : undefined;
      return e && e.result !== 'InProgress' ? e : undefined;
    },
    ms,
  );
}

// ── a Service, an Agent and their files, for the Solution tests ────────────────

/** The Agent {@link runningAgent} answers. */
export type RunningAgent = Awaited<ReturnType<typeof runningAgent>>;

/** A field of a CSV file as its folder's schema.json types it. */
export interface CsvField {
  name: string;
  type: 'integer' | 'string';
}

/** The fields of `id,name` CSV files. */
export const ID_NAME: CsvField[] = [
  { name: 'id', type: 'integer' },
  { name: 'name', type: 'string' },
];

/** Three people, as `id,name` CSV text. */
export const PEOPLE_CSV = 'id,name\n1,ann\n2,bob\n3,cy\n';

/** `id,name` CSV text of `count` rows: `1,<prefix>1` and on. */
export function idNameCsv(count: number, prefix = 'name'): string {
  return ['id,name', ...Array.from({ length: count }, (_, i) => `${i + 1},${prefix}${i + 1}`)].join('\n') + '\n';
}

/**
 * Starts a Service, writes `csv` (entity → the text of `<entity>.csv`, every file with `fields`) and
 * their schema.json into the folder `csv` of its data folder, and runs an Agent on it with the
 * three built-in Connectors. A set-up that fails half-way stops what it started; otherwise
 * {@link stopAll} does.
 */
export async function startWithAgent(opts: {
  csv: Record<string, string>;
  fields?: CsvField[];
}): Promise<{ sut: ServiceUnderTest; agent: RunningAgent; folder: string }> {
  const sut = serviceUnderTest();
  try {
    await sut.start();
    const folder = path.join(sut.dataDir, 'csv');
    fs.mkdirSync(folder);
    const entities: Record<string, { fields: CsvField[] }> = {};
    for (const [entity, text] of Object.entries(opts.csv)) {
      fs.writeFileSync(path.join(folder, `${entity}.csv`), text);
      entities[`${entity}.csv`] = { fields: opts.fields ?? ID_NAME };
    }
    fs.writeFileSync(path.join(folder, 'schema.json'), JSON.stringify({ entities }));
    const agent = await runningAgent(sut);
    return { sut, agent, folder };
  } catch (err) {
    await stopAll(sut);
    throw err;
  }
}

/** Kills every process the harness started (the Agents) and disposes of the Service and its data folder. */
export async function stopAll(sut: ServiceUnderTest | undefined): Promise<void> {
  killAll();
  await sut?.dispose();
}

/** A SQLite file to write into, and what it holds. */
export interface SqliteTarget {
  file: string;
  count: (table: string) => number;
  /** The rows of every table, by table. */
  counts: () => Record<string, number>;
  /** Deletes the rows of every table. */
  clear: () => void;
}

/** Creates the SQLite file `file` with `tables`, each `(id INTEGER, name TEXT NOT NULL)`, `id` the primary key when `primaryKey`. */
export function sqliteTarget(file: string, tables: string[], opts: { primaryKey?: boolean } = {}): SqliteTarget {
  const withDb = <T>(readonly: boolean, use: (db: Database.Database) => T): T => {
    const db = new Database(file, { readonly });
    try {
      return use(db);
    } finally {
      db.close();
    }
  };
  withDb(false, (db) => {
    for (const t of tables)
      db.exec(`CREATE TABLE ${t} (id INTEGER${opts.primaryKey ? ' PRIMARY KEY' : ''}, name TEXT NOT NULL)`);
  });
  const count = (table: string): number =>
    withDb(true, (db) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);
  return {
    file,
    count,
    counts: () => Object.fromEntries(tables.map((t) => [t, count(t)])),
    clear: () => withDb(false, (db) => tables.forEach((t) => db.exec(`DELETE FROM ${t}`))),
  };
}

/** The Block IDs of the Map numbered `n` in its Solution. */
const blockId = (n: number, k: number): string => `44444444-4444-4444-8444-${String(n * 100 + k).padStart(12, '0')}`;

/**
 * An advanced Map model named "Copy <entity> to <table>": a Query of `entity` on the Connection
 * `csvId` and a Create into `table` on `targetId`, copying `id` and `name` unless `fields` (target
 * field → formula) says otherwise or more. `n` numbers its Block IDs: each Map of a Solution its own.
 */
export function copyMap(o: {
  n: number;
  csvId: string;
  entity: string;
  targetId: string;
  table: string;
  fields?: Record<string, string>;
  batchSize?: number;
}) {
  const fields = { id: 'Q.id', name: 'Q.name', ...o.fields };
  return {
    version: '3.0',
    name: `Copy ${o.entity} to ${o.table}`,
    ...(o.batchSize === undefined ? {} : { batchSize: o.batchSize }),
    blocks: [
      {
        blockId: blockId(o.n, 1),
        name: 'Q',
        blockType: 'Query',
        action: 'Query',
        connectionId: o.csvId,
        entity: o.entity,
      },
      {
        blockId: blockId(o.n, 2),
        name: 'Put',
        blockType: 'Create',
        action: 'Create',
        connectionId: o.targetId,
        entity: o.table,
        fieldMappings: Object.entries(fields).map(([targetField, targetFormula]) => ({ targetField, targetFormula })),
      },
    ],
  };
}

/**
 * Creates a Solution on the Agent with `maps` (advanced Map models), in order, and when `prepare`
 * prepares it, expecting no error. Answers its ID, its API path and its Map IDs.
 */
export async function createSolution(
  sut: ServiceUnderTest,
  agentId: string,
  name: string,
  maps: unknown[],
  opts: { prepare?: boolean } = {},
): Promise<{ id: string; S: string; mapIds: number[] }> {
  const sol = await sut.request<{ id: string }>('POST', `/v1/orgs/${sut.orgId}/solutions`, {
    body: { name, solutionType: 'Integration', agentId },
  });
  expect(sol.status, JSON.stringify(sol.body)).toBe(201);
  const S = `/v1/orgs/${sut.orgId}/solutions/${sol.body.id}`;
  const mapIds: number[] = [];
  for (const [i, body] of maps.entries()) {
    const res = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, { body });
    expect(res.status, `map ${i + 1}: ${JSON.stringify(res.body)}`).toBe(201);
    mapIds.push(res.body.id);
  }
  if (opts.prepare) {
    const job = await prepared(sut, sol.body.id);
    expect(job, job.message).toMatchObject({ hasError: false, mapErrorModels: [] });
  }
  return { id: sol.body.id, S, mapIds };
}

/** Starts a run of the Solution, which must start; answers its run ID. */
export async function startRun(sut: ServiceUnderTest, solutionId: string): Promise<string> {
  const res = await sut.request<{ runId: string; started: boolean }>(
    'POST',
    `/v1/orgs/${sut.orgId}/solutions/${solutionId}/start`,
  );
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.started, JSON.stringify(res.body)).toBe(true);
  return res.body.runId;
}

/** Starts a run of the Solution and answers its execution once it has ended. */
export async function runToEnd(sut: ServiceUnderTest, solutionId: string): Promise<Execution> {
  return finished(sut, solutionId, await startRun(sut, solutionId));
}
