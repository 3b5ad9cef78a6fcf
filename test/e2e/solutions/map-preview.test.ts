import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { killAll, serviceUnderTest, until, type ServiceUnderTest } from '../agent/harness.js';
import { createConnection, CSV, POSTGRES, runningAgent, SQLITE } from './harness.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');

interface Preview {
  previewId: string;
  status: string;
  hasError: boolean;
  errorCode: string | null;
  message: string;
  fields: string[];
  records: Array<Record<string, unknown>>;
  recordCount: number;
  limit: number;
  truncated: boolean;
  blockName: string;
}
interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}

const B = (n: number): string => `22222222-2222-4222-8222-${String(n).padStart(12, '0')}`;

/**
 * Preview query and native query test through a real Agent process: records of a CSV file and a
 * SQLite database (and PostgreSQL when there is one) read with the Connection's Connector, the
 * Block's filter applied, at most 100 of them; a Connector's error is a result, not a 500.
 */
describe('Map preview query and native query test on a real Agent', () => {
  let sut: ServiceUnderTest;
  let agent: Awaited<ReturnType<typeof runningAgent>>;
  let S: string;
  let csvId: string;
  let sqliteId: string;
  let mapId: number;
  let nativeMapId: number;
  let pgDb: { url: string; drop: () => Promise<void> } | undefined;

  const queryMap = () => ({
    version: '3.0',
    name: 'People preview',
    blocks: [
      { blockId: B(1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: csvId, entity: 'people' },
      {
        blockId: B(2),
        name: 'CaOnly',
        blockType: 'Fetch',
        action: 'Query',
        connectionId: csvId,
        entity: 'people',
        maxRecords: 5,
        filter: { op: '=', field: 'state', value: 'CA' },
      },
      {
        blockId: B(3),
        name: 'Write',
        blockType: 'Create',
        action: 'Create',
        connectionId: sqliteId,
        entity: 'items',
        fieldMappings: [{ targetField: 'id', targetFormula: 'Q.id' }],
      },
    ],
  });
  const nativeMap = (statement: string, connectionId = sqliteId) => ({
    version: '3.0',
    name: 'Native',
    blocks: [
      {
        blockId: B(10),
        name: 'N',
        blockType: 'NativeQuery',
        action: 'NativeQuery',
        connectionId,
        statement,
        fields: ['id', 'label'],
      },
      {
        blockId: B(11),
        name: 'Write',
        blockType: 'Create',
        action: 'Create',
        connectionId: sqliteId,
        entity: 'items',
        fieldMappings: [{ targetField: 'id', targetFormula: 'N.id' }],
      },
    ],
  });

  /** Starts a preview and polls it (404 until ready). */
  const preview = async (id: number, query = '', body?: unknown): Promise<Preview> => {
    const start = await sut.request<{ previewId: string }>(
      'POST',
      `${S}/maps/${id}/previewquery${query}`,
      body === undefined ? {} : { body },
    );
    expect(start.status, JSON.stringify(start.body)).toBe(200);
    return until(
      'the preview',
      async () => {
        const res = await sut.request<Preview | Problem>('GET', `${S}/maps/${id}/previewquery/${start.body.previewId}`);
        if (res.status === 404) return undefined;
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        return res.body as Preview;
      },
      60_000,
    );
  };
  const nativeTest = async (id: number, blockId?: string, body?: unknown): Promise<Preview> => {
    const q = blockId ? `?nativeQueryBlockID=${blockId}` : '';
    const start = await sut.request<{ tests: Array<{ id: string }> }>(
      'POST',
      `${S}/maps/${id}/nativequerytest${q}`,
      body === undefined ? {} : { body },
    );
    expect(start.status, JSON.stringify(start.body)).toBe(200);
    const testId = start.body.tests[0]?.id;
    return until(
      'the native query test',
      async () => {
        const res = await sut.request<Preview>('GET', `${S}/maps/${id}/nativequerytest${q}`);
        return res.status === 200 && res.body.previewId === testId ? res.body : undefined;
      },
      60_000,
    );
  };

  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    const folder = path.join(sut.dataDir, 'csv');
    fs.mkdirSync(folder);
    const lines = ['id,name,state'];
    for (let i = 1; i <= 150; i++) lines.push(`${i},person${i},${i % 3 === 0 ? 'CA' : 'NY'}`);
    fs.writeFileSync(path.join(folder, 'people.csv'), lines.join('\n') + '\n');
    fs.writeFileSync(
      path.join(folder, 'schema.json'),
      JSON.stringify({
        entities: {
          'people.csv': {
            fields: [
              { name: 'id', type: 'integer' },
              { name: 'name', type: 'string' },
              { name: 'state', type: 'string' },
            ],
          },
        },
      }),
    );
    const file = path.join(sut.dataDir, 'items.db');
    const db = new Database(file);
    db.exec('CREATE TABLE items (id INTEGER PRIMARY KEY, label TEXT NOT NULL)');
    const ins = db.prepare('INSERT INTO items (id, label) VALUES (?, ?)');
    for (let i = 1; i <= 120; i++) ins.run(i, `item ${i}`);
    db.close();
    agent = await runningAgent(sut);
    csvId = await createConnection(sut, 'People files', CSV, { folder });
    sqliteId = await createConnection(sut, 'Items DB', SQLITE, { file });
    const sol = await sut.request<{ id: string }>('POST', `/v1/orgs/${sut.orgId}/solutions`, {
      body: { name: 'Previews', solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(sol.status).toBe(201);
    S = `/v1/orgs/${sut.orgId}/solutions/${sol.body.id}`;
    const map = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, { body: queryMap() });
    expect(map.status, JSON.stringify(map.body)).toBe(201);
    mapId = map.body.id;
    const native = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, {
      body: nativeMap('SELECT id, label FROM items WHERE id > 10 ORDER BY id'),
    });
    expect(native.status, JSON.stringify(native.body)).toBe(201);
    nativeMapId = native.body.id;
  }, 180_000);

  afterAll(async () => {
    killAll();
    await sut?.dispose();
    await pgDb?.drop();
  });

  it(
    'previews the Query Block of the stored Map: the first 100 of 150 records, and says it stopped there',
    { timeout: 90_000 },
    async () => {
      const res = await preview(mapId);
      expect(res).toMatchObject({
        status: 'Completed',
        hasError: false,
        errorCode: null,
        blockName: 'Q',
        limit: 100,
        truncated: true,
        recordCount: 100,
      });
      expect(res.fields).toEqual(['id', 'name', 'state']);
      expect(res.records[0]).toEqual({ id: 1, name: 'person1', state: 'NY' });
      expect(res.records).toHaveLength(100);
    },
  );

  it(
    'previews a Fetch Block with its filter applied, as many records as the Block reads',
    { timeout: 90_000 },
    async () => {
      const res = await preview(mapId, `?blockId=${B(2)}`);
      expect(res).toMatchObject({ hasError: false, blockName: 'CaOnly', limit: 5, recordCount: 5, truncated: true });
      expect(res.records.map((r) => r['state'])).toEqual(['CA', 'CA', 'CA', 'CA', 'CA']);
      expect(res.records.map((r) => r['id'])).toEqual([3, 6, 9, 12, 15]);
    },
  );

  it(
    "uses a model in the body instead of the stored Map (the path's Map need not exist)",
    { timeout: 90_000 },
    async () => {
      const model = queryMap();
      const body = {
        ...model,
        blocks: [
          { ...model.blocks[0], filter: { op: 'in', field: 'id', values: [4, 5, 6] } },
          ...model.blocks.slice(1),
        ],
      };
      const res = await preview(999_999, '', body);
      expect(res).toMatchObject({ hasError: false, recordCount: 3, truncated: false });
      expect(res.records).toEqual([
        { id: 4, name: 'person4', state: 'NY' },
        { id: 5, name: 'person5', state: 'NY' },
        { id: 6, name: 'person6', state: 'CA' },
      ]);
    },
  );

  it("answers a Connector error as the preview's result, not a 500", { timeout: 90_000 }, async () => {
    const broken = await createConnection(sut, 'Nowhere', CSV, { folder: path.join(sut.dataDir, 'no-such-folder') });
    const model = queryMap();
    const res = await preview(mapId, '', { ...model, blocks: [{ ...model.blocks[0], connectionId: broken }] });
    expect(res.status).toBe('Failed');
    expect(res.hasError).toBe(true);
    expect(res.errorCode).toMatch(/^CON_/);
    expect(res.message).toContain('no-such-folder');
    expect(res.records).toEqual([]);

    // An unknown entity too.
    const unknown = await preview(mapId, '', { ...model, blocks: [{ ...model.blocks[0], entity: 'no_such_entity' }] });
    expect(unknown).toMatchObject({ status: 'Failed', hasError: true });
    expect(unknown.errorCode).toMatch(/^CON_/);
  });

  it('refuses a model of version 2.0 (upgrade first), a Block that is not a Query or Fetch, and a POLL before or without a preview', async () => {
    const old = await sut.request<Problem>('POST', `${S}/maps/${mapId}/previewquery`, {
      body: { version: '2.0', name: 'Old', blocks: [] },
    });
    expect(old.status).toBe(400);
    expect(old.body.code).toBe('MAP_UPGRADE_REQUIRED');
    expect(old.body.detail).toContain('/maps/advanced/upgrade');
    const older = await sut.request<Problem>('POST', `${S}/maps/${nativeMapId}/nativequerytest`, {
      body: { Version: '1.5', Name: 'Older', Blocks: [] },
    });
    expect(older.status).toBe(400);
    expect(older.body.code).toBe('MAP_UPGRADE_REQUIRED');
    const write = await sut.request<Problem>('POST', `${S}/maps/${mapId}/previewquery?blockId=${B(3)}`);
    expect(write.status).toBe(400);
    expect(write.body.detail).toContain('Query or Fetch');
    const unknownBlock = await sut.request<Problem>('POST', `${S}/maps/${mapId}/previewquery?blockId=${B(99)}`);
    expect(unknownBlock.status).toBe(400);
    const native = await sut.request<Problem>('POST', `${S}/maps/${nativeMapId}/previewquery`);
    expect(native.status).toBe(400);
    expect(native.body.detail).toContain('nativequerytest');
    const unknownMap = await sut.request<Problem>('POST', `${S}/maps/999999/previewquery`);
    expect(unknownMap.status).toBe(404);
    const poll = await sut.request<Problem>(
      'GET',
      `${S}/maps/${mapId}/previewquery/3f2504e0-4f89-41d3-9a0c-0305e82c3301`,
    );
    expect(poll.status).toBe(404);
    expect(poll.body.code).toBe('API_NOT_FOUND');
    const notGuid = await sut.request<Problem>('GET', `${S}/maps/${mapId}/previewquery/nope`);
    expect(notGuid.status).toBe(400);
  });

  it(
    'tests a Native Query Block on SQLite: the first 100 rows of its statement; a bad statement is an error result',
    { timeout: 90_000 },
    async () => {
      const res = await nativeTest(nativeMapId, B(10));
      expect(res).toMatchObject({
        status: 'Completed',
        hasError: false,
        blockName: 'N',
        limit: 100,
        recordCount: 100,
        truncated: true,
      });
      expect(res.fields).toEqual(['id', 'label']);
      expect(res.records[0]).toEqual({ id: 11, label: 'item 11' });
      // Without the Block ID: the Map's Native Query Block; the GET answers the latest test.
      const again = await nativeTest(nativeMapId);
      expect(again.recordCount).toBe(100);

      const bad = await nativeTest(nativeMapId, undefined, nativeMap('SELECT nope FROM no_such_table'));
      expect(bad).toMatchObject({ status: 'Failed', hasError: true });
      expect(bad.errorCode).toMatch(/^CON_/);
      expect(bad.message).toMatch(/no_such_table|no such table/i);

      const notNative = await sut.request<Problem>(
        'POST',
        `${S}/maps/${mapId}/nativequerytest?nativeQueryBlockID=${B(1)}`,
      );
      expect(notNative.status).toBe(400);
      const none = await sut.request<Problem>('POST', `${S}/maps/${mapId}/nativequerytest`);
      expect(none.status).toBe(400);
      const never = await sut.request<Problem>('GET', `${S}/maps/${mapId}/nativequerytest`);
      expect(never.status).toBe(404);
    },
  );

  it.skipIf(!HAS_PG)(
    'tests a native query on PostgreSQL; a refused login is an error result that holds no password',
    { timeout: 90_000 },
    async () => {
      pgDb = await createTestDatabase();
      const pgId = await createConnection(sut, 'PG', POSTGRES, { connectionString: pgDb.url, schemas: 'public' });
      const ok = await nativeTest(
        nativeMapId,
        undefined,
        nativeMap("SELECT n AS id, 'row ' || n AS label FROM generate_series(1, 150) AS n", pgId),
      );
      expect(ok).toMatchObject({ hasError: false, recordCount: 100, truncated: true });
      expect(ok.records[99]).toEqual({ id: 100, label: 'row 100' });

      const url = new URL(pgDb.url);
      const secret = 'S3cret-Pw-never-shown';
      const badId = await createConnection(sut, 'PG refused', POSTGRES, {
        host: url.hostname,
        port: url.port || '5432',
        database: url.pathname.slice(1),
        user: 'no_such_role_for_ferry',
        password: secret,
      });
      const bad = await nativeTest(nativeMapId, undefined, nativeMap('SELECT 1 AS id', badId));
      expect(bad.hasError).toBe(true);
      expect(bad.errorCode).toMatch(/^CON_/);
      expect(JSON.stringify(bad)).not.toContain(secret);
    },
  );
});
