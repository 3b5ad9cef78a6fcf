import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { HostConnection } from '../../../src/connectors/connection.js';
import { ConnectorHost } from '../../../src/connectors/host.js';
import { upgradeMap } from '../../../src/maps/compiler/upgrade.js';
import { openRun, type ConnectionSpec } from '../../../src/maps/open-run.js';
import { runMap } from '../../../src/maps/runtime/run.js';

const FIXTURE = new URL('../../fixtures/maps/query-create/', import.meta.url).pathname;
const CONNECTORS = new URL('../../../connectors/', import.meta.url).pathname;
const log = pino({ level: 'silent' });

let tmp: string;
let n = 0;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-open-run-'));
});
afterAll(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

/** A fresh copy of the query-create fixture: its Map and the Connections it names. */
async function fixture(): Promise<{
  dir: string;
  model: ReturnType<typeof upgradeMap>;
  connections: Record<string, ConnectionSpec>;
}> {
  const dir = path.join(tmp, `case-${++n}`);
  await fsp.cp(path.join(FIXTURE, 'input'), path.join(dir, 'src'), { recursive: true });
  const db = new Database(path.join(dir, 'target.db'));
  db.exec(await fsp.readFile(path.join(dir, 'src', 'target.sql'), 'utf8'));
  db.close();
  await fsp.rm(path.join(dir, 'src', 'target.sql'));
  const model = upgradeMap(JSON.parse(await fsp.readFile(path.join(FIXTURE, 'map.json'), 'utf8')));
  return {
    dir,
    model,
    connections: {
      src: { connector: 'CSV', properties: { folder: path.join(dir, 'src') } },
      db: { connector: 'SQLite', properties: { file: path.join(dir, 'target.db') } },
    },
  };
}

const isClosed = (c: HostConnection): Promise<unknown> =>
  expect(c.test()).rejects.toMatchObject({ code: 'CON_CLOSED' });

describe('openRun', () => {
  it('opens the Connections, compiles the plan and the failed-record store; the run goes on them; close() closes them', async () => {
    const { dir, model, connections } = await fixture();
    const run = await openRun(model, {
      connectorsDir: CONNECTORS,
      log,
      connections,
      failuresDir: path.join(dir, 'failures'),
    });
    expect([...run.connections.keys()].sort()).toEqual(['db', 'src']);
    expect(Object.keys(run.metadata).sort()).toEqual(['db', 'src']);
    expect(run.plan.model.name).toBe(model.name);
    expect(run.failures).toBeDefined();
    const { stats } = await runMap(run.plan, {
      connections: run.connections,
      ...(run.failures ? { failures: run.failures } : {}),
    });
    expect({ processed: stats.processed, failed: stats.failed }).toEqual({ processed: 4, failed: 1 });
    // The failing record's source was captured for reprocessing.
    expect(run.failures?.list().map((r) => r.mapName)).toEqual([model.name]);
    await run.close();
    for (const c of run.connections.values()) await isClosed(c);
    expect(fs.existsSync(path.join(dir, 'failures'))).toBe(true);
  });

  it('throws MAP_INVALID with the results and closes what it opened; a shared host keeps its other Connections', async () => {
    const { model, connections } = await fixture();
    const host = new ConnectorHost({ dir: CONNECTORS, log });
    await host.loadAll();
    try {
      const other = await host.open({
        connectorId: 'CSV',
        connectionId: 'other',
        properties: connections['src']?.properties ?? {},
      });
      const open = vi.spyOn(host, 'open');
      const broken = {
        ...model,
        blocks: model.blocks.map((b, i) =>
          i === 1 ? { ...b, fieldMappings: [{ targetField: 'id', targetFormula: 'Q.nope' }] } : b,
        ),
      };
      const err = await openRun(broken, { host, connections }).catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'MAP_INVALID',
        details: { results: expect.arrayContaining([expect.objectContaining({ code: 'FML_UNKNOWN_FIELD' })]) },
      });
      const opened = await Promise.all(open.mock.results.map((r) => r.value as Promise<HostConnection>));
      expect(opened).toHaveLength(2);
      for (const c of opened) await isClosed(c);
      await expect(other.test()).resolves.toBeUndefined();

      const run = await openRun(model, { host, connections });
      expect(run.failures).toBeUndefined();
      await run.close();
      for (const c of run.connections.values()) await isClosed(c);
      await expect(other.test()).resolves.toBeUndefined();
    } finally {
      await host.close();
    }
  });
});
