import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, serviceUnderTest, type ServiceUnderTest } from '../agent/harness.js';
import { createConnection, CSV, finished, prepared, runningAgent, SQLITE } from './harness.js';

const FIXTURE = path.join(import.meta.dirname, '../../fixtures/maps-2.5/OrderHub.json');

/**
 * The original service's export of a Solution (test/fixtures/maps-2.5/OrderHub.json: four Maps
 * with every Block kind, model 2.5) imported through the API into a Solution whose Connections
 * carry the file's Connection names, prepared (every Map upgraded and validated against the real
 * metadata) and run by a real Agent against stand-ins of its entities: CSV files for the legacy
 * source and a SQLite database for the CRM.
 */
describe('an imported export of the original service runs on a real Agent', () => {
  let sut: ServiceUnderTest;
  let agent: Awaited<ReturnType<typeof runningAgent>>;
  let folder: string;
  let dbFile: string;

  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    folder = path.join(sut.dataDir, 'legacy');
    fs.mkdirSync(folder);
    fs.writeFileSync(
      path.join(folder, 'customers.csv'),
      [
        'id,name,email,region,active',
        '1,ada lovelace,ADA@X.TEST,EU,1',
        '2,bob stone,bob@x.test,US,1',
        '3,cy young,,EU,1',
        '4,dee dee,dee@x.test,US,0',
      ].join('\n') + '\n',
    );
    fs.writeFileSync(
      path.join(folder, 'orders.csv'),
      ['id,customer_id,amount,status', '10,1,50.5,open', '11,2,20,closed', '12,2,70,open'].join('\n') + '\n',
    );
    const f = (name: string, type: string) => ({ name, type });
    fs.writeFileSync(
      path.join(folder, 'schema.json'),
      JSON.stringify({
        entities: {
          'customers.csv': {
            fields: [
              f('id', 'integer'),
              f('name', 'string'),
              f('email', 'string'),
              f('region', 'string'),
              f('active', 'integer'),
            ],
          },
          'orders.csv': {
            fields: [f('id', 'integer'), f('customer_id', 'integer'), f('amount', 'double'), f('status', 'string')],
          },
        },
      }),
    );
    dbFile = path.join(sut.dataDir, 'crm.db');
    const db = new Database(dbFile);
    db.exec(`
      CREATE TABLE regions (code TEXT PRIMARY KEY, label TEXT NOT NULL);
      INSERT INTO regions VALUES ('EU', 'Europe'), ('US', 'United States');
      CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT, email TEXT, region TEXT, tier TEXT);
      CREATE TABLE contacts (id INTEGER PRIMARY KEY, account_id INTEGER UNIQUE, email TEXT);
      CREATE TABLE audit (id INTEGER PRIMARY KEY, message TEXT NOT NULL);
      CREATE TABLE stale (id INTEGER PRIMARY KEY);
      INSERT INTO stale VALUES (1), (2), (99);
      CREATE TABLE order_log (id INTEGER PRIMARY KEY, order_id INTEGER, email TEXT, amount REAL);
      CREATE TABLE payments (id INTEGER PRIMARY KEY, customer_id INTEGER, amount REAL);
      INSERT INTO payments VALUES (1, 1, 80), (2, 1, 40), (3, 2, 30);
      CREATE TABLE big_spenders (customer_id INTEGER PRIMARY KEY, total REAL);
    `);
    db.close();
    agent = await runningAgent(sut);
  }, 180_000);

  afterAll(async () => {
    killAll();
    await sut?.dispose();
  });

  it(
    'imports, upgrades and validates every Map; with Connections of the same names it runs and writes the target rows',
    { timeout: 240_000 },
    async () => {
      const O = `/v1/orgs/${sut.orgId}`;
      const csvId = await createConnection(sut, 'Legacy Files', CSV, { folder });
      const dbId = await createConnection(sut, 'CRM Database', SQLITE, { file: dbFile });
      const sol = await sut.request<{ id: string }>('POST', `${O}/solutions`, {
        body: { name: 'OrderHub', solutionType: 'Integration', agentId: agent.agentId },
      });
      expect(sol.status).toBe(201);
      const S = `${O}/solutions/${sol.body.id}`;

      const imported = await sut.request<{
        maps: Array<{ id: number; name: string }>;
        unresolvedConnections: unknown[];
      }>('POST', `${S}/maps/import`, { body: JSON.parse(fs.readFileSync(FIXTURE, 'utf8')) });
      expect(imported.status, JSON.stringify(imported.body)).toBe(200);
      expect(imported.body.unresolvedConnections).toEqual([]);
      expect(imported.body.maps.map((m) => m.name)).toEqual([
        'Customers to CRM',
        'Open orders',
        'Big spenders',
        'Balance request',
      ]);
      const maps = await sut.request<Array<{ blocks: Array<{ connectionId?: string }> }>>('GET', `${S}/maps`);
      expect(new Set(maps.body.flatMap((m) => m.blocks.map((b) => b.connectionId).filter(Boolean)))).toEqual(
        new Set([csvId, dbId]),
      );

      // Prepare validates and compiles every Map against the metadata the Agent reads.
      const job = await prepared(sut, sol.body.id);
      expect(job, JSON.stringify(job)).toMatchObject({ hasError: false, mapErrorModels: [] });
      const links = (await sut.request<{ mapLinks: Array<{ id: number; valid: boolean }> }>('GET', S)).body.mapLinks;
      expect(links.map((l) => l.valid)).toEqual([true, true, true, true]);

      // The request-reply Map answers requests; a run of the Solution runs the three others.
      const reply = imported.body.maps[3];
      expect((await sut.request('DELETE', `${S}/maps/${reply?.id ?? 0}`)).status).toBe(204);
      expect((await prepared(sut, sol.body.id)).hasError).toBe(false);
      const start = await sut.request<{ runId: string; started: boolean }>('POST', `${S}/start`);
      expect(start.status, JSON.stringify(start.body)).toBe(200);
      const run = await finished(sut, sol.body.id, start.body.runId);
      expect(run, JSON.stringify(run)).toMatchObject({ result: 'CompletedSuccessfully', recordsFailed: 0 });

      const crm = new Database(dbFile, { readonly: true });
      try {
        const all = (sql: string): unknown[] => crm.prepare(sql).all();
        expect(all('SELECT id, name, email, region, tier FROM accounts ORDER BY id')).toEqual([
          { id: 1, name: 'Ada Lovelace', email: 'ada@x.test', region: 'Europe', tier: 'gold' },
          { id: 2, name: 'Bob Stone', email: 'bob@x.test', region: 'United States', tier: 'silver' },
        ]);
        expect(all('SELECT account_id, email FROM contacts ORDER BY account_id')).toEqual([
          { account_id: 1, email: 'ada@x.test' },
          { account_id: 2, email: 'bob@x.test' },
        ]);
        expect(all('SELECT message FROM audit')).toEqual([{ message: 'no email: cy young' }]);
        expect(all('SELECT id FROM stale ORDER BY id')).toEqual([{ id: 99 }]);
        expect(all('SELECT order_id, email, amount FROM order_log ORDER BY order_id')).toEqual([
          { order_id: 10, email: 'ada@x.test', amount: 50.5 },
          { order_id: 12, email: 'bob@x.test', amount: 70 },
        ]);
        expect(all('SELECT customer_id, total FROM big_spenders')).toEqual([{ customer_id: 1, total: 120 }]);
      } finally {
        crm.close();
      }
    },
  );
});
