/**
 * Integration Solutions for tests of the Agent's runs on the real csv and sqlite plugins: a CSV
 * folder of people (id, name, updated_at) copied by Maps with net change into tables of a SQLite
 * file, as the Agent holds the Solution once it is prepared; and the plugin host the runs open
 * their Connections with.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { PreparedMap, PreparedSolution } from '../../src/protocol/solutions.js';

export const CSV_CONNECTOR = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
export const SQLITE_CONNECTOR = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const CONNECTORS_DIR = path.resolve(import.meta.dirname, '../../connectors');

/** Capture switches that keep no failed record anywhere. */
export const NO_CAPTURE: PreparedSolution['capture'] = {
  captureOnFailedRecordsForReprocessing: false,
  captureDuringCloudAppRuns: false,
  captureDuringLocalAgentAppRuns: false,
  isSourceDataLocal: true,
};

const T0 = Date.UTC(2024, 0, 2);
/** Second `i` after 2024-01-02T00:00:00Z, as the people's updated_at holds it. */
export const stamp = (i: number): string => new Date(T0 + i * 1000).toISOString().replace('.000Z', 'Z');

/** Writes `count` people (id i, name `n<i>`, updated_at stamp(i)) and their schema.json into `folder`. */
export function writePeople(folder: string, count: number): void {
  const lines = ['id,name,updated_at'];
  for (let i = 1; i <= count; i++) lines.push(`${i},n${i},${stamp(i)}`);
  fs.writeFileSync(path.join(folder, 'people.csv'), lines.join('\n') + '\n');
  fs.writeFileSync(
    path.join(folder, 'schema.json'),
    JSON.stringify({
      entities: {
        'people.csv': {
          fields: [
            { name: 'id', type: 'integer', primaryKey: true },
            { name: 'name', type: 'string' },
            { name: 'updated_at', type: 'datetime' },
          ],
        },
      },
    }),
  );
}

/** Creates the SQLite file `file` with the tables of `ddl`. */
export function sqliteTarget(file: string, ddl: string): void {
  const db = new Database(file);
  try {
    db.exec(ddl);
  } finally {
    db.close();
  }
}

/** How many rows `table` of the SQLite file holds. */
export function rowCount(file: string, table: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/**
 * A Map (Query `Q` on Connection `csv`, Create `Put` on Connection `db`) that copies the people's id
 * and name into `table`, `batchSize` records a batch, with net change on updated_at. Map IDs up to
 * 999 give distinct Block IDs.
 */
export function peopleMap(
  mapId: number,
  table: string,
  opts: { name?: string; batchSize?: number; enabled?: boolean } = {},
): PreparedMap {
  const name = opts.name ?? `People into ${table}`;
  const block = (n: number): string => `31111${String(mapId).padStart(3, '0')}-1111-4111-8111-00000000000${n}`;
  return {
    mapId,
    name,
    enabled: opts.enabled ?? true,
    model: {
      version: '3.0',
      name,
      batchSize: opts.batchSize ?? 500,
      blocks: [
        {
          blockId: block(1),
          name: 'Q',
          blockType: 'Query',
          action: 'Query',
          connectionId: 'csv',
          entity: 'people',
          netChange: { fieldName: 'updated_at' },
        },
        {
          blockId: block(2),
          name: 'Put',
          blockType: 'Create',
          action: 'Create',
          connectionId: 'db',
          entity: table,
          fieldMappings: [
            { targetField: 'id', targetFormula: 'Q.id' },
            { targetField: 'name', targetFormula: 'Q.name' },
          ],
        },
      ],
    },
  };
}

/** An Integration Solution of `maps`, reading the people in `folder` and writing into the SQLite file `targetFile`. */
export function peopleSolution(
  folder: string,
  targetFile: string,
  maps: PreparedMap[],
  name = 'People',
): PreparedSolution {
  return {
    solutionId: crypto.randomUUID(),
    orgId: 1,
    name,
    solutionType: 'Integration',
    version: 'v1',
    isDisabled: false,
    schedule: null,
    connections: [
      { connectionId: 'csv', connectorId: CSV_CONNECTOR, name: 'People', properties: { folder } },
      { connectionId: 'db', connectorId: SQLITE_CONNECTOR, name: 'Target', properties: { file: targetFile } },
    ],
    maps,
    replication: null,
    capture: NO_CAPTURE,
    lookupTables: [],
  };
}

/**
 * The repository's plugins loaded in one Connector host, and a temporary folder, for the test
 * file: both made before its tests and removed after them.
 */
export function usePluginHost(prefix: string): { host: () => ConnectorHost; tmp: () => string } {
  let host: ConnectorHost | undefined;
  let tmp: string | undefined;
  beforeAll(async () => {
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), `ferry-${prefix}-`));
  });
  afterAll(async () => {
    await host?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });
  return {
    host: () => host ?? fail('the plugin host is made before the tests'),
    tmp: () => tmp ?? fail('the temporary folder is made before the tests'),
  };
}

function fail(message: string): never {
  throw new Error(message);
}
