import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, serviceUnderTest, type ServiceUnderTest } from '../agent/harness.js';
import { createConnection, CSV, finished, prepared, runningAgent, SQLITE } from './harness.js';

const B = (map: number, n: number): string => `44444444-4444-4444-8444-${String(map * 100 + n).padStart(12, '0')}`;

/**
 * Enable state on a real Agent process: a Map disabled after prepare is skipped by the next run of
 * its Solution without a new prepare (the Agent's copy follows), and runs again once enabled.
 */
describe('a disabled Map on a real Agent: CSV → SQLite', () => {
  let sut: ServiceUnderTest;
  let agent: Awaited<ReturnType<typeof runningAgent>>;
  let file: string;
  let S: string;
  let solutionId: string;
  const mapIds: number[] = [];

  const count = (table: string): number => {
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    } finally {
      db.close();
    }
  };
  const mapOf = (n: number, csvId: string, dbId: string, table: string) => ({
    version: '3.0',
    name: `People to ${table}`,
    blocks: [
      { blockId: B(n, 1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: csvId, entity: 'people' },
      { blockId: B(n, 2), name: 'Put', blockType: 'Create', action: 'Create', connectionId: dbId, entity: table, fieldMappings: [{ targetField: 'id', targetFormula: 'Q.id' }, { targetField: 'name', targetFormula: 'Q.name' }] },
    ],
  });
  const runOnce = async () => {
    const start = await sut.request<{ runId: string; started: boolean }>('POST', `${S}/start`);
    expect(start.status, JSON.stringify(start.body)).toBe(200);
    expect(start.body.started).toBe(true);
    return finished(sut, solutionId, start.body.runId);
  };

  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    const folder = path.join(sut.dataDir, 'csv');
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'people.csv'), 'id,name\n1,ann\n2,bob\n3,cy\n');
    fs.writeFileSync(path.join(folder, 'schema.json'), JSON.stringify({ entities: { 'people.csv': { fields: [{ name: 'id', type: 'integer' }, { name: 'name', type: 'string' }] } } }));
    file = path.join(sut.dataDir, 'target.db');
    const db = new Database(file);
    for (const t of ['a', 'b']) db.exec(`CREATE TABLE ${t} (id INTEGER, name TEXT NOT NULL)`);
    db.close();
    agent = await runningAgent(sut);
    const csvId = await createConnection(sut, 'Files', CSV, { folder });
    const dbId = await createConnection(sut, 'Target', SQLITE, { file });
    const sol = await sut.request<{ id: string }>('POST', `/v1/orgs/${sut.orgId}/solutions`, { body: { name: 'Two maps', solutionType: 'Integration', agentId: agent.agentId } });
    expect(sol.status).toBe(201);
    solutionId = sol.body.id;
    S = `/v1/orgs/${sut.orgId}/solutions/${solutionId}`;
    for (const [n, table] of ['a', 'b'].entries()) {
      const res = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, { body: mapOf(n + 1, csvId, dbId, table) });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      mapIds.push(res.body.id);
    }
  }, 180_000);

  afterAll(async () => {
    killAll();
    await sut?.dispose();
  });

  it('skips a Map disabled after prepare, and runs it again once enabled, without a new prepare', { timeout: 240_000 }, async () => {
    const job = await prepared(sut, solutionId);
    expect(job, job.message).toMatchObject({ hasError: false, mapErrorModels: [] });
    const [first, second] = mapIds as [number, number];

    const off = await sut.request<{ enabled: boolean }>('PUT', `${S}/maps/${second}/enable?enableState=false`);
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect(off.body.enabled).toBe(false);
    expect((await sut.request<{ status: string }>('GET', S)).body.status).not.toBe('Incomplete');

    const run1 = await runOnce();
    expect(run1, JSON.stringify(run1)).toMatchObject({ result: 'CompletedSuccessfully', recordsProcessed: 3, recordsFailed: 0 });
    expect([count('a'), count('b')]).toEqual([3, 0]);

    expect((await sut.request('PUT', `${S}/maps/${second}/enable`)).status).toBe(200);
    expect((await sut.request('PUT', `${S}/maps/${first}/enable?enableState=false`)).status).toBe(200);
    const run2 = await runOnce();
    expect(run2, JSON.stringify(run2)).toMatchObject({ result: 'CompletedSuccessfully', recordsProcessed: 3 });
    expect([count('a'), count('b')]).toEqual([3, 3]);
  });
});
