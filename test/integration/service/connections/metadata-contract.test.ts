import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encryptProperty } from '../../../../service/connections/properties-crypto.js';
import { putMetadataCache } from '../../../../service/store/repos/metadata.repo.js';
import { loadMetadataCommand } from '../../../../src/agent/commands/load-metadata.command.js';
import { WorkRegistry } from '../../../../src/agent/work.js';
import { ConnectorHost } from '../../../../src/connectors/host.js';
import type { ConnectionMetadata, Field, Relationship } from '../../../../src/connectors/sdk.js';
import { isFerryError, toErrorData } from '../../../../src/errors/ferry-error.js';
import { ServiceRequest } from '../../../../src/protocol/commands.js';
import { CONNECTORS_DIR } from '../../../connectors/conformance.js';
import { TestChannel, registerTestAgent, until, type Incoming, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
// Importing the store helper applies its rule: in CI (CI=true) a missing FERRY_TEST_DATABASE_URL fails the run.
import { createTestDatabase } from '../../../helpers/stores.js';

/**
 * The metadata contract end to end: what each real plugin reports for a real datastore goes
 * through the Agent's loadMetadata command (plain or packed), the channel, the Service's
 * validation and cache, and comes back from the API with every member the plugin set unchanged.
 * Only the Relationship grouping IDs differ: SPEC.md has them regenerated on every call.
 */

const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const POSTGRES = '18cc2a91-e317-4972-9c24-be9fc63775ab';

const PG_SKIP = process.env['FERRY_TEST_DATABASE_URL']
  ? undefined
  : 'FERRY_TEST_DATABASE_URL is not set: the postgres metadata round trip needs a PostgreSQL server (postgres://…) and is skipped.';
if (PG_SKIP) process.stderr.write(`${PG_SKIP}\n`);

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The SPEC.md Field members no Connector sets: constants in the API model. */
const SPEC_CONSTANTS = {
  presentationType: '',
  minOccurs: 0,
  maxOccurs: 0,
  usedInActionOutput: false,
  usedInQuerySequence: false,
};

interface ApiEntity {
  [key: string]: unknown;
  fullName: string;
  fields: Array<Record<string, unknown>>;
  relationships: Array<Record<string, unknown> & { parentId: string; uniqueId: string }>;
}

const withoutIds = ({ parentId: _p, uniqueId: _u, ...rest }: Partial<Relationship> & Record<string, unknown>) => rest;

describe('Connection metadata from each real plugin, through the Agent, the channel and the Service cache to the API', () => {
  const log = pino({ level: 'silent' });
  const host = new ConnectorHost({ dir: CONNECTORS_DIR, log });
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-md-contract-'));
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let token: string;
  let pgDb: { url: string; drop: () => Promise<void> } | undefined;
  /** Each loadMetadata command the Agent answered, and whether its answer travelled packed. */
  const answered: Array<{ command: Incoming; packed: boolean }> = [];

  beforeAll(async () => {
    await host.loadAll();
    svc = await startService({ name: 'sqlite' }, { cloudAgents: 'off' });
    token = (await svc.request<{ apiCryptoToken: string }>('GET', `/v1/orgs/${svc.orgId}/SecuritySettings`)).body
      .apiCryptoToken;
    agent = await registerTestAgent(svc, { name: 'Contract agent' });
    ch = await TestChannel.connect(svc, agent);
    const installed = [CSV, SQLITE, POSTGRES].map((connectorId) => ({ connectorId, version: '1.0.0' }));
    await ch.hello(agent, { installedConnectors: installed });
    // The Agent's own command handler, on the real plugin host, answers as the Agent does.
    const loadMetadata = loadMetadataCommand({ work: new WorkRegistry(), log, host: async () => host });
    ch.autoReply = (msg) => {
      const parsed = ServiceRequest.safeParse(msg);
      if (!parsed.success || parsed.data.type !== 'loadMetadata') return undefined;
      const command = parsed.data;
      void loadMetadata(command).then(
        (result) => {
          answered.push({ command: msg, packed: 'encoding' in result });
          ch.send({ re: command.id, ok: true, result });
        },
        (err: unknown) =>
          ch.send({
            re: command.id,
            ok: false,
            error: isFerryError(err)
              ? toErrorData(err)
              : { code: 'AGT_INTERNAL', kind: 'system', message: String(err) },
          }),
      );
      return undefined;
    };
  });
  afterAll(async () => {
    await ch?.close();
    await svc?.close();
    await host.close();
    await pgDb?.drop();
    fs.rmSync(folder, { recursive: true, force: true });
  });

  /** A Connection with these (encrypted) properties; its path. */
  const newConnection = async (
    name: string,
    connectorId: string,
    properties: Record<string, string>,
  ): Promise<string> => {
    const body = {
      name,
      connectorId,
      color: '#FF112233',
      properties: Object.entries(properties).map(([key, value]) => ({ key, value: encryptProperty(value, token) })),
    };
    const r = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/connections`, { body });
    expect(r.status).toBe(201);
    return `/v1/orgs/${svc.orgId}/connections/${r.body.id}`;
  };

  /** Polls a POLL operation until the metadata is loaded. */
  const poll = <T>(url: string) =>
    until(
      async () => {
        const r = await svc.request<T>('GET', url);
        return r.status === 404 && (r.body as { code?: string }).code === 'API_METADATA_LOADING' ? undefined : r;
      },
      `${url} to be loaded`,
      30_000,
    );

  /**
   * Loads the Connection's metadata through the API and checks it against what the plugin reported:
   * the document the Agent's host holds for the Connection (the one it sent).
   */
  async function roundTrip(
    name: string,
    connectorId: string,
    properties: Record<string, string>,
  ): Promise<{ conn: string; sent: ConnectionMetadata; packed: boolean }> {
    const conn = await newConnection(name, connectorId, properties);
    const connectionId = conn.split('/').pop() as string;
    const entities = await poll<ApiEntity[]>(`${conn}/entities?expand=true&limit=1000&agentId=${agent.agentId}`);
    expect(entities.status, JSON.stringify(entities.body).slice(0, 500)).toBe(200);
    const answer = answered.find((a) => a.command['connectionId'] === connectionId);
    expect(answer).toBeDefined();
    const opened = await host.open({
      connectorId,
      connectionId,
      properties: (answer?.command['properties'] ?? {}) as Record<string, string>,
    });
    const sent = await opened.metadata();
    await opened.close();

    expect(entities.headers['total-count']).toBe(String(sent.entities.length));
    expect(entities.body.map((e) => e.fullName)).toEqual(sent.entities.map((e) => e.fullName));
    sent.entities.forEach((e, i) => {
      const { fields, relationships, ...head } = e;
      const { fields: apiFields, relationships: apiRelationships, ...apiHead } = entities.body[i] as ApiEntity;
      expect(apiHead, e.fullName).toEqual(head);
      // Every member the plugin set, nativeType, hasDefault and scale included; nothing else but SPEC's constants.
      expect(apiFields, e.fullName).toEqual(fields.map((f) => ({ ...f, ...SPEC_CONSTANTS })));
      expect(apiRelationships.map(withoutIds), e.fullName).toEqual(relationships.map(withoutIds));
      for (const r of apiRelationships) {
        expect(r.parentId).toMatch(GUID);
        expect(r.uniqueId).toMatch(GUID);
      }
    });

    const actions = await svc.request<unknown[]>('GET', `${conn}/actions?limit=1000`);
    expect(actions.status).toBe(200);
    expect(actions.body).toEqual(sent.actions);
    // And one entity's fields read alone, from the cache again.
    const first = sent.entities[0];
    if (first) {
      const fields = await svc.request<unknown[]>(
        'GET',
        `${conn}/entities/${encodeURIComponent(first.fullName)}/fields`,
      );
      expect(fields.body).toEqual(first.fields.map((f) => ({ ...f, ...SPEC_CONSTANTS })));
    }
    return { conn, sent, packed: answer?.packed ?? false };
  }

  /** The fields of a document, to check a fixture gives the members under test values worth checking. */
  const allFields = (md: ConnectionMetadata): Field[] => md.entities.flatMap((e) => e.fields);

  it('csv: files with inferred types and files a schema file describes', async () => {
    const dir = path.join(folder, 'csv');
    fs.mkdirSync(dir);
    fs.writeFileSync(
      path.join(dir, 'people.csv'),
      'id,name,score,born,active\n1,Ann,1.5,1990-01-02,true\n2,Bob,2.25,1985-12-31,false\n',
    );
    fs.writeFileSync(path.join(dir, 'orders.csv'), 'order_no,total,note\n10,12.50,first\n');
    fs.writeFileSync(
      path.join(dir, 'schema.json'),
      JSON.stringify({
        entities: {
          'orders.csv': {
            description: 'orders as exported',
            fields: [
              { name: 'order_no', type: 'integer', primaryKey: true },
              { name: 'total', type: 'decimal', size: 12, description: 'gross' },
              { name: 'note', type: 'string', size: 200 },
            ],
          },
        },
      }),
    );
    const { sent, packed } = await roundTrip('CSV files', CSV, { folder: dir });
    expect(packed).toBe(false);
    expect(sent.entities.map((e) => e.fullName).sort()).toEqual(['orders', 'people']);
    expect(new Set(allFields(sent).map((f) => f.nativeType))).toContain('decimal');
    expect(allFields(sent).some((f) => f.nativeType.endsWith('(inferred)'))).toBe(true);
  });

  it('sqlite: tables with keys, defaults, decimals and foreign keys, and a view', async () => {
    const file = path.join(folder, 'shop.db');
    const db = new SQLite(file);
    db.exec(`
      CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email VARCHAR(200) UNIQUE, joined DATE DEFAULT CURRENT_DATE, credit DECIMAL(10,2) NOT NULL DEFAULT 0);
      CREATE TABLE orders (order_no INTEGER NOT NULL, line INTEGER NOT NULL, customer_id INTEGER REFERENCES customers(id), total NUMERIC(12,3), doc JSON, uid UUID, PRIMARY KEY (order_no, line));
      CREATE TABLE shipments (id INTEGER PRIMARY KEY, order_no INTEGER, line INTEGER, sent DATETIME, FOREIGN KEY (order_no, line) REFERENCES orders (order_no, line));
      CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
    `);
    db.close();
    const { sent, packed } = await roundTrip('SQLite shop', SQLITE, { file });
    expect(packed).toBe(false);
    expect(allFields(sent).some((f) => f.scale !== undefined)).toBe(true);
    expect(allFields(sent).some((f) => f.hasDefault)).toBe(true);
    expect(sent.entities.flatMap((e) => e.relationships.map((r) => r.relationshipType)).sort()).toEqual([
      'ManyToOne',
      'ManyToOne',
      'OneToMany',
      'OneToMany',
    ]);
  });

  it('sqlite: a catalogue too large for one channel message travels packed and arrives whole', async () => {
    const file = path.join(folder, 'wide.db');
    const db = new SQLite(file);
    const columns = Array.from(
      { length: 12 },
      (_, i) => `c${i} ${['TEXT', 'INTEGER NOT NULL DEFAULT 0', 'DECIMAL(14,4)', 'DATETIME', 'REAL'][i % 5]}`,
    ).join(', ');
    db.transaction(() => {
      for (let t = 0; t < 250; t++) {
        const parent = t > 0 ? `, parent_id INTEGER REFERENCES table_${t - 1}(id)` : '';
        db.exec(`CREATE TABLE table_${t} (id INTEGER PRIMARY KEY, ${columns}${parent})`);
      }
    })();
    db.close();
    const { sent, packed } = await roundTrip('SQLite wide', SQLITE, { file });
    expect(packed).toBe(true);
    expect(sent.entities).toHaveLength(250);
    expect(Buffer.byteLength(JSON.stringify(sent))).toBeGreaterThan(1024 * 1024);
  });

  it('serves a document cached before nativeType, hasDefault and scale were kept with their defaults, and loads again one that no longer fits the contract', async () => {
    const file = path.join(folder, 'cached.db');
    const db = new SQLite(file);
    db.exec('CREATE TABLE items (id INTEGER PRIMARY KEY, price DECIMAL(8,2) NOT NULL DEFAULT 0, label TEXT)');
    db.close();
    const { conn, sent } = await roundTrip('SQLite cached', SQLITE, { file });
    const connectionId = conn.split('/').pop() as string;
    const cache = (doc: unknown) =>
      putMetadataCache(svc.service.store.db, {
        connectionId,
        orgId: svc.orgId,
        agentId: agent.agentId,
        metadata: JSON.stringify(doc),
        loadedAt: new Date().toISOString(),
      });
    const loads = answered.length;

    // As the Service stored it before: without the members it did not know.
    await cache(
      JSON.parse(JSON.stringify(sent), (key: string, value: unknown) =>
        ['nativeType', 'hasDefault', 'scale', 'parentId', 'uniqueId'].includes(key) ? undefined : value,
      ),
    );
    const fields = await svc.request<Array<Record<string, unknown>>>('GET', `${conn}/entities/items/fields`);
    expect(fields.status).toBe(200);
    expect(fields.body).toEqual(
      sent.entities[0]?.fields.map(({ scale: _s, ...f }) => ({
        ...f,
        ...SPEC_CONSTANTS,
        nativeType: '',
        hasDefault: false,
      })),
    );
    expect(answered).toHaveLength(loads);

    // A document no Connector of the SDK could send: loaded again (reload), then served whole.
    await cache({
      ...sent,
      entities: sent.entities.map((e) => ({ ...e, fields: e.fields.map((f) => ({ ...f, propertyType: 'Int64' })) })),
    });
    const again = await svc.request<{ code: string }>('GET', `${conn}/entities/items/fields`);
    expect(again.body.code).toBe('API_METADATA_LOADING');
    const reloaded = await poll<Array<Record<string, unknown>>>(`${conn}/entities/items/fields`);
    expect(reloaded.body).toEqual(sent.entities[0]?.fields.map((f) => ({ ...f, ...SPEC_CONSTANTS })));
    expect(answered.slice(loads).map((a) => a.command['reload'])).toEqual([true]);
  });

  it.skipIf(PG_SKIP !== undefined)(
    'postgres: schemas, identities, numerics with scale, composite foreign keys, comments and a view',
    async () => {
      pgDb = await createTestDatabase();
      const c = new pg.Client({ connectionString: pgDb.url });
      await c.connect();
      try {
        await c.query(`
        CREATE SCHEMA sales;
        CREATE TYPE mood AS ENUM ('happy', 'sad');
        CREATE TABLE customers (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "Full Name" text NOT NULL, email varchar(100) UNIQUE, mood mood, doc jsonb, photo bytea, uid uuid, seen timestamptz DEFAULT now(), tags text[]);
        COMMENT ON TABLE customers IS 'people who buy';
        COMMENT ON COLUMN customers.email IS 'where to write';
        CREATE TABLE sales.orders (order_no int, line int, customer_id bigint REFERENCES customers(id), total numeric(12,2) NOT NULL DEFAULT 0, PRIMARY KEY (order_no, line));
        CREATE TABLE sales.shipments (id serial PRIMARY KEY, order_no int, line int, FOREIGN KEY (order_no, line) REFERENCES sales.orders (order_no, line));
        CREATE VIEW sales.big_orders AS SELECT * FROM sales.orders WHERE total > 100;
      `);
      } finally {
        await c.end();
      }
      const { sent, packed } = await roundTrip('PostgreSQL shop', POSTGRES, { connectionString: pgDb.url });
      expect(packed).toBe(false);
      expect(allFields(sent).some((f) => f.scale === 2)).toBe(true);
      expect(allFields(sent).some((f) => f.hasDefault && f.requiredInActionInput === false && !f.nullable)).toBe(true);
      expect(sent.entities.some((e) => e.description === 'people who buy')).toBe(true);
      expect(sent.entities.flatMap((e) => e.relationships)).not.toHaveLength(0);
    },
  );
});
