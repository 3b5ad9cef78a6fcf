/**
 * `ferry connections update` and `ferry solutions update` run as real processes against a real
 * Service, with an Agent the test plays: each reads the resource, changes what is given and sends
 * the rest back as it was — a Connection's protected properties included, which the Agent then
 * receives unchanged in a Connection test.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decryptProperty, encryptProperty } from '../../service/connections/properties-crypto.js';
import { connectPlayedAgent, OpenChannels, type TestAgent } from '../helpers/agent-client.js';
import { CLI_SUITE_TIMEOUT_MS, ferry, parse } from '../helpers/cli.js';
import { startService, type TestService } from '../helpers/service.js';
import { STORE_TARGETS } from '../helpers/stores.js';

const POSTGRES = '18cc2a91-e317-4972-9c24-be9fc63775ab';
const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const SECRET = 'Pg-s3cret-kept';

interface ApiConnection {
  id: string;
  name: string;
  alias: string;
  color: string;
  properties: Array<{ key: string; value: string }>;
}

interface Solution {
  id: string;
  name: string;
  description: string;
  solutionType: string;
  status: string;
  agentId: string;
  isDisabled: boolean;
  connectionIdForSource: string | null;
  connectionIdForTarget: string | null;
  replicationSettings: { selectionType: string; entities: string[] } | null;
  checkForBulk: boolean;
  mapLinks: Array<{ id: number; index: number; name: string }>;
}

describe(
  'ferry connections update and ferry solutions update against a real Service',
  { timeout: CLI_SUITE_TIMEOUT_MS },
  () => {
    let svc: TestService;
    let token: string;
    let agent: TestAgent;
    let other: TestAgent;
    const channels = new OpenChannels();
    /** The properties each testConnection command carried, in order. */
    const tested: Array<Record<string, string>> = [];
    const ids: Record<string, string> = {};
    const O = (): string => `/v1/orgs/${svc.orgId}`;

    const connection = async (id: string): Promise<ApiConnection> =>
      (await svc.request<ApiConnection>('GET', `${O()}/connections/${id}`)).body;
    const plain = (c: ApiConnection, key: string): string => {
      const value = c.properties.find((p) => p.key === key)?.value ?? '';
      return value ? decryptProperty(value, token, key) : '';
    };
    /** The properties the Agent receives when the Connection is tested. */
    const testedProperties = async (id: string): Promise<Record<string, string>> => {
      const before = tested.length;
      const res = await svc.request('POST', `${O()}/connections/${id}/test?agentId=${agent.agentId}`);
      expect(res.status, res.text).toBe(200);
      await expect.poll(() => tested.length).toBe(before + 1);
      return tested[before] ?? {};
    };
    const solution = async (id: string): Promise<Solution> =>
      (await svc.request<Solution>('GET', `${O()}/solutions/${id}`)).body;

    beforeAll(async () => {
      svc = await startService(STORE_TARGETS[0] ?? { name: 'sqlite' }, { cloudAgents: 'off' });
      token = (await svc.request<{ apiCryptoToken: string }>('GET', `${O()}/SecuritySettings`)).body.apiCryptoToken;
      const played = async (name: string): Promise<TestAgent> => {
        const { agent: a } = await connectPlayedAgent(svc, channels, {
          name,
          hello: {
            installedConnectors: [
              { connectorId: POSTGRES, version: '1.0.0' },
              { connectorId: CSV, version: '1.0.0' },
            ],
          },
          results: { testConnection: { ok: true } },
          reply: (cmd) => {
            if (cmd['type'] === 'testConnection') tested.push(cmd['properties'] as Record<string, string>);
            return undefined;
          },
        });
        return a;
      };
      agent = await played('Plant 7');
      other = await played('Plant 9');
      const create = async (name: string, connectorId: string, props: Record<string, string>): Promise<void> => {
        const properties = Object.entries(props).map(([key, value]) => ({ key, value: encryptProperty(value, token) }));
        const res = await svc.request<{ id: string }>('POST', `${O()}/connections`, {
          body: { name, connectorId, color: '#FF112233', alias: name.replace(/\W/g, ''), properties },
        });
        expect(res.status, res.text).toBe(201);
        ids[name] = res.body.id;
      };
      await create('Warehouse', POSTGRES, {
        host: 'db1',
        database: 'w',
        user: 'etl',
        password: SECRET,
        schemas: 'public',
      });
      for (const name of ['Shop files', 'Archive files', 'Backup files'])
        await create(name, CSV, { folder: `/data/${name.split(' ')[0]?.toLowerCase() ?? ''}` });
    });
    afterAll(async () => {
      await channels.closeAll();
      await svc?.close();
    });

    it('updates a Connection by name: what is given changes, the rest (its password too) stays as it was', async () => {
      const run = await ferry(svc, [
        'connections',
        'update',
        'Warehouse',
        '--name',
        'Warehouse EU',
        '--set',
        'HOST=db2.eu',
        '--set',
        'schemas=',
        '--color',
        '#FF000000',
      ]);
      expect(run.code, run.stderr).toBe(0);
      const shown = parse<{
        name: string;
        properties: Array<{ key: string; value: string | null; protected: boolean }>;
      }>(run.stdout);
      expect(shown.name).toBe('Warehouse EU');
      expect(shown.properties.find((p) => p.key === 'host')).toEqual({
        key: 'host',
        value: 'db2.eu',
        protected: false,
      });
      expect(shown.properties.find((p) => p.key === 'password')).toEqual({
        key: 'password',
        value: null,
        protected: true,
      });

      const stored = await connection(ids['Warehouse'] as string);
      expect({ name: stored.name, alias: stored.alias, color: stored.color }).toEqual({
        name: 'Warehouse EU',
        alias: 'Warehouse',
        color: '#FF000000',
      });
      expect(['host', 'database', 'user', 'schemas'].map((k) => plain(stored, k))).toEqual(['db2.eu', 'w', 'etl', '']);
      expect(await testedProperties(stored.id)).toMatchObject({ host: 'db2.eu', user: 'etl', password: SECRET });
    });

    it('changes a protected property by its ID, and blanks one with key=', async () => {
      const id = ids['Warehouse'] as string;
      const changed = await ferry(svc, [
        'connections',
        'update',
        id,
        '--set',
        'password=n3w-secret',
        '--alias',
        'WarehouseEU',
      ]);
      expect(changed.code, changed.stderr).toBe(0);
      expect(changed.stdout).not.toContain('n3w-secret');
      expect((await connection(id)).alias).toBe('WarehouseEU');
      expect(await testedProperties(id)).toMatchObject({ host: 'db2.eu', password: 'n3w-secret' });
      const blanked = await ferry(svc, ['connections', 'update', 'warehouse eu', '--set', 'password=']);
      expect(blanked.code, blanked.stderr).toBe(0);
      expect((await testedProperties(id))['password'] ?? '').toBe('');
    });

    it('refuses a property the Connector does not have and an update with nothing to change (exit 2); a Connection it cannot find is exit 1', async () => {
      const typo = await ferry(svc, ['connections', 'update', 'Warehouse EU', '--set', 'hots=db3']);
      expect(typo.code).toBe(2);
      expect(typo.stderr).toMatch(/^ferry: PostgreSQL has no property "hots"; its properties: host, port/);
      const nothing = await ferry(svc, ['connections', 'update', 'Warehouse EU']);
      expect(nothing.code).toBe(2);
      expect(nothing.stderr).toMatch(/^ferry: give what changes/);
      const nowhere = await ferry(svc, ['connections', 'update', 'Nowhere', '--name', 'X']);
      expect(nowhere.code).toBe(1);
      expect(nowhere.stderr).toBe(`ferry: No Connection named "Nowhere" in Organization ${svc.orgId}\n`);
      const gone = await ferry(svc, ['connections', 'update', '00000000-0000-4000-8000-000000000000', '--name', 'X']);
      expect(gone.code).toBe(1);
      expect(gone.stderr).toContain('(API_NOT_FOUND)');
      expect(plain(await connection(ids['Warehouse'] as string), 'host')).toBe('db2.eu');
    });

    it('updates an Integration Solution: name, description and Agent, disabled and enabled again, its Maps reordered', async () => {
      const created = await svc.request<{ id: string }>('POST', `${O()}/solutions`, {
        body: { name: 'Sync accounts', solutionType: 'Integration', agentId: agent.agentId, description: 'hourly' },
      });
      expect(created.status, created.text).toBe(201);
      const S = `${O()}/solutions/${created.body.id}`;
      for (const name of ['First map', 'Second map', 'Third map']) {
        const query = {
          blockId: randomUUID(),
          name: 'Q',
          blockType: 'Query',
          action: 'Query',
          connectionId: ids['Shop files'],
          entity: 'customers',
        };
        const map = await svc.request('POST', `${S}/maps/advanced`, {
          body: { version: '3.0', name, blocks: [query] },
        });
        expect(map.status, map.text).toBe(201);
      }
      const renamed = await ferry(svc, [
        'solutions',
        'update',
        'sync ACCOUNTS',
        '--name',
        'Sync accounts EU',
        '--agent',
        'Plant 9',
        '--disable',
      ]);
      expect(renamed.code, renamed.stderr).toBe(0);
      expect(parse<Solution>(renamed.stdout)).toMatchObject({
        name: 'Sync accounts EU',
        description: 'hourly',
        agentId: other.agentId,
        isDisabled: true,
        status: 'Disabled',
      });

      const reordered = await ferry(svc, [
        'solutions',
        'update',
        'Sync accounts EU',
        '--map-order',
        'third MAP',
        '--enable',
        '--data',
        '{"description": "every two hours"}',
      ]);
      expect(reordered.code, reordered.stderr).toBe(0);
      const after = await solution(created.body.id);
      expect(after).toMatchObject({
        name: 'Sync accounts EU',
        description: 'every two hours',
        agentId: other.agentId,
        isDisabled: false,
      });
      expect([...after.mapLinks].sort((a, b) => a.index - b.index).map((m) => m.name)).toEqual([
        'Third map',
        'First map',
        'Second map',
      ]);

      const wrong = await ferry(svc, ['solutions', 'update', 'Sync accounts EU', '--map-order', 'Fourth map']);
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toContain('has no Map "Fourth map"');
      const rsOnly = await ferry(svc, ['solutions', 'update', 'Sync accounts EU', '--entities', 'a']);
      expect(rsOnly.code).toBe(2);
      expect(rsOnly.stderr).toContain('--entities is for a Replication');
      expect((await ferry(svc, ['solutions', 'update', 'Sync accounts EU'])).code).toBe(2);
    });

    it("updates a Replication's entities and bulk; a new target needs the entities chosen again, as the Service says", async () => {
      const created = await svc.request<{ id: string }>('POST', `${O()}/solutions`, {
        body: {
          name: 'Archive shop',
          solutionType: 'Replication',
          agentId: agent.agentId,
          connectionIdForSource: ids['Shop files'],
          connectionIdForTarget: ids['Archive files'],
          replicationSettings: { selectionType: 'Selected', entities: ['customers'] },
        },
      });
      expect(created.status, created.text).toBe(201);
      const id = created.body.id;
      const entities = await ferry(svc, [
        'solutions',
        'update',
        'Archive shop',
        '--entities',
        'customers, orders',
        '--bulk',
      ]);
      expect(entities.code, entities.stderr).toBe(0);
      expect(await solution(id)).toMatchObject({
        replicationSettings: { selectionType: 'Selected', entities: ['customers', 'orders'] },
        checkForBulk: true,
        connectionIdForTarget: ids['Archive files'],
      });

      const moved = await ferry(svc, ['solutions', 'update', 'Archive shop', '--target', 'Backup files']);
      expect(moved.code).toBe(1);
      expect(moved.stderr).toMatch(/^ferry: 400 .*select the entities to replicate again.*\(API_VALIDATION\)/);
      expect((await solution(id)).connectionIdForTarget).toBe(ids['Archive files']);

      const movedAll = await ferry(svc, [
        'solutions',
        'update',
        id,
        '--target',
        'Backup files',
        '--all',
        '--no-bulk',
        '--description',
        'nightly',
      ]);
      expect(movedAll.code, movedAll.stderr).toBe(0);
      expect(await solution(id)).toMatchObject({
        description: 'nightly',
        connectionIdForSource: ids['Shop files'],
        connectionIdForTarget: ids['Backup files'],
        replicationSettings: { selectionType: 'All', entities: [] },
        checkForBulk: false,
      });
    });
  },
);
