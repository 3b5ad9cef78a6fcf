import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MapModel, walkBlocks, type Block } from '../../../../src/protocol/map.js';
import { registerTestAgent, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface MapAnswer {
  id: number;
  name: string;
  description: string;
  mapType: string;
  version: string;
  revision: number;
  revisionComment: string;
  batchSize: number | null;
  lastRunDate: string | null;
  sourceConnectionId: string | null;
  sourceConnectionName: string | null;
  targetConnections: Array<{
    connectionId: string;
    connectionName: string | null;
    connectionAlias: string | null;
    connectionType: string | null;
  }>;
  blocks: Block[];
}
interface ImportAnswer {
  maps: Array<{ id: number; name: string; revision: number; index: number; action: 'Created' | 'Overwritten' }>;
  unresolvedConnections: Array<{
    mapName: string;
    connectionId: string;
    connectionName: string | null;
    connectionAlias: string | null;
  }>;
}
interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}

const FIXTURES = path.join(import.meta.dirname, '../../../fixtures');
const ORDER_HUB = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'maps-2.5/OrderHub.json'), 'utf8')) as Array<
  Record<string, unknown>
>;
const QUERY_CREATE = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'maps/query-create/map.json'), 'utf8')) as Record<
  string,
  unknown
>;
const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';

const g = (n: number): string => `22222222-1111-4111-8111-${String(n).padStart(12, '0')}`;
/** A small 3.0 Map named `name` reading from `src` and writing to `dst`. */
const smallMap = (name: string, src = 'src', dst = 'db') => ({
  version: '3.0',
  name,
  blocks: [
    { blockId: g(1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: src, entity: 'people' },
    {
      blockId: g(2),
      name: 'C',
      blockType: 'Create',
      action: 'Create',
      connectionId: dst,
      entity: 'contacts',
      fieldMappings: [{ targetField: 'id', targetFormula: 'Q.id' }],
    },
  ],
});

describe.each(STORE_TARGETS)('Map export and import on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let O: string;
  let csvId: string;
  let dbId: string;

  const newSolution = async (name: string): Promise<string> => {
    const res = await svc.request<{ id: string }>('POST', `${O}/solutions`, {
      body: { name, solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(res.status, res.text).toBe(201);
    return `${O}/solutions/${res.body.id}`;
  };
  const listMaps = async (S: string) => (await svc.request<MapAnswer[]>('GET', `${S}/maps`)).body;
  const importFile = (S: string, body: unknown, query = '') =>
    svc.request<ImportAnswer | Problem>('POST', `${S}/maps/import${query}`, { body });
  const exportFile = async (
    S: string,
    query = '',
  ): Promise<{ status: number; file: MapAnswer[]; disposition: string | undefined }> => {
    const created = await svc.request<{ exportId: number }>('POST', `${S}/maps/export${query}`);
    expect(created.status, created.text).toBe(200);
    expect(Number.isInteger(created.body.exportId)).toBe(true);
    const res = await svc.request<MapAnswer[]>('GET', `${S}/maps/export/${created.body.exportId}`);
    const disposition = res.headers['content-disposition'];
    return {
      status: res.status,
      file: res.body,
      disposition: typeof disposition === 'string' ? disposition : undefined,
    };
  };
  const exportCount = async () =>
    (
      await svc.service.store.db
        .selectFrom('mapExports')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n;
  /** What must survive a round trip: the model, without the IDs and dates of this Solution. */
  const modelOf = (m: MapAnswer) => ({
    name: m.name,
    description: m.description,
    mapType: m.mapType,
    version: m.version,
    batchSize: m.batchSize,
    blocks: m.blocks,
  });

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    O = `/v1/orgs/${svc.orgId}`;
    agent = await registerTestAgent(svc, { name: 'Transfer agent' });
    const conn = async (name: string, connectorId: string): Promise<string> => {
      const r = await svc.request<{ id: string }>('POST', `${O}/connections`, {
        body: { name, connectorId, color: '#FF000000' },
      });
      expect(r.status, r.text).toBe(201);
      return r.body.id;
    };
    csvId = await conn('Legacy Files', CSV);
    dbId = await conn('CRM Database', SQLITE);
  });
  afterAll(async () => svc?.close());

  let hub: string;
  let imported: MapAnswer[];

  it("imports the original service's export: every Map upgraded to 3.0, its Connections matched by name, comment Map Imported", async () => {
    hub = await newSolution('OrderHub');
    const res = await importFile(hub, ORDER_HUB);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const answer = res.body as ImportAnswer;
    expect(answer.unresolvedConnections).toEqual([]);
    expect(answer.maps.map((m) => [m.name, m.action, m.revision, m.index])).toEqual([
      ['Customers to CRM', 'Created', 1, 0],
      ['Open orders', 'Created', 1, 1],
      ['Big spenders', 'Created', 1, 2],
      ['Balance request', 'Created', 1, 3],
    ]);
    imported = await listMaps(hub);
    expect(imported.map((m) => m.name)).toEqual(['Customers to CRM', 'Open orders', 'Big spenders', 'Balance request']);
    for (const m of imported) {
      expect(m.version).toBe('3.0');
      expect(MapModel.safeParse({ version: m.version, name: m.name, blocks: m.blocks }).success).toBe(true);
      expect(m.revisionComment).toMatch(/^Map Imported: revision \d+, \d{4}-\d\d-\d\dT[\d:.]+Z, admin@ferry\.test$/);
    }
    expect(imported[0]?.revisionComment).toMatch(/^Map Imported: revision 7, /);
    expect(imported[3]?.mapType).toBe('IntegrationServicesAdvancedRequestResponseMap');
    // The file's Connection IDs are not this Organization's: its names found ours.
    const used = new Set(imported.flatMap((m) => [...walkBlocks(m.blocks)].map((b) => b.connectionId).filter(Boolean)));
    expect([...used].sort()).toEqual([csvId, dbId].sort());

    const [customers, orders, spenders, balance] = imported;
    const kinds = (m: MapAnswer | undefined) => [...walkBlocks(m?.blocks ?? [])].map((b) => `${b.name}:${b.blockType}`);
    // The Group's Blocks take its place; Insert with actionName Command is a Create; numeric operator codes read.
    expect(kinds(customers)).toEqual([
      'Query_Customers:Query',
      'Lookup_Region:Lookup',
      'Has_Email:IfElse',
      'Upsert_Account:Upsert',
      'UpdateInsert_Contact:UpdateInsert',
      'Audit_Missing_Email:Create',
      'Skip_Customer:MapExit',
      'Update_Tier:Update',
      'Delete_Stale:Delete',
    ]);
    expect(customers?.blocks[0]?.filter).toEqual({ op: '=', field: 'active', value: 1 });
    expect(customers?.blocks[2]?.condition).toBe(
      '(ISNULLOREMPTY(Query_Customers.email) = false) AND (Query_Customers.id > 0)',
    );
    expect(kinds(orders)).toEqual([
      'Fetch_Open_Orders:Fetch',
      'Lookup_Contacts:Lookup',
      'Each_Contact:ForEachResult',
      'Create_Order_Log:Create',
    ]);
    expect(kinds(spenders)).toEqual(['Native_Totals:NativeQuery', 'Create_Big_Spender:Create']);
    expect(kinds(balance)).toEqual([
      'Balance_Request:WaitForRequest',
      'Lookup_Account:Lookup',
      'Known_Account:IfElse',
      'Reply_Ok:BuildReply',
      'Send_Ok:SendReply',
      'Reply_Missing:BuildReply',
      'Send_Missing:SendReply',
    ]);
    expect(balance?.blocks[2]?.condition).toBe('(NOT ISNULL(Lookup_Account.id))');
  });

  it('exports every Map as a JSON file named after the Solution, downloadable once', async () => {
    const before = await exportCount();
    const { status, file, disposition } = await exportFile(hub);
    expect(status).toBe(200);
    expect(disposition).toContain('filename="OrderHub.json"');
    expect(file.map((m) => m.name)).toEqual(imported.map((m) => m.name));
    expect(file[0]).toMatchObject({
      id: imported[0]?.id,
      revision: 1,
      version: '3.0',
      sourceConnectionId: csvId,
      sourceConnectionName: 'Legacy Files',
    });
    expect(file[0]?.targetConnections).toEqual([
      {
        connectionId: dbId,
        connectionName: 'CRM Database',
        connectionAlias: 'CRMDatabase',
        connectionType: expect.any(String) as unknown,
      },
    ]);
    expect(await exportCount()).toBe(before);

    const created = await svc.request<{ exportId: number }>(
      'POST',
      `${hub}/maps/export?mapIds=${imported[1]?.id ?? 0}`,
    );
    const first = await svc.request<MapAnswer[]>('GET', `${hub}/maps/export/${created.body.exportId}`);
    expect(first.status).toBe(200);
    expect(first.body.map((m) => m.name)).toEqual(['Open orders']);
    const again = await svc.request<Problem>('GET', `${hub}/maps/export/${created.body.exportId}`);
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('API_NOT_FOUND');
    // Another Solution's path does not reach the export either.
    const other = await newSolution('Other for exports');
    const elsewhere = await svc.request<{ exportId: number }>('POST', `${hub}/maps/export`);
    expect((await svc.request('GET', `${other}/maps/export/${elsewhere.body.exportId}`)).status).toBe(404);
    expect((await svc.request('GET', `${hub}/maps/export/${elsewhere.body.exportId}`)).status).toBe(200);
  });

  it('exports a revision of one Map; several mapIds with a revision are a 400 and no file', async () => {
    const S = await newSolution('Revisions export');
    const created = await svc.request<MapAnswer>('POST', `${S}/maps/advanced`, { body: smallMap('First version') });
    const id = created.body.id;
    const saved = await svc.request<MapAnswer>('PUT', `${S}/maps/advanced/${id}`, { body: smallMap('Second version') });
    expect(saved.status, saved.text).toBe(200);
    const other = await svc.request<MapAnswer>('POST', `${S}/maps/advanced`, { body: smallMap('Another') });

    const rev1 = await exportFile(S, `?mapIds=${id}&revision=1`);
    expect(rev1.file.map((m) => [m.name, m.revision])).toEqual([['First version', 1]]);
    const latest = await exportFile(S, `?MapIds=${id}`);
    expect(latest.file.map((m) => [m.name, m.revision])).toEqual([['Second version', 2]]);

    const before = await exportCount();
    const refused = await svc.request<Problem>('POST', `${S}/maps/export?mapIds=${id},${other.body.id}&revision=1`);
    expect(refused.status).toBe(400);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(refused.body.errors?.[0]?.path).toBe('querystring.revision');
    expect((await svc.request<Problem>('POST', `${S}/maps/export?revision=1`)).status).toBe(400);
    expect(await exportCount()).toBe(before);

    expect((await svc.request<Problem>('POST', `${S}/maps/export?mapIds=abc`)).status).toBe(400);
    expect((await svc.request<Problem>('POST', `${S}/maps/export?mapIds=${id},999999`)).status).toBe(404);
    expect((await svc.request<Problem>('POST', `${S}/maps/export?mapIds=${id}&revision=9`)).status).toBe(404);
    expect(await exportCount()).toBe(before);
  });

  it('does not serve an export after it expired', async () => {
    const created = await svc.request<{ exportId: number }>('POST', `${hub}/maps/export`);
    await svc.service.store.db
      .updateTable('mapExports')
      .set({ expiresAt: '2000-01-01T00:00:00.000Z' })
      .where('id', '=', created.body.exportId)
      .execute();
    expect((await svc.request('GET', `${hub}/maps/export/${created.body.exportId}`)).status).toBe(404);
  });

  it('round-trips: export then import into another Solution gives the same models', async () => {
    const { file } = await exportFile(hub);
    const copy = await newSolution('OrderHub copy');
    const res = await importFile(copy, file);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((res.body as ImportAnswer).unresolvedConnections).toEqual([]);
    const after = await listMaps(copy);
    expect(after.map(modelOf)).toEqual(imported.map(modelOf));
    expect(after.every((m) => m.revision === 1 && m.lastRunDate === null)).toBe(true);
  });

  it('overwrites same-named Maps with a new revision; importedMapOrder true moves them to the end, false keeps their places', async () => {
    const S = await newSolution('Order of imports');
    for (const name of ['X', 'Y', 'Z'])
      expect((await svc.request('POST', `${S}/maps/advanced`, { body: smallMap(name) })).status).toBe(201);
    const original = await listMaps(S);
    const y = original.find((m) => m.name === 'Y');
    const changedY = { ...smallMap('y'), description: 'changed by the import' };

    const moved = await importFile(S, { maps: [changedY, smallMap('W')] });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect((moved.body as ImportAnswer).maps).toEqual([
      { id: y?.id, name: 'y', revision: 2, index: 2, action: 'Overwritten' },
      { id: expect.any(Number) as unknown, name: 'W', revision: 1, index: 3, action: 'Created' },
    ]);
    let maps = await listMaps(S);
    expect(maps.map((m) => m.name)).toEqual(['X', 'Z', 'y', 'W']);
    const newY = maps.find((m) => m.id === y?.id);
    expect(newY).toMatchObject({ revision: 2, description: 'changed by the import' });
    expect(newY?.revisionComment).toMatch(/^Map Imported: \d{4}-/);

    const kept = await importFile(S, [smallMap('X')], '?importedMapOrder=false');
    expect(kept.status).toBe(200);
    expect((kept.body as ImportAnswer).maps[0]).toMatchObject({
      name: 'X',
      revision: 2,
      index: 0,
      action: 'Overwritten',
    });
    maps = await listMaps(S);
    expect(maps.map((m) => [m.name, m.revision])).toEqual([
      ['X', 2],
      ['Z', 1],
      ['y', 2],
      ['W', 1],
    ]);
    // The links of the Solution follow the new order.
    const links = (await svc.request<{ mapLinks: Array<{ name: string; index: number }> }>('GET', S)).body.mapLinks;
    expect(links.map((l) => [l.name, l.index])).toEqual([
      ['X', 0],
      ['Z', 1],
      ['y', 2],
      ['W', 3],
    ]);
  });

  it('round-trips into the same Solution: the Maps are overwritten and their models do not change', async () => {
    const { file } = await exportFile(hub);
    const res = await importFile(hub, file, '?importedMapOrder=false');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((res.body as ImportAnswer).maps.every((m) => m.action === 'Overwritten' && m.revision === 2)).toBe(true);
    const after = await listMaps(hub);
    expect(after.map(modelOf)).toEqual(imported.map(modelOf));
    expect(after.map((m) => m.id)).toEqual(imported.map((m) => m.id));
    expect(after[0]?.revisionComment).toMatch(/^Map Imported: revision 1, /);
  });

  it('matches Connections by alias when no name matches, and lists the ones that match nothing', async () => {
    const S = await newSolution('Connections by alias');
    const file = [
      {
        ...smallMap('By alias', 'old-src', 'old-db'),
        sourceConnectionId: 'old-src',
        sourceConnectionName: 'Renamed files',
        sourceConnectionAlias: 'legacyfiles',
        targetConnections: [{ connectionId: 'old-db', connectionName: 'Gone', connectionAlias: 'Gone' }],
      },
      // No names in the file: the ID text itself is tried as a name.
      smallMap('By id text', 'CRM Database', 'nowhere'),
    ];
    const res = await importFile(S, file);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((res.body as ImportAnswer).unresolvedConnections).toEqual([
      { mapName: 'By alias', connectionId: 'old-db', connectionName: 'Gone', connectionAlias: 'Gone' },
      { mapName: 'By id text', connectionId: 'nowhere', connectionName: null, connectionAlias: null },
    ]);
    const [a, b] = await listMaps(S);
    expect(a?.blocks.map((x) => x.connectionId)).toEqual([csvId, 'old-db']);
    expect(b?.blocks.map((x) => x.connectionId)).toEqual([dbId, 'nowhere']);
  });

  it('refuses a malformed file with a 400 naming what is wrong, and changes nothing', async () => {
    const S = await newSolution('Bad files');
    expect((await svc.request('POST', `${S}/maps/advanced`, { body: smallMap('Keep') })).status).toBe(201);
    const before = await listMaps(S);
    const expect400 = async (body: unknown, headers: Record<string, string> = {}): Promise<Problem> => {
      const res = await svc.request<Problem>('POST', `${S}/maps/import`, { body, headers });
      expect(res.status, res.text).toBe(400);
      expect(res.headers['content-type']).toContain('application/problem+json');
      return res.body;
    };
    expect((await expect400([])).detail).toContain('no Maps');
    expect((await expect400({ hello: 'world' })).detail).toContain('no Maps');
    expect((await expect400('{"broken": ', { 'content-type': 'application/json' })).code).toBe('API_MALFORMED_BODY');
    expect((await expect400('not json at all', { 'content-type': 'text/plain' })).code).toBe('API_MALFORMED_BODY');
    const notObject = await expect400([smallMap('Fine one'), 'a string']);
    expect(notObject.errors).toContainEqual({ path: 'body[1]', message: 'is string, not a Map object' });
    const badKind = await expect400([
      smallMap('Fine two'),
      { ModelVersion: '2.5', Name: 'Odd map', Blocks: [{ Id: g(9), BlockType: 'Teleport', Name: 'T' }] },
    ]);
    expect(badKind.errors?.[0]?.path).toBe('body[1]');
    expect(badKind.errors?.[0]?.message).toContain('Odd map');
    expect(badKind.errors?.[0]?.message).toContain('Teleport');
    const twice = await expect400([smallMap('Same'), smallMap('same')]);
    expect(twice.errors?.[0]?.path).toBe('body[1].name');
    const noBlocks = await expect400([{ version: '3.0', name: 'Empty', blocks: [] }]);
    expect(noBlocks.errors?.[0]?.message).toContain('Empty');
    const basic = await expect400([{ ...smallMap('Basic one'), mapType: 'IntegrationServicesBasicMap' }]);
    expect(basic.errors?.[0]?.path).toBe('body[0].mapType');
    expect(await listMaps(S)).toEqual(before);

    // Unknown fields anywhere are ignored; a raw file sent as text/plain reads as JSON.
    const withExtras = {
      ...smallMap('Extras'),
      layout: { zoom: 2 },
      blocks: smallMap('x').blocks.map((b) => ({ ...b, color: 'red', position: { x: 1 } })),
    };
    const ok = await svc.request<ImportAnswer>('POST', `${S}/maps/import`, {
      body: JSON.stringify([withExtras]),
      headers: { 'content-type': 'text/plain' },
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.maps[0]).toMatchObject({ name: 'Extras', action: 'Created' });
  });

  it('refuses the whole file when a Map it would overwrite is locked by another user', async () => {
    const S = await newSolution('Locked import');
    const a = await svc.request<MapAnswer>('POST', `${S}/maps/advanced`, { body: smallMap('A') });
    const b = await svc.request<MapAnswer>('POST', `${S}/maps/advanced`, { body: smallMap('B') });
    await svc.service.store.db
      .updateTable('maps')
      .set({ lockedBy: 'someone@else.test', lockDate: new Date().toISOString() })
      .where('id', '=', b.body.id)
      .execute();
    const before = await listMaps(S);
    const res = await importFile(S, [smallMap('A'), smallMap('B'), smallMap('C')]);
    expect(res.status).toBe(409);
    expect((res.body as Problem).code).toBe('MAP_LOCKED');
    expect(await listMaps(S)).toEqual(before);
    expect(before.map((m) => m.id)).toEqual([a.body.id, b.body.id]);
  });

  it('imports into a Solution of the Organization only, and not into a Replication Solution', async () => {
    expect((await importFile(`${O}/solutions/3f2504e0-4f89-41d3-9a0c-0305e82c3301`, [QUERY_CREATE])).status).toBe(404);
    const rs = await svc.request<{ id: string }>('POST', `${O}/solutions`, {
      body: {
        name: 'Copy all',
        solutionType: 'Replication',
        agentId: agent.agentId,
        connectionIdForSource: csvId,
        connectionIdForTarget: dbId,
        replicationSettings: { selectionType: 'All', entities: [] },
        mapLinks: [],
      },
    });
    expect(rs.status, rs.text).toBe(201);
    expect((await importFile(`${O}/solutions/${rs.body.id}`, [QUERY_CREATE])).status).toBe(400);
  });
});
