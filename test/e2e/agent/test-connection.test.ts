import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encryptProperty } from '../../../service/connections/properties-crypto.js';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { ferry, install, killAll, serviceUnderTest, until, untilStatus, type ServiceUnderTest } from './harness.js';
import { BUILT_IN_CONNECTORS } from '../../helpers/built-in-connectors.js';

const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const POSTGRES = '18cc2a91-e317-4972-9c24-be9fc63775ab';
const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');

interface Installed {
  installedConnectors: Array<{ connectorId: string; version: string }>;
}

/**
 * The operator's path through the API alone, against a real Agent process: the Agent receives the
 * Organization's Connectors (download, SHA-256, load), a Connection is tested, and — against a real
 * PostgreSQL database — its entities, fields and relationships are browsed; then a Connector is
 * uninstalled and installed again.
 */
describe('Connectors installed on a real Agent process, Connections tested and browsed through it', () => {
  let sut: ServiceUnderTest;
  let home: string;
  let agent: { agentId: string; dir: string };
  let db: { url: string; drop: () => Promise<void> } | undefined;
  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    home = path.join(sut.dataDir, 'agents');
    agent = await install(sut, home);
    if (HAS_PG) {
      db = await createTestDatabase();
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      await c.query(`CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, joined date);
                     CREATE TABLE orders (id bigint PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers(id), total numeric(12,2));`);
      await c.end();
    }
  }, 60_000);
  afterEach(() => killAll());
  afterAll(async () => {
    killAll();
    await sut.dispose();
    await db?.drop();
  });

  const installedOnAgent = async () =>
    (await sut.request<Installed>('GET', `/v1/orgs/${sut.orgId}/agents/${agent.agentId}`)).body.installedConnectors
      .map((c) => c.connectorId.toLowerCase())
      .sort();

  it(
    "installs the Organization's Connectors on the Agent, tests Connections, browses a PostgreSQL database, uninstalls and installs again",
    { timeout: 180_000 },
    async () => {
      const run = ferry(['agent', 'run', '--home', home]);
      await untilStatus(sut, agent.agentId, 'Running');
      // The Agent starts with no plugins; the Service sends the Organization's built-in ones.
      await until(
        'the built-in connectors on the Agent',
        async () => ((await installedOnAgent()).length === BUILT_IN_CONNECTORS ? true : undefined),
        90_000,
      );
      const folders = fs
        .readdirSync(path.join(agent.dir, 'connectors'))
        .filter((f) => !f.startsWith('.') && f !== 'node_modules');
      expect(folders.map((f) => f.replace(/-[0-9a-f]{6}$/, '')).sort()).toEqual([
        'csv-1.0.0',
        'http-json-api-1.0.0',
        'mariadb-1.0.0',
        'nats-jetstream-1.0.0',
        'postgresql-1.0.0',
        'rabbitmq-1.0.0',
        'sqlite-1.0.0',
      ]);
      const market = await sut.request<
        Array<{ adapterTypeId: string; agentInstallStatuses: Array<{ agentId: string; status: string }> }>
      >('GET', `/v1/marketplace/connectors?orgId=${sut.orgId}`);
      for (const m of market.body)
        expect(m.agentInstallStatuses.find((s) => s.agentId === agent.agentId)?.status).toBe('Installed');

      const token = (await sut.request<{ apiCryptoToken: string }>('GET', `/v1/orgs/${sut.orgId}/SecuritySettings`))
        .body.apiCryptoToken;
      const C = `/v1/orgs/${sut.orgId}/connections`;
      const result = async (commandId: string) =>
        until('the test result', async () => {
          const res = await sut.request<{ status: string; reply: string; name: string }>(
            'GET',
            `${C}/test/${commandId}`,
          );
          return res.body.status === 'Completed' ? res.body : undefined;
        });

      const csv = await sut.request<{ id: string }>('POST', C, {
        body: {
          name: 'Local CSV',
          connectorId: CSV,
          color: '#FF112233',
          properties: [{ key: 'folder', value: encryptProperty(sut.dataDir, token) }],
        },
      });
      expect(csv.status).toBe(201);
      const ok = await sut.request<{ commandId: string }>('POST', `${C}/${csv.body.id}/test?agentId=${agent.agentId}`);
      expect(await result(ok.body.commandId)).toMatchObject({ name: 'Local CSV', reply: 'SUCCESS' });
      const bad = await sut.request<{ commandId: string }>('POST', `${C}/test?agentId=${agent.agentId}`, {
        body: {
          name: 'Missing',
          connectorId: CSV,
          color: '#FF112233',
          properties: [{ key: 'folder', value: encryptProperty(path.join(sut.dataDir, 'nope'), token) }],
        },
      });
      const failed = await result(bad.body.commandId);
      expect(failed.reply).not.toBe('SUCCESS');
      expect(failed.reply).toContain('nope');

      if (db) {
        const pgConn = await sut.request<{ id: string }>('POST', C, {
          body: {
            name: 'Shop DB',
            connectorId: POSTGRES,
            color: '#FF445566',
            properties: [
              { key: 'connectionString', value: encryptProperty(db.url, token) },
              { key: 'schemas', value: encryptProperty('public', token) },
            ],
          },
        });
        expect(pgConn.status).toBe(201);
        const tested = await sut.request<{ commandId: string }>(
          'POST',
          `${C}/${pgConn.body.id}/test?agentId=${agent.agentId}`,
        );
        expect((await result(tested.body.commandId)).reply).toBe('SUCCESS');
        const M = `${C}/${pgConn.body.id}`;
        // SPEC's POLL rule: 404 while the Agent loads, then the data.
        const names = await until('the entity names', async () => {
          const res = await sut.request<string[]>('GET', `${M}/entitynames?agentId=${agent.agentId}`);
          return res.status === 200 ? res.body : undefined;
        });
        expect([...names].sort()).toEqual(['customers', 'orders']);
        const fields = await sut.request<Array<{ fullName: string; isPrimaryKey: boolean; nativeType: string }>>(
          'GET',
          `${M}/entities/orders/fields`,
        );
        expect(fields.status).toBe(200);
        expect(fields.body.map((f) => f.fullName)).toEqual(['id', 'customer_id', 'total']);
        expect(fields.body.find((f) => f.fullName === 'id')).toMatchObject({ isPrimaryKey: true });
        const rels = await sut.request<
          Array<{
            fullName: string;
            relatedEntityFullName?: string;
            parentEntityFullName?: string;
            childEntityFullName?: string;
          }>
        >('GET', `${M}/entities/orders/relationships`);
        expect(rels.status).toBe(200);
        expect(JSON.stringify(rels.body)).toContain('customers');
        const entity = await sut.request<{ fullName: string }>('GET', `${M}/entities/customers`);
        expect(entity.body.fullName).toBe('customers');
      }

      // Uninstalled from the Organization: gone from the Agent; installed again: back.
      expect((await sut.request('DELETE', `${C}/${csv.body.id}`)).status).toBe(204);
      expect((await sut.request('DELETE', `/v1/orgs/${sut.orgId}/connectors/${CSV}/delete`)).status).toBe(204);
      await until('CSV removed from the Agent', async () =>
        !(await installedOnAgent()).includes(CSV) ? true : undefined,
      );
      expect(fs.readdirSync(path.join(agent.dir, 'connectors')).some((f) => f.startsWith('csv-'))).toBe(false);
      expect((await sut.request('POST', `/v1/orgs/${sut.orgId}/connectors/${CSV}/install`)).status).toBe(200);
      await until('CSV back on the Agent', async () => ((await installedOnAgent()).includes(CSV) ? true : undefined));
      expect(await run.stop()).toBe(0);
    },
  );
});
