import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decryptProperty } from '../../../../service/connections/properties-crypto.js';
import { connectPlayedAgent, OpenChannels, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

type Model = Record<string, unknown>;

const FIXTURES = path.join(import.meta.dirname, '../../../fixtures');
const QUERY_CREATE = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'maps/query-create/map.json'), 'utf8')) as Model;
const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';

/** What a save may change by itself: when and by whom, and a Map's revision. */
const STAMPS = new Set([
  'lastModificationDate',
  'lastModificationDateTime',
  'modificationBy',
  'modifiedBy',
  'revision',
  'revisionDate',
  'revisionComment',
  'lastModified',
]);
const unstamped = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(unstamped);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v as Model)
      .filter(([k]) => !STAMPS.has(k))
      .map(([k, x]) => [k, unstamped(x)]),
  );
};

/**
 * Every model the API answers, read and sent back unchanged to its update route (what clients of
 * the original service do: read-only fields, nulls and all), must be taken, and change nothing.
 */
describe.each(STORE_TARGETS)('a model read and sent back unchanged on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  const channels = new OpenChannels();
  const O = () => `/v1/orgs/${svc.orgId}`;
  const ids: Record<string, string> = {};

  const create = async (p: string, body: unknown): Promise<Model> => {
    const res = await svc.request<Model>('POST', p, { body });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  /** GET `read`, send it to `write` as it came, expect 2xx, and the model read again unchanged. */
  const roundTrip = async (read: string, write = read, shown: (m: Model) => unknown = unstamped): Promise<Model> => {
    const before = await svc.request<Model>('GET', read);
    expect(before.status, before.text).toBe(200);
    const sent = await svc.request<Model>('PUT', write, { body: before.body });
    expect(sent.status, `PUT ${write}: ${sent.text}`).toBeLessThan(300);
    const after = await svc.request<Model>('GET', read);
    expect(shown(after.body)).toEqual(shown(before.body));
    return before.body;
  };
  /**
   * A Solution without its status: the status follows prepares, runs and the Agent, which move on
   * their own while the test reads (a created Solution prepares itself), whatever was sent.
   */
  const solutionShown = (m: Model) => unstamped({ ...m, status: undefined });

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    ({ agent } = await connectPlayedAgent(svc, channels, { name: 'Round trip agent' }));
    for (const name of ['Source', 'Target'])
      ids[name] = String((await create(`${O()}/connections`, { name, connectorId: CSV, color: '#FF00FF00' }))['id']);
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it('Organization', async () => {
    await roundTrip(O());
  });

  it('Security Rule', async () => {
    const rule = await create(`${O()}/securityrules`, {
      name: 'office',
      allowedIpRangeStartAddress: '10.0.0.0',
      allowedIpRangeEndAddress: '10.0.0.255',
      apiAccessEnabled: true,
    });
    await roundTrip(`${O()}/securityrules/${String(rule['id'])}`);
  });

  it('Connection', async () => {
    // Property values come encrypted with a fresh IV each time: compared as the text they hold.
    const token = String((await svc.request<Model>('GET', `${O()}/SecuritySettings`)).body['apiCryptoToken']);
    const plain = (m: Model) => {
      const properties = (m['properties'] as Array<{ key: string; value: string }>).map((p) => ({
        key: p.key,
        value: p.value === '' ? '' : decryptProperty(p.value, token),
      }));
      return unstamped({ ...m, properties });
    };
    await roundTrip(`${O()}/connections/${ids['Source']}`, undefined, plain);
  });

  it('Agent', async () => {
    await roundTrip(`${O()}/agents/${agent.agentId}`);
  });

  it('Lookup Table', async () => {
    const table = await create(`${O()}/lookuptables`, {
      name: 'Countries',
      description: 'ISO codes',
      lookupTableValues: [
        { value1: 'NO', value2: 'Norway' },
        { value1: 'DK', value2: null },
      ],
    });
    await roundTrip(`${O()}/lookuptables/${String(table['id'])}`);
  });

  it('Solution (Replication and Integration) and its Schedule', async () => {
    const rs = await create(`${O()}/solutions`, {
      name: 'Copy',
      solutionType: 'Replication',
      agentId: agent.agentId,
      connectionIdForSource: ids['Source'],
      connectionIdForTarget: ids['Target'],
      replicationSettings: { selectionType: 'Selected', entities: ['orders'] },
    });
    await roundTrip(`${O()}/solutions/${String(rs['id'])}`, undefined, solutionShown);
    const is = await create(`${O()}/solutions`, {
      name: 'Integrate',
      solutionType: 'Integration',
      agentId: agent.agentId,
    });
    const S = `${O()}/solutions/${String(is['id'])}`;
    await create(`${S}/maps/advanced`, QUERY_CREATE);
    await roundTrip(S, undefined, solutionShown);
    await roundTrip(`${S}/schedule`);
    const set = await svc.request('PUT', `${S}/schedule`, {
      body: {
        scheduleOption: 'Recurring',
        solutionId: is['id'],
        runOnceOptions: null,
        recurringOptions: {
          days: { daysOption: 'DaysOfWeek', daysOfWeek: ['Monday'] },
          times: { timeOption: 'TimeOfDay', timeOfDay: '6:30' },
          timeZone: 'W. Europe Standard Time',
        },
      },
    });
    expect(set.status, set.text).toBe(200);
    await roundTrip(`${S}/schedule`);
  });

  it('Map: saved as it was read, and validated as it was read', async () => {
    const is = await create(`${O()}/solutions`, {
      name: 'Mapped',
      solutionType: 'Integration',
      agentId: agent.agentId,
    });
    const S = `${O()}/solutions/${String(is['id'])}`;
    const map = await create(`${S}/maps/advanced`, QUERY_CREATE);
    const M = `${S}/maps/${String(map['id'])}`;
    const read = await roundTrip(M, `${S}/maps/advanced/${String(map['id'])}`);
    const validate = await svc.request('POST', `${M}/validate`, { body: read });
    expect(validate.status, validate.text).toBeLessThan(300);
    // A Map saved without a batch size reads back batchSize null, and that too goes back.
    const { batchSize: _, ...noBatch } = QUERY_CREATE;
    const bare = await create(`${S}/maps/advanced`, { ...noBatch, name: 'No batch size' });
    await roundTrip(`${S}/maps/${String(bare['id'])}`, `${S}/maps/advanced/${String(bare['id'])}`);
    // What a .NET client sends for the fields it leaves unset: null, in the Map, its Blocks and their mappings.
    const blocks = (QUERY_CREATE['blocks'] as Model[]).map((b) => ({
      ...b,
      label: null,
      operationName: null,
      relationships: null,
      then: null,
      fieldMappings: Array.isArray(b['fieldMappings'])
        ? (b['fieldMappings'] as Model[]).map((f) => ({ ...f, targetDataType: null }))
        : null,
    }));
    const nulls = await create(`${S}/maps/advanced`, {
      ...QUERY_CREATE,
      name: 'Nulls',
      description: null,
      mapType: null,
      batchSize: null,
      blocks,
    });
    expect(nulls['blocks']).toEqual(QUERY_CREATE['blocks']);
    expect(nulls['batchSize']).toBeNull();
  });
});
