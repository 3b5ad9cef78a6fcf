import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerTestAgent, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface SolutionModel {
  id: string;
  name: string;
  description: string;
  solutionType: string;
  status: string;
  agentId: string;
  connectionIdForSource: string | null;
  connectionIdForTarget: string | null;
  replicationSettings: { selectionType: string; entities: string[] } | null;
  entities: string[];
  checkForBulk: boolean;
  isDisabled: boolean;
  reasonDisabled: number;
  inProgressStartTime: string | null;
  lastRunTime: string | null;
  nextRunTime: string | null;
  minAgentVersion: string | null;
  mapLinks: unknown[];
  creationDate: string;
  lastModificationDate: string;
  modificationBy: string | null;
}
interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}

const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const UNKNOWN = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';

describe.each(STORE_TARGETS)('the Solutions API on $name', (target) => {
  let svc: TestService;
  let S: string;
  let agent: TestAgent;
  let other: TestAgent;
  const conns: string[] = [];
  const db = () => svc.service.store.db;

  const connection = async (name: string): Promise<string> => {
    const res = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/connections`, {
      body: { name, connectorId: CSV, color: '#FF00FF00' },
    });
    expect(res.status).toBe(201);
    return res.body.id;
  };
  const rs = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    solutionType: 'Replication',
    agentId: agent.agentId,
    connectionIdForSource: conns[0],
    connectionIdForTarget: conns[1],
    replicationSettings: { selectionType: 'Selected', entities: ['customers', 'orders'] },
    mapLinks: [],
    ...extra,
  });
  const is = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    solutionType: 'Integration',
    agentId: agent.agentId,
    ...extra,
  });
  const create = async (body: unknown) => {
    const res = await svc.request<SolutionModel>('POST', S, { body });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const count = async () => Number((await svc.request('GET', S)).headers['total-count']);

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    agent = await registerTestAgent(svc, { name: 'Solutions agent' });
    other = await registerTestAgent(svc, { name: 'Other agent' });
    for (const name of ['Source', 'Target', 'Elsewhere']) conns.push(await connection(name));
  });
  afterAll(async () => svc?.close());

  it('creates a Replication Solution: Incomplete, mapLinks [], entities in both forms, Location', async () => {
    const res = await svc.request<SolutionModel>('POST', `${S}?checkForBulk=true`, {
      body: rs('Copy orders', { description: 'nightly copy' }),
    });
    expect(res.status, res.text).toBe(201);
    expect(res.headers.location).toBe(`${S}/${res.body.id}`);
    expect(res.body).toMatchObject({
      name: 'Copy orders',
      description: 'nightly copy',
      solutionType: 'Replication',
      status: 'Incomplete',
      agentId: agent.agentId,
      connectionIdForSource: conns[0],
      connectionIdForTarget: conns[1],
      replicationSettings: { selectionType: 'Selected', entities: ['customers', 'orders'] },
      entities: ['customers', 'orders'],
      checkForBulk: true,
      isDisabled: false,
      reasonDisabled: 0,
      inProgressStartTime: null,
      lastRunTime: null,
      nextRunTime: null,
      mapLinks: [],
      modificationBy: expect.any(String) as string,
    });
    const got = await svc.request<SolutionModel>('GET', `${S}/${res.body.id.toUpperCase()}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('creates Integration Solutions from PascalCase bodies with the type in any case', async () => {
    const res = await svc.request<SolutionModel>('POST', S, {
      body: { Name: 'Sync accounts', SolutionType: 'integration', AgentId: agent.agentId, Description: 'hourly' },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      solutionType: 'Integration',
      status: 'Incomplete',
      connectionIdForSource: null,
      connectionIdForTarget: null,
      replicationSettings: null,
      entities: [],
      checkForBulk: false,
      mapLinks: [],
    });
    // SPEC.md's `entities` selects the entities of a Replication Solution too.
    const spec = await create(
      rs('Copy by entities', { replicationSettings: undefined, entities: ['Customers', 'customers', 'items'] }),
    );
    expect(spec.replicationSettings).toEqual({ selectionType: 'Selected', entities: ['Customers', 'items'] });
    const all = await create(rs('Copy all', { replicationSettings: { selectionType: 'all' } }));
    expect(all.replicationSettings).toEqual({ selectionType: 'All', entities: [] });
  });

  it('refuses bad Solutions with 400 naming the field, and changes nothing', async () => {
    const before = await count();
    const cases: Array<[unknown, string]> = [
      [rs('No source', { connectionIdForSource: null }), 'body.connectionIdForSource'],
      [rs('Unknown target', { connectionIdForTarget: UNKNOWN }), 'body.connectionIdForTarget'],
      [rs('Same twice', { connectionIdForTarget: conns[0] }), 'body.connectionIdForTarget'],
      [rs('No entities', { replicationSettings: null }), 'body.replicationSettings'],
      [
        rs('Empty selection', { replicationSettings: { selectionType: 'Selected', entities: [] } }),
        'body.replicationSettings.entities',
      ],
      [rs('Two selections', { entities: ['other'] }), 'body.entities'],
      [rs('With a Map', { mapLinks: [{ id: 1, index: 0 }] }), 'body.mapLinks'],
      [is('IS with source', { connectionIdForSource: conns[0] }), 'body.connectionIdForSource'],
      [is('IS with entities', { entities: ['x'] }), 'body.entities'],
      [is('Bad type', { solutionType: 'Batch' }), 'body.solutionType'],
      [is('Unknown field', { colour: 'red' }), 'body.colour'],
      [{ solutionType: 'Integration', agentId: agent.agentId }, 'body.name'],
    ];
    for (const [body, path] of cases) {
      const res = await svc.request<Problem>('POST', S, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('API_VALIDATION');
      expect(
        res.body.errors?.map((e) => e.path),
        JSON.stringify(body),
      ).toContain(path);
    }
    const unknownAgent = await svc.request<Problem>('POST', S, { body: is('Unknown agent', { agentId: UNKNOWN }) });
    expect(unknownAgent.status).toBe(404);
    expect(unknownAgent.body.detail).toBe(`Agent ${UNKNOWN} was not found in Organization ${svc.orgId}.`);
    const dup = await svc.request<Problem>('POST', S, { body: is('COPY ORDERS') });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('API_DUPLICATE_NAME');
    expect(await count()).toBe(before);
  });

  it('lists with each filter and sort, paged, with Total-Count', async () => {
    const list = async (query: string) => {
      const res = await svc.request<SolutionModel[]>('GET', `${S}?${query}`);
      expect(res.status, res.text).toBe(200);
      return { names: res.body.map((s) => s.name), total: Number(res.headers['total-count']) };
    };
    expect(await list('')).toEqual({
      names: ['Copy all', 'Copy by entities', 'Copy orders', 'Sync accounts'],
      total: 4,
    });
    expect(await list('limit=2&offset=1')).toEqual({ names: ['Copy by entities', 'Copy orders'], total: 4 });
    expect(await list('solutionNameFilter=COPY%20O')).toEqual({ names: ['Copy orders'], total: 1 });
    expect(await list('SolutionType=integration')).toEqual({ names: ['Sync accounts'], total: 1 });
    expect((await list('sortName=Name&sortOrder=DESC')).names).toEqual([
      'Sync accounts',
      'Copy orders',
      'Copy by entities',
      'Copy all',
    ]);
    expect((await list('sortName=SolutionType')).names).toEqual([
      'Sync accounts',
      'Copy all',
      'Copy by entities',
      'Copy orders',
    ]);
    expect((await list('sortName=type&sortOrder=desc')).names).toEqual([
      'Copy orders',
      'Copy by entities',
      'Copy all',
      'Sync accounts',
    ]);

    // Run times and statuses the runs and prepare will set: written straight to the store here. The
    // next run time follows from the schedule, set through the API.
    const id = async (name: string) =>
      (await db().selectFrom('solutions').select('id').where('name', '=', name).executeTakeFirstOrThrow()).id;
    await db()
      .updateTable('solutions')
      .set({ lastRunTime: '2026-01-02T00:00:00.000Z', prepared: 1 })
      .where('id', '=', await id('Copy all'))
      .execute();
    const scheduled = await svc.request('PUT', `${S}/${await id('Copy all')}/schedule`, {
      body: { scheduleOption: 'RunOnce', runOnceOptions: { dateTime: '2099-1-5T00:00Z' }, recurringOptions: null },
    });
    expect(scheduled.status, scheduled.text).toBe(200);
    await db()
      .updateTable('solutions')
      .set({ lastRunTime: '2026-01-03T00:00:00.000Z', prepared: 1 })
      .where('id', '=', await id('Sync accounts'))
      .execute();
    // Missing times go last in either direction.
    expect((await list('sortName=LastRunTime')).names).toEqual([
      'Copy all',
      'Sync accounts',
      'Copy by entities',
      'Copy orders',
    ]);
    expect((await list('sortName=LastStartTime&sortOrder=desc')).names).toEqual([
      'Sync accounts',
      'Copy all',
      'Copy orders',
      'Copy by entities',
    ]);
    expect((await list('sortName=NextRunTime')).names.slice(0, 1)).toEqual(['Copy all']);

    const disabled = await svc.request<SolutionModel>('GET', `${S}/${await id('Copy by entities')}`);
    const put = await svc.request<SolutionModel>('PUT', `${S}/${disabled.body.id}`, {
      body: { ...disabled.body, isDisabled: true },
    });
    expect(put.body).toMatchObject({ status: 'Disabled', isDisabled: true, reasonDisabled: 1 });
    const statuses = Object.fromEntries(
      (await svc.request<SolutionModel[]>('GET', S)).body.map((s) => [s.name, s.status]),
    );
    expect(statuses).toEqual({
      'Copy all': 'Idle',
      'Copy by entities': 'Disabled',
      'Copy orders': 'Incomplete',
      'Sync accounts': 'OnDemand',
    });
    expect(await list('solutionStatusFilter=incomplete')).toEqual({ names: ['Copy orders'], total: 1 });
    expect(await list('solutionStatusFilter=OnDemand&solutionType=Replication')).toEqual({ names: [], total: 0 });
    expect((await list('sortName=Status')).names).toEqual([
      'Copy by entities',
      'Copy all',
      'Copy orders',
      'Sync accounts',
    ]);
    expect(await list('sortName=status&sortOrder=desc&limit=1&offset=1')).toEqual({ names: ['Copy orders'], total: 4 });

    // The Agent's state shows through on a prepared Solution.
    await db().updateTable('agents').set({ status: 'HeartbeatFailed' }).where('id', '=', agent.agentId).execute();
    expect((await svc.request<SolutionModel>('GET', `${S}/${await id('Sync accounts')}`)).body.status).toBe(
      'AgentHeartbeatFailed',
    );
    await db().updateTable('agents').set({ status: 'Unknown' }).where('id', '=', agent.agentId).execute();

    for (const bad of [
      'sortName=Colour',
      'sortOrder=up',
      'solutionStatusFilter=Happy',
      'solutionType=Batch',
      'limit=1001',
    ]) {
      expect((await svc.request<Problem>('GET', `${S}?${bad}`)).status, bad).toBe(400);
    }
  });

  it('modifies: a model read back with its read-only fields is accepted, and a definition change makes it Incomplete', async () => {
    const made = await create(is('Modify me'));
    await db().updateTable('solutions').set({ prepared: 1 }).where('id', '=', made.id).execute();
    const read = (await svc.request<SolutionModel>('GET', `${S}/${made.id}`)).body;
    expect(read.status).toBe('OnDemand');
    // Sent back as it came, with status null as some clients do, renamed: still prepared.
    const renamed = await svc.request<SolutionModel>('PUT', `${S}/${made.id}`, {
      body: { ...read, status: null, name: 'Modified', description: 'new text', lastRunTime: '2000-01-01T00:00:00Z' },
    });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body).toMatchObject({
      name: 'Modified',
      description: 'new text',
      status: 'OnDemand',
      lastRunTime: null,
      creationDate: made.creationDate,
    });
    // Another Agent changes what runs: Incomplete until prepared again.
    const moved = await svc.request<SolutionModel>('PUT', `${S}/${made.id}`, {
      body: { ...renamed.body, agentId: other.agentId },
    });
    expect(moved.body).toMatchObject({ agentId: other.agentId, status: 'Incomplete' });
  });

  it('takes the copy of the entity selection the client changed when a read model is sent back with one copy edited', async () => {
    const copy = await create(rs('Read-modify-write'));
    const url = `${S}/${copy.id}`;
    expect(copy.entities).toEqual(['customers', 'orders']);
    // replicationSettings.entities edited, the top-level copy echoed as read: the edit wins.
    const edited = await svc.request<SolutionModel>('PUT', url, {
      body: { ...copy, replicationSettings: { selectionType: 'Selected', entities: ['orders', 'items'] } },
    });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body).toMatchObject({
      replicationSettings: { selectionType: 'Selected', entities: ['orders', 'items'] },
      entities: ['orders', 'items'],
    });
    // The top-level copy edited, replicationSettings echoed: that edit wins, as Selected.
    const plain = await svc.request<SolutionModel>('PUT', url, { body: { ...edited.body, entities: ['customers'] } });
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body.replicationSettings).toEqual({ selectionType: 'Selected', entities: ['customers'] });
    // A read All selection (entities []) with the top-level copy filled in selects those entities.
    const all = await svc.request<SolutionModel>('PUT', url, {
      body: { ...plain.body, replicationSettings: { selectionType: 'All' }, entities: null },
    });
    expect(all.body.replicationSettings).toEqual({ selectionType: 'All', entities: [] });
    const picked = await svc.request<SolutionModel>('PUT', url, { body: { ...all.body, entities: ['orders'] } });
    expect(picked.body.replicationSettings).toEqual({ selectionType: 'Selected', entities: ['orders'] });
    // Both copies changed, and differently: which one was meant is unknown.
    const both = await svc.request<Problem>('PUT', url, {
      body: { ...picked.body, replicationSettings: { selectionType: 'Selected', entities: ['a'] }, entities: ['b'] },
    });
    expect(both.status).toBe(400);
    expect(both.body.errors?.map((e) => e.path)).toContain('body.entities');
    expect((await svc.request<SolutionModel>('GET', url)).body.replicationSettings).toEqual({
      selectionType: 'Selected',
      entities: ['orders'],
    });
  });

  it('refuses bad modifications and changes nothing', async () => {
    const copy = await create(rs('Guarded copy'));
    const taken = await create(is('Taken name'));
    const url = `${S}/${copy.id}`;
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [
        { ...copy, connectionIdForSource: conns[2], replicationSettings: null, entities: null },
        400,
        'body.replicationSettings',
      ],
      [
        { ...copy, connectionIdForTarget: conns[2], replicationSettings: undefined, entities: undefined },
        400,
        'body.replicationSettings',
      ],
      [{ ...copy, name: 'TAKEN NAME' }, 409, ''],
      [{ ...copy, colour: 'red' }, 400, 'body.colour'],
      [{ ...copy, solutionType: 'Integration' }, 400, 'body.solutionType'],
      [{ ...copy, mapLinks: [{ id: 7, index: 0, name: 'A Map' }] }, 400, 'body.mapLinks'],
      [{ ...copy, id: taken.id }, 400, 'body.id'],
    ];
    for (const [body, status, path] of cases) {
      const res = await svc.request<Problem>('PUT', url, { body });
      expect(res.status, JSON.stringify(body)).toBe(status);
      if (status === 409) expect(res.body.code).toBe('API_DUPLICATE_NAME');
      else expect(res.body.errors?.map((e) => e.path)).toContain(path);
    }
    expect((await svc.request<SolutionModel>('GET', url)).body).toEqual(copy);
    expect((await svc.request<Problem>('PUT', `${S}/${UNKNOWN}`, { body: copy })).status).toBe(404);

    // With the entities selected again, the new Connection is taken.
    const changed = await svc.request<SolutionModel>('PUT', url, {
      body: {
        ...copy,
        connectionIdForTarget: conns[2],
        replicationSettings: { selectionType: 'Recommended' },
        entities: null,
      },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({
      connectionIdForTarget: conns[2],
      replicationSettings: { selectionType: 'Recommended', entities: [] },
      status: 'Incomplete',
    });
    // Without a Connection change the selection may be left out: it is kept.
    const kept = await svc.request<SolutionModel>('PUT', url, {
      body: {
        name: 'Guarded copy',
        solutionType: 'replication',
        agentId: agent.agentId,
        connectionIdForSource: conns[0],
        connectionIdForTarget: conns[2],
      },
    });
    expect(kept.body.replicationSettings).toEqual({ selectionType: 'Recommended', entities: [] });
  });

  it('refuses to delete an Agent or a Connection a Solution uses, and names the Solutions', async () => {
    const agents = await svc.request<Problem>('DELETE', `/v1/orgs/${svc.orgId}/agents/${agent.agentId}`);
    expect(agents.status).toBe(409);
    expect(agents.body.code).toBe('API_IN_USE');
    expect(agents.body.detail).toContain('Copy orders');
    expect(
      (await svc.request<{ usedInSolutions: string }>('GET', `/v1/orgs/${svc.orgId}/agents/${agent.agentId}`)).body
        .usedInSolutions,
    ).toContain('Copy all, Copy by entities, Copy orders');

    const conn = await svc.request<Problem>('DELETE', `/v1/orgs/${svc.orgId}/connections/${conns[2]}`);
    expect(conn.status).toBe(409);
    expect(conn.body.code).toBe('API_IN_USE');
    expect(conn.body.detail).toContain('Guarded copy');
    expect(
      (await svc.request<{ usedInSolutions: string }>('GET', `/v1/orgs/${svc.orgId}/connections/${conns[2]}`)).body
        .usedInSolutions,
    ).toBe('Guarded copy');
    const unused = await connection('Unused');
    expect(
      (await svc.request<{ usedInSolutions: string }>('GET', `/v1/orgs/${svc.orgId}/connections/${unused}`)).body
        .usedInSolutions,
    ).toBe('');
    expect((await svc.request('DELETE', `/v1/orgs/${svc.orgId}/connections/${unused}`)).status).toBe(204);
  });

  it('deletes a Solution that is not running; a running one is 409', async () => {
    const made = await create(is('Short lived'));
    await db()
      .updateTable('solutions')
      .set({ inProgressStartTime: '2026-01-01T00:00:00.000Z' })
      .where('id', '=', made.id)
      .execute();
    const running = await svc.request<Problem>('DELETE', `${S}/${made.id}`);
    expect(running.status).toBe(409);
    expect(running.body.code).toBe('API_CONFLICT');
    expect(running.body.detail).toContain('is running');
    await db().updateTable('solutions').set({ inProgressStartTime: null }).where('id', '=', made.id).execute();
    expect((await svc.request('DELETE', `${S}/${made.id}`)).status).toBe(204);
    expect((await svc.request<Problem>('GET', `${S}/${made.id}`)).status).toBe(404);
    expect((await svc.request<Problem>('DELETE', `${S}/${made.id}`)).status).toBe(404);
  });

  it('frees the Agent and Connections once their Solutions are gone', async () => {
    const mine = (await svc.request<SolutionModel[]>('GET', S)).body;
    for (const s of mine) expect((await svc.request('DELETE', `${S}/${s.id}`)).status).toBe(204);
    expect((await svc.request('DELETE', `/v1/orgs/${svc.orgId}/connections/${conns[2]}`)).status).toBe(204);
    expect((await svc.request('DELETE', `/v1/orgs/${svc.orgId}/agents/${agent.agentId}`)).status).toBe(204);
  });

  it('lets every role read and only Administrators and Users change', async () => {
    const ro = await addUser(svc, svc.orgId, 'ReadOnly');
    const user = await addUser(svc, svc.orgId, 'User');
    const body = is('By roles', { agentId: other.agentId });
    expect((await svc.request('POST', S, { auth: ro, body })).status).toBe(403);
    const made = await svc.request<SolutionModel>('POST', S, { auth: user, body });
    expect(made.status).toBe(201);
    expect((await svc.request('GET', S, { auth: ro })).status).toBe(200);
    expect((await svc.request('PUT', `${S}/${made.body.id}`, { auth: ro, body })).status).toBe(403);
    expect((await svc.request('DELETE', `${S}/${made.body.id}`, { auth: ro })).status).toBe(403);
    expect((await svc.request('DELETE', `${S}/${made.body.id}`, { auth: user })).status).toBe(204);
  });

  it('deletes an Organization with its Solutions', async () => {
    const child = await svc.request<{ id: number }>('POST', '/v1/orgs', {
      body: {
        name: 'Child with Solutions',
        parentId: svc.orgId,
        securityRules: [
          {
            name: 'lo',
            allowedIpRangeStartAddress: '127.0.0.1',
            allowedIpRangeEndAddress: '127.0.0.1',
            apiAccessEnabled: true,
          },
        ],
      },
    });
    expect(child.status).toBe(201);
    const childAgent = await registerTestAgent(svc, { orgId: child.body.id, name: 'Child agent' });
    const res = await svc.request('POST', `/v1/orgs/${child.body.id}/solutions`, {
      body: is('Child Solution', { agentId: childAgent.agentId }),
    });
    expect(res.status).toBe(201);
    expect((await svc.request('DELETE', `/v1/orgs/${child.body.id}`)).status).toBe(204);
    expect(await db().selectFrom('solutions').select('id').where('orgId', '=', child.body.id).execute()).toEqual([]);
  });
});
