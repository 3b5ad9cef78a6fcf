import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestChannel, registerTestAgent, until, type Incoming, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Problem {
  code: string;
  detail: string;
}
interface Res<T> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | undefined>;
}

const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const UNKNOWN = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';

const action = (name: string, blockType: string) => ({
  action: name,
  operationName: name,
  blockType,
  supportsBulk: true,
  supportsConstraints: name === 'Query',
  supportsInput: name !== 'Query',
  supportsLookupConditions: name === 'Update',
  supportsRelations: false,
  supportsMultipleRecordOperations: false,
  supportsSequences: false,
});
const field = (fullName: string, ordinal: number, pk = false) => ({
  name: fullName,
  fullName,
  originalName: fullName,
  description: '',
  isPrimaryKey: pk,
  nullable: !pk,
  size: pk ? 8 : 0,
  ordinal,
  propertyType: pk ? 'integer' : 'string',
  nativeType: pk ? 'INTEGER' : 'TEXT',
  hasDefault: pk,
  requiredInActionInput: false,
  usedInLookupCondition: true,
  usedInActionInput: true,
  usedInQueryConstraint: true,
  usedInQuerySelect: true,
});
const QUERY = action('Query', 'Starter');
const CREATE = action('Create', 'Operation');
/** The fixed document the test Agent answers loadMetadata with. */
const METADATA = {
  actions: [QUERY, CREATE],
  entities: [
    {
      id: 'customers',
      name: 'customers',
      fullName: 'customers',
      originalName: 'customers',
      description: 'table',
      isHidden: false,
      actions: [QUERY, CREATE],
      fields: [field('id', 1, true), field('name', 2)],
      relationships: [],
    },
    {
      id: 'orders',
      name: 'Orders',
      fullName: 'Orders',
      originalName: 'Orders',
      description: 'table',
      isHidden: false,
      actions: [QUERY],
      fields: [field('id', 1, true), field('customer_id', 2)],
      relationships: [
        {
          name: 'Orders_customers',
          fullName: 'Orders_customers',
          description: '',
          path: 'Orders.customers',
          thisEntityFullName: 'Orders',
          relatedEntityFullName: 'customers',
          thisProperties: ['customer_id'],
          relatedProperties: ['id'],
          relationshipType: 'ManyToOne',
          parentId: 'x',
          uniqueId: 'y',
        },
      ],
    },
  ],
};

describe.each(STORE_TARGETS)('Connection metadata on $name', (target) => {
  let svc: TestService;
  let C: string;
  let agent: TestAgent;
  let ch: TestChannel;
  const commands: Incoming[] = [];
  /** While set, loadMetadata commands wait for it. */
  let gate: Promise<void> | undefined;
  let failNext: string | undefined;
  /** When set, the next answer travels compressed, as an Agent sends metadata larger than a channel message. */
  let packNext = false;

  /** Polls a POLL operation until it stops answering 404 API_METADATA_LOADING. */
  const poll = <T>(path: string): Promise<Res<T>> =>
    until(async () => {
      const r = await svc.request<T>('GET', path);
      return r.status === 404 && (r.body as unknown as Problem).code === 'API_METADATA_LOADING' ? undefined : r;
    }, `${path} to be ready`);

  const newConnection = async (name: string): Promise<string> => {
    const r = await svc.request<{ id: string }>('POST', C, { body: { name, connectorId: SQLITE, color: '#FF000000' } });
    expect(r.status).toBe(201);
    return `${C}/${r.body.id}`;
  };

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    C = `/v1/orgs/${svc.orgId}/connections`;
    agent = await registerTestAgent(svc, { name: 'Metadata agent' });
    ch = await TestChannel.connect(svc, agent);
    await ch.hello(agent, { installedConnectors: [{ connectorId: SQLITE, version: '1.0.0' }] });
    ch.autoReply = (cmd) => {
      if (cmd['type'] !== 'loadMetadata') return undefined;
      commands.push(cmd);
      const answer = () => {
        if (failNext) {
          const message = failNext;
          failNext = undefined;
          ch.send({ re: cmd['id'], ok: false, error: { code: 'CON_AUTH_FAILED', kind: 'config', message } });
        } else if (packNext) {
          packNext = false;
          ch.send({
            re: cmd['id'],
            ok: true,
            result: { encoding: 'gzip+base64', data: gzipSync(JSON.stringify(METADATA)).toString('base64') },
          });
        } else ch.send({ re: cmd['id'], ok: true, result: METADATA });
      };
      void (gate ?? Promise.resolve()).then(answer);
      return undefined;
    };
  });
  afterAll(async () => {
    await ch?.close();
    await svc?.close();
  });

  it('needs an agentId before the first load, answers 404 while loading, then serves every model from the cache', async () => {
    const conn = await newConnection('Meta');
    const noAgent = await svc.request<Problem>('GET', `${conn}/entities`);
    expect(noAgent.status).toBe(400);
    expect(noAgent.body.code).toBe('API_METADATA_AGENT_REQUIRED');

    let release: (() => void) | undefined;
    gate = new Promise<void>((r) => (release = r));
    const first = await svc.request<Problem>('GET', `${conn}/entities?agentId=${agent.agentId}`);
    expect(first.status).toBe(404);
    expect(first.body).toMatchObject({ code: 'API_METADATA_LOADING', detail: 'Metadata is loading; repeat the call' });
    await until(async () => (commands.length > 0 ? true : undefined), 'the loadMetadata command');
    expect(commands[0]).toMatchObject({
      type: 'loadMetadata',
      connectorId: SQLITE,
      connectionId: conn.split('/').pop(),
      reload: false,
    });
    // Still loading: the same answer, and no second command.
    expect((await svc.request<Problem>('GET', `${conn}/actions`)).body.code).toBe('API_METADATA_LOADING');
    const running = await svc.request<Array<{ state: string; agentId: string; objectName: string }>>(
      'GET',
      `${conn}/metadatarequests`,
    );
    expect(running.body).toEqual([
      expect.objectContaining({ state: 'Requested', agentId: agent.agentId, objectName: 'Meta', endDate: null }),
    ]);
    release?.();
    gate = undefined;

    const entities = await poll<
      Array<{ fullName: string; fields?: Array<Record<string, unknown>>; relationships?: unknown[] }>
    >(`${conn}/entities`);
    expect(entities.status).toBe(200);
    expect(entities.headers['total-count']).toBe('2');
    expect(entities.body.map((e) => e.fullName)).toEqual(['customers', 'Orders']);
    expect(entities.body[0]?.fields?.[0]).toEqual({
      name: 'id',
      fullName: 'id',
      originalName: 'id',
      description: '',
      isPrimaryKey: true,
      nullable: false,
      size: 8,
      ordinal: 1,
      presentationType: '',
      propertyType: 'integer',
      minOccurs: 0,
      maxOccurs: 0,
      requiredInActionInput: false,
      usedInLookupCondition: true,
      usedInActionInput: true,
      usedInQueryConstraint: true,
      usedInQuerySelect: true,
      usedInActionOutput: false,
      usedInQuerySequence: false,
      nativeType: 'INTEGER',
      hasDefault: true,
    });
    expect(commands).toHaveLength(1);
    // The Agent that loaded the metadata is the Connection's lastTestedAgentId.
    expect((await svc.request<{ lastTestedAgentId: string | null }>('GET', conn)).body.lastTestedAgentId).toBe(
      agent.agentId,
    );

    const bare = await svc.request<Array<Record<string, unknown>>>(
      'GET',
      `${conn}/entities?expand=false&limit=1&offset=1`,
    );
    expect(bare.body).toEqual([
      {
        id: 'orders',
        name: 'Orders',
        fullName: 'Orders',
        originalName: 'Orders',
        description: 'table',
        isHidden: false,
        actions: [QUERY],
      },
    ]);
    expect(bare.headers['total-count']).toBe('2');

    expect((await svc.request<string[]>('GET', `${conn}/entitynames`)).body).toEqual(['customers', 'Orders']);
    // Paged as clients page it, until an empty page; the total in Total-Count.
    const page = async (q: string) => svc.request<string[]>('GET', `${conn}/entitynames?${q}`);
    expect((await page('offset=0&limit=1')).body).toEqual(['customers']);
    expect((await page('offset=1&limit=1')).body).toEqual(['Orders']);
    const past = await page('offset=2&limit=1');
    expect(past.body).toEqual([]);
    expect(past.headers['total-count']).toBe('2');
    expect((await page('limit=0')).body).toEqual([]);
    for (const bad of ['limit=1001', 'offset=-1', 'limit=x']) expect((await page(bad)).status, bad).toBe(400);
    const actions = await svc.request<Array<Record<string, unknown>>>(
      'GET',
      `${conn}/actions?expand=true&mapType=IntegrationServicesMap`,
    );
    expect(actions.body).toEqual([
      { ...QUERY, entities: ['customers', 'Orders'] },
      { ...CREATE, entities: ['customers'] },
    ]);
    expect((await svc.request<Problem>('GET', `${conn}/actions?mapType=IntegrationServicesBasicMap`)).status).toBe(400);
    const supported = await svc.request<{
      actions: unknown[];
      entities: Array<{ fullName: string; fields?: unknown }>;
    }>('GET', `${conn}/supportedactions`);
    expect(supported.body.actions).toEqual([QUERY, CREATE]);
    expect(supported.body.entities.map((e) => [e.fullName, e.fields])).toEqual([
      ['customers', undefined],
      ['Orders', undefined],
    ]);

    const one = await svc.request<{ fullName: string; fields: unknown[]; relationships: unknown[] }>(
      'GET',
      `${conn}/entities/ORDERS`,
    );
    expect(one.status).toBe(200);
    expect(one.body.fullName).toBe('Orders');
    expect(one.body.fields).toHaveLength(2);
    expect((await svc.request<{ fullName: string }>('GET', `${conn}/entities/customers`)).body.fullName).toBe(
      'customers',
    );
    expect((await svc.request<Problem>('GET', `${conn}/entities/nope`)).status).toBe(404);
    const fields = await svc.request<Array<{ fullName: string }>>('GET', `${conn}/entities/orders/fields`);
    expect(fields.body.map((f) => f.fullName)).toEqual(['id', 'customer_id']);

    const rels = await svc.request<Array<Record<string, unknown>>>('GET', `${conn}/entities/Orders/relationships`);
    expect(rels.body).toEqual([
      expect.objectContaining({
        path: 'Orders.customers',
        thisEntityFullName: 'Orders',
        relatedEntityFullName: 'customers',
        thisProperties: ['customer_id'],
        relatedProperties: ['id'],
        relationshipType: 'ManyToOne',
      }),
    ]);
    const again = await svc.request<Array<{ uniqueId: string }>>(
      'GET',
      `${conn}/entities/Orders/relationships?nestedPropertyRelations=10`,
    );
    expect(again.status).toBe(200);
    expect(again.body[0]?.uniqueId).not.toBe(rels.body[0]?.['uniqueId']);
    expect(
      (await svc.request<Problem>('GET', `${conn}/entities/Orders/relationships?nestedPropertyRelations=11`)).status,
    ).toBe(400);
    expect(
      (await svc.request<Problem>('GET', `${conn}/entities/Orders/relationships?nestedPropertyRelations=-1`)).status,
    ).toBe(400);

    const done = await svc.request<Array<{ state: string; endDate: string | null; objectDefinitionId: string }>>(
      'GET',
      `${conn}/metadatarequests`,
    );
    expect(done.body).toEqual([
      expect.objectContaining({ state: 'Completed', errorMessage: null, objectDefinitionId: conn.split('/').pop() }),
    ]);
    expect(done.body[0]?.endDate).not.toBeNull();
  });

  it('POST …/reset drops the cache as DELETE …/metadata does', async () => {
    const conn = await newConnection('Reset alias');
    expect((await poll<unknown[]>(`${conn}/entitynames?agentId=${agent.agentId}`)).status).toBe(200);
    const ro = await addUser(svc, svc.orgId, 'ReadOnly');
    expect((await svc.request<Problem>('POST', `${conn}/reset`, { auth: ro })).status).toBe(403);
    expect((await svc.request('POST', `${conn}/reset`)).status).toBe(204);
    expect((await svc.request<Problem>('GET', `${conn}/entitynames`)).body.code).toBe('API_METADATA_LOADING');
    expect((await poll<string[]>(`${conn}/entitynames`)).body).toEqual(['customers', 'Orders']);
    expect((await svc.request<Problem>('POST', `${C}/${UNKNOWN}/reset`)).status).toBe(404);
  });

  it('reset drops the cache; the next call reloads on the same Agent without agentId; a failure is answered once', async () => {
    const conn = await newConnection('Reset');
    expect((await poll<unknown[]>(`${conn}/entitynames?agentId=${agent.agentId}`)).status).toBe(200);
    const before = commands.length;

    const ro = await addUser(svc, svc.orgId, 'ReadOnly');
    expect((await svc.request('GET', `${conn}/entitynames`, { auth: ro })).status).toBe(200);
    expect((await svc.request<Problem>('DELETE', `${conn}/metadata`, { auth: ro })).status).toBe(403);
    const user = await addUser(svc, svc.orgId, 'User');
    expect((await svc.request('DELETE', `${conn}/metadata`, { auth: user })).status).toBe(204);

    failNext = 'bad password';
    expect((await svc.request<Problem>('GET', `${conn}/entitynames`)).body.code).toBe('API_METADATA_LOADING');
    const failed = await until(async () => {
      const r = await svc.request<Problem>('GET', `${conn}/entitynames`);
      return r.status === 502 ? r : undefined;
    }, 'the failure');
    expect(failed.body).toMatchObject({ code: 'API_METADATA_LOAD_FAILED' });
    expect(failed.body.detail).toContain('CON_AUTH_FAILED: bad password');
    expect(commands[before]).toMatchObject({ type: 'loadMetadata', reload: true });

    // The next call starts again, and this time the load succeeds.
    const names = await poll<string[]>(`${conn}/entitynames`);
    expect(names.body).toEqual(['customers', 'Orders']);
    const reqs = await svc.request<Array<{ state: string; errorMessage: string | null }>>(
      'GET',
      `${conn}/metadatarequests?limit=2`,
    );
    expect(reqs.body.map((r) => r.state)).toEqual(['Completed', 'Failed']);
    expect(reqs.headers['total-count']).toBe('3');
  });

  it('accepts metadata the Agent sent compressed', async () => {
    const conn = await newConnection('Packed');
    packNext = true;
    const names = await poll<string[]>(`${conn}/entitynames?agentId=${agent.agentId}`);
    expect(names.body).toEqual(['customers', 'Orders']);
    expect(packNext).toBe(false);
    expect(
      (await svc.request<Array<{ fullName: string }>>('GET', `${conn}/entities/Orders/fields`)).body.map(
        (f) => f.fullName,
      ),
    ).toEqual(['id', 'customer_id']);
  });

  it('refuses an unknown Connection or Agent, and an Agent that is not connected', async () => {
    const conn = await newConnection('Offline');
    expect((await svc.request<Problem>('GET', `${C}/${UNKNOWN}/entities?agentId=${agent.agentId}`)).status).toBe(404);
    expect((await svc.request<Problem>('GET', `${conn}/entities?agentId=${UNKNOWN}`)).status).toBe(404);
    const offline = await registerTestAgent(svc, { name: 'Offline' });
    expect((await svc.request<Problem>('GET', `${conn}/entities?agentId=${offline.agentId}`)).body.code).toBe(
      'AGT_NOT_CONNECTED',
    );
    expect((await svc.request<Problem>('GET', `${conn}/entities?agentId=not-a-guid`)).status).toBe(400);
    expect((await svc.request<Problem>('DELETE', `${C}/${UNKNOWN}/metadata`)).status).toBe(404);
  });
});
