import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerTestAgent, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface MapModel {
  id: number;
  name: string;
  mapType: string;
  version: string;
  revision: number;
  revisionComment: string;
  valid: boolean;
  lastRunDate: string | null;
  netChange: boolean;
  netChangeFieldName: string | null;
  startingBlockId: string | null;
  sourceConnectionId: string | null;
  targetConnections: Array<{ connectionId: string }>;
  blocks: Array<{ name: string; blockType: string; fieldMappings?: unknown[] }>;
}
interface MapLink {
  id: number;
  index: number;
  name: string;
  enabled: boolean;
  valid: boolean;
  mapType: string;
  sources: string[];
  targets: string[];
}
interface Solution {
  id: string;
  status: string;
  name: string;
  solutionType: string;
  agentId: string;
  mapLinks: MapLink[];
}
interface Problem {
  code: string;
  errors?: Array<{ path: string; message: string }>;
}

const FIXTURES = path.join(import.meta.dirname, '../../../fixtures');
const readJson = (p: string): Record<string, unknown> =>
  JSON.parse(fs.readFileSync(path.join(FIXTURES, p), 'utf8')) as Record<string, unknown>;
const QUERY_CREATE = readJson('maps/query-create/map.json');
const EXPORT_25 = readJson('maps-2.5/accounts-export.json');
const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';

describe.each(STORE_TARGETS)('the Maps of a Solution on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let S: string;
  let solution: Solution;
  let M: string;

  const createSolution = async (body: Record<string, unknown>): Promise<Solution> => {
    const res = await svc.request<Solution>('POST', S, { body });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const getSolution = async (id = solution.id) => (await svc.request<Solution>('GET', `${S}/${id}`)).body;
  /** Marks the Solution prepared, as prepare will, so that a change shows as Incomplete again. */
  const markPrepared = async (id = solution.id) => {
    await svc.service.store.db.updateTable('solutions').set({ prepared: 1 }).where('id', '=', id).execute();
    expect((await getSolution(id)).status).not.toBe('Incomplete');
  };
  const createMap = async (body: unknown, query = ''): Promise<MapModel> => {
    const res = await svc.request<MapModel>('POST', `${M}/advanced${query}`, { body });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const putSolution = (links: unknown) =>
    svc.request<Solution | Problem>('PUT', `${S}/${solution.id}`, {
      body: { name: solution.name, solutionType: solution.solutionType, agentId: solution.agentId, mapLinks: links },
    });
  const mapCount = async () => Number((await svc.request('GET', M)).headers['total-count']);

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    agent = await registerTestAgent(svc, { name: 'Maps agent' });
    solution = await createSolution({ name: 'Integrate', solutionType: 'Integration', agentId: agent.agentId });
    M = `${S}/${solution.id}/maps`;
  });
  afterAll(async () => svc?.close());

  let first: MapModel;
  let second: MapModel;

  it('creates a Map: revision 1 "Initial Revision", lastRunDate null, Location, the Solution Incomplete', async () => {
    await markPrepared();
    const res = await svc.request<MapModel>('POST', `${M}/advanced`, { body: QUERY_CREATE });
    expect(res.status, res.text).toBe(201);
    first = res.body;
    expect(res.headers['location']).toBe(`${M}/${first.id}`);
    expect(Number.isInteger(first.id)).toBe(true);
    expect(first).toMatchObject({
      name: 'People to contacts',
      mapType: 'IntegrationServicesAdvancedMap',
      version: '3.0',
      revision: 1,
      revisionComment: 'Initial Revision',
      valid: false,
      lastRunDate: null,
      netChange: true,
      netChangeFieldName: 'updated_at',
      startingBlockId: '11111111-1111-4111-8111-000000000001',
      sourceConnectionId: 'src',
      targetConnections: [{ connectionId: 'db' }],
    });
    expect(first.blocks.map((b) => b.name)).toEqual(['Q', 'CreateContact']);
    expect((await getSolution()).status).toBe('Incomplete');
  });

  it('each save is a new revision with its comment (query or body); GET reads any revision', async () => {
    await markPrepared();
    const renamed = { ...QUERY_CREATE, name: 'People v2' };
    const r2 = await svc.request<MapModel>(
      'PUT',
      `${M}/advanced/${first.id}?comment=${encodeURIComponent('second save')}&unlockMap=true&validateMap=false`,
      { body: renamed },
    );
    expect(r2.status, r2.text).toBe(200);
    expect(r2.body).toMatchObject({ id: first.id, name: 'People v2', revision: 2, revisionComment: 'second save' });
    expect((await getSolution()).status).toBe('Incomplete');
    const r3 = await svc.request<MapModel>('PUT', `${M}/advanced/${first.id}`, {
      body: { ...renamed, name: 'People v3', comment: 'from the body' },
    });
    expect(r3.body).toMatchObject({ revision: 3, name: 'People v3', revisionComment: 'from the body' });

    expect((await svc.request<MapModel>('GET', `${M}/${first.id}`)).body).toMatchObject({
      revision: 3,
      name: 'People v3',
    });
    expect((await svc.request<MapModel>('GET', `${M}/${first.id}?revision=1`)).body).toMatchObject({
      revision: 1,
      name: 'People to contacts',
      revisionComment: 'Initial Revision',
    });
    expect((await svc.request<MapModel>('GET', `${M}/${first.id}?revision=2`)).body).toMatchObject({
      revision: 2,
      name: 'People v2',
    });
    const missing = await svc.request<Problem>('GET', `${M}/${first.id}?revision=9`);
    expect(missing.status).toBe(404);
  });

  it('upgrades a 2.5 model on save', async () => {
    second = await createMap(EXPORT_25, '?comment=imported');
    expect(second).toMatchObject({
      name: 'Accounts to CRM',
      version: '3.0',
      revision: 1,
      revisionComment: 'imported',
      mapType: 'IntegrationServicesAdvancedMap',
      netChange: true,
      netChangeFieldName: 'modified_on',
    });
    expect(second.id).toBeGreaterThan(first.id);
    expect(second.blocks[0]).toMatchObject({ name: 'Query_Account', blockType: 'Query' });
  });

  it('lists the Maps in run order, paged, filtered by name', async () => {
    const all = await svc.request<MapModel[]>('GET', M);
    expect(all.headers['total-count']).toBe('2');
    expect(all.body.map((m) => m.id)).toEqual([first.id, second.id]);
    const page = await svc.request<MapModel[]>('GET', `${M}?limit=1&offset=1`);
    expect(page.body.map((m) => m.id)).toEqual([second.id]);
    expect(page.headers['total-count']).toBe('2');
    const named = await svc.request<MapModel[]>('GET', `${M}?name=ACCOUNTS`);
    expect(named.body.map((m) => m.id)).toEqual([second.id]);
  });

  it("answers the map link and fills the Solution's mapLinks", async () => {
    const link = await svc.request<MapLink>('GET', `${S}/${solution.id}/maplinks/${first.id}`);
    expect(link.status).toBe(200);
    expect(link.body).toMatchObject({
      id: first.id,
      index: 0,
      name: 'People v3',
      enabled: true,
      valid: false,
      mapType: 'IntegrationServicesAdvancedMap',
      sources: ['src'],
      targets: ['db'],
      lockedBy: null,
      eventUrl: null,
    });
    expect((await getSolution()).mapLinks.map((l) => [l.id, l.index])).toEqual([
      [first.id, 0],
      [second.id, 1],
    ]);
  });

  it('reorders the Maps by a Solution PUT, and makes the Solution Incomplete', async () => {
    await markPrepared();
    const res = await putSolution([
      { id: first.id, index: 1, name: 'ignored' },
      { id: second.id, index: 0 },
    ]);
    expect(res.status, res.text).toBe(200);
    expect((res.body as Solution).mapLinks.map((l) => [l.id, l.index])).toEqual([
      [second.id, 0],
      [first.id, 1],
    ]);
    expect((res.body as Solution).status).toBe('Incomplete');
    expect((await svc.request<MapModel[]>('GET', M)).body.map((m) => m.id)).toEqual([second.id, first.id]);
    // The same order sent back changes nothing.
    await markPrepared();
    const same = await putSolution((res.body as Solution).mapLinks);
    expect(same.status).toBe(200);
    expect((same.body as Solution).status).not.toBe('Incomplete');
    // Without mapLinks the order stays.
    expect((await putSolution(undefined)).status).toBe(200);
    expect((await getSolution()).mapLinks.map((l) => l.id)).toEqual([second.id, first.id]);
  });

  it('refuses a Solution PUT that adds, removes or repeats Maps (400 naming mapLinks, nothing changes)', async () => {
    for (const links of [
      [{ id: second.id, index: 0 }],
      [],
      [
        { id: second.id, index: 0 },
        { id: first.id, index: 1 },
        { id: 999_999, index: 2 },
      ],
      [
        { id: second.id, index: 0 },
        { id: second.id, index: 1 },
      ],
      [{ index: 0 }, { id: first.id, index: 1 }],
    ]) {
      const res = await putSolution(links);
      expect(res.status, JSON.stringify(links)).toBe(400);
      expect((res.body as Problem).errors?.[0]?.path).toBe('body.mapLinks');
    }
    expect((await getSolution()).mapLinks.map((l) => [l.id, l.index])).toEqual([
      [second.id, 0],
      [first.id, 1],
    ]);
  });

  it('refuses bad bodies with 400 and changes nothing', async () => {
    const before = await mapCount();
    const bodies: unknown[] = [
      {},
      { version: '3.0', name: 'No blocks', blocks: [] },
      { ...QUERY_CREATE, mapType: 'IntegrationServicesBasicMap' },
      { ...QUERY_CREATE, mapType: 'SysControllerMap' },
      { ...QUERY_CREATE, version: '9.0' },
      { ...QUERY_CREATE, blocks: [{ name: 'no id' }] },
      [QUERY_CREATE],
    ];
    for (const body of bodies) {
      const res = await svc.request<Problem>('POST', `${M}/advanced`, { body });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      const put = await svc.request<Problem>('PUT', `${M}/advanced/${first.id}`, { body });
      expect(put.status).toBe(400);
    }
    expect(await mapCount()).toBe(before);
    expect((await svc.request<MapModel>('GET', `${M}/${first.id}`)).body.revision).toBe(3);
  });

  it('answers 404 for a Map of another Solution or none', async () => {
    const other = await createSolution({ name: 'Other', solutionType: 'Migration', agentId: agent.agentId });
    expect((await svc.request('GET', `${S}/${other.id}/maps/${first.id}`)).status).toBe(404);
    expect((await svc.request('GET', `${S}/${other.id}/maplinks/${first.id}`)).status).toBe(404);
    expect(
      (await svc.request('PUT', `${S}/${other.id}/maps/advanced/${first.id}`, { body: QUERY_CREATE })).status,
    ).toBe(404);
    expect((await svc.request('DELETE', `${S}/${other.id}/maps/${first.id}`)).status).toBe(404);
    expect((await svc.request('GET', `${M}/123456789`)).status).toBe(404);
  });

  it('refuses Maps in a Replication Solution, whose mapLinks stay []', async () => {
    const conns: string[] = [];
    for (const name of ['Source', 'Target']) {
      const res = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/connections`, {
        body: { name, connectorId: CSV, color: '#FF00FF00' },
      });
      conns.push(res.body.id);
    }
    const rs = await createSolution({
      name: 'Copy',
      solutionType: 'Replication',
      agentId: agent.agentId,
      connectionIdForSource: conns[0],
      connectionIdForTarget: conns[1],
      replicationSettings: { selectionType: 'All' },
    });
    const res = await svc.request<Problem>('POST', `${S}/${rs.id}/maps/advanced`, { body: QUERY_CREATE });
    expect(res.status).toBe(400);
    expect((await svc.request('GET', `${S}/${rs.id}/maps`)).headers['total-count']).toBe('0');
    expect((await getSolution(rs.id)).mapLinks).toEqual([]);
  });

  it('deletes a Map: its revisions go, the rest move up, the Solution is Incomplete', async () => {
    await markPrepared();
    const res = await svc.request('DELETE', `${M}/${second.id}`);
    expect(res.status).toBe(204);
    expect((await svc.request('GET', `${M}/${second.id}`)).status).toBe(404);
    const s = await getSolution();
    expect(s.status).toBe('Incomplete');
    expect(s.mapLinks.map((l) => [l.id, l.index])).toEqual([[first.id, 0]]);
    const revisions = await svc.service.store.db
      .selectFrom('mapRevisions')
      .select('revision')
      .where('mapId', '=', second.id)
      .execute();
    expect(revisions).toEqual([]);
    // A new Map gets a new ID: IDs are never reused.
    const again = await createMap(QUERY_CREATE);
    expect(again.id).toBeGreaterThan(second.id);
  });

  it('answers saves of one Map at once with a revision each or 409, never a lost or doubled revision', async () => {
    const own = await createMap({ ...QUERY_CREATE, name: 'Saved at once' });
    const before = own.revision;
    const saves = await Promise.all(
      ['A', 'B', 'C', 'D'].map((n) =>
        svc.request<MapModel | Problem>('PUT', `${M}/advanced/${own.id}`, {
          body: { ...QUERY_CREATE, name: `People ${n}` },
        }),
      ),
    );
    for (const s of saves) expect([200, 409], s.text).toContain(s.status);
    const saved = saves.filter((s) => s.status === 200).map((s) => (s.body as MapModel).revision);
    expect(saved.length).toBeGreaterThan(0);
    expect([...saved].sort((a, b) => a - b)).toEqual(saved.map((_, i) => before + 1 + i));
    for (const s of saves.filter((x) => x.status === 409)) expect((s.body as Problem).code).toBe('API_CONFLICT');
    expect((await svc.request<MapModel>('GET', `${M}/${own.id}`)).body.revision).toBe(before + saved.length);
  });

  it('deleting the Solution deletes its Maps', async () => {
    const del = await svc.request('DELETE', `${S}/${solution.id}`);
    expect(del.status).toBe(204);
    const left = await svc.service.store.db
      .selectFrom('maps')
      .select('id')
      .where('solutionId', '=', solution.id)
      .execute();
    expect(left).toEqual([]);
  });
});
