/**
 * Message Endpoints of Event Solutions (SPEC.md "Events", "Message Endpoint"): made by prepare for
 * every Map that begins with Wait For Message (Wait For Request), listed and cleared through the
 * API, named by the Map links' eventUrl and the Map's eventinfo; kept when their Map is deleted,
 * taken over by a new Map of the same name; new URLs for a copied Solution and for imported Maps.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlayedAgent, OpenChannels, until, type Incoming, type TestAgent } from '../../helpers/agent-client.js';
import { startService, type TestService } from '../../helpers/service.js';
import { STORE_TARGETS } from '../../helpers/stores.js';
import { syncEndpoints, type EndpointMap } from '../../../service/store/repos/message-endpoints.repo.js';

const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';

interface Endpoint {
  id: number;
  entityName: string;
  mapName: string;
  mapDescription: string | null;
  messageCount: number;
  createDateTime: string;
  lastModificationDate: string;
}
interface MapLink {
  id: number;
  name: string;
  eventUrl: string | null;
}
interface Solution {
  id: string;
  mapLinks: MapLink[];
}
interface EventInfo {
  mapId: number;
  entityName: string;
  mapName: string;
  eventUrl: string;
  messageCount: number;
  createDateTime: string;
  lastModificationDate: string;
}
interface Problem {
  code: string;
  status: number;
  detail: string;
}

const action = (name: string, blockType: 'Starter' | 'Operation') => ({
  action: name,
  operationName: name,
  blockType,
  supportsBulk: true,
  supportsConstraints: name === 'Query',
  supportsInput: name !== 'Query',
  supportsLookupConditions: false,
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
  size: 0,
  ordinal,
  propertyType: pk ? 'integer' : 'string',
  nativeType: '',
  hasDefault: false,
  requiredInActionInput: false,
  usedInLookupCondition: true,
  usedInActionInput: true,
  usedInQueryConstraint: true,
  usedInQuerySelect: true,
});
/** The datastore every Map writes to (and the plain Map reads from). */
const METADATA = {
  actions: [action('Query', 'Starter'), action('Create', 'Operation')],
  entities: [
    {
      id: 'contacts',
      name: 'contacts',
      fullName: 'contacts',
      originalName: 'contacts',
      description: '',
      isHidden: false,
      actions: [action('Query', 'Starter'), action('Create', 'Operation')],
      fields: [field('id', 1, true), field('full_name', 2)],
      relationships: [],
    },
  ],
};

const blockId = (map: number, n: number) => `44444444-${String(map).padStart(4, '0')}-4111-8111-00000000000${n}`;

/** A Map that stores each order event it is sent into contacts. */
const messageMap = (db: string, name = 'Order events', entity = 'OrderEvent') => ({
  version: '3.0',
  name,
  description: 'orders as they happen',
  mapType: 'IntegrationServicesAdvancedMessageMap',
  blocks: [
    {
      blockId: blockId(1, 1),
      name: 'Msg',
      blockType: 'WaitForMessage',
      action: 'None',
      entity,
      fields: ['orderId', 'customer'],
    },
    {
      blockId: blockId(1, 2),
      name: 'Store',
      blockType: 'Create',
      action: 'Create',
      connectionId: db,
      entity: 'contacts',
      fieldMappings: [{ targetField: 'full_name', targetFormula: 'Msg.customer' }],
    },
  ],
});
/** A Map that answers each quote request it is sent. */
const requestMap = () => ({
  version: '3.0',
  name: 'Quote requests',
  mapType: 'IntegrationServicesAdvancedRequestResponseMap',
  blocks: [
    {
      blockId: blockId(2, 1),
      name: 'R',
      blockType: 'WaitForRequest',
      action: 'None',
      entity: 'QuoteRequest',
      fields: ['sku'],
    },
    {
      blockId: blockId(2, 2),
      name: 'Quote',
      blockType: 'BuildReply',
      action: 'None',
      fieldMappings: [{ targetField: 'sku', targetFormula: 'R.sku' }],
    },
    { blockId: blockId(2, 3), name: 'Send', blockType: 'SendReply', action: 'None', source: 'Quote' },
  ],
});
/** A scheduled Map that reads: no endpoint. */
const queryMap = (db: string) => ({
  version: '3.0',
  name: 'Contacts copy',
  blocks: [
    { blockId: blockId(3, 1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: db, entity: 'contacts' },
    {
      blockId: blockId(3, 2),
      name: 'Put',
      blockType: 'Create',
      action: 'Create',
      connectionId: db,
      entity: 'contacts',
      fieldMappings: [{ targetField: 'full_name', targetFormula: 'Q.full_name' }],
    },
  ],
});

describe.each(STORE_TARGETS)('Message Endpoints of Event Solutions on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  const channels = new OpenChannels();
  let O: string;
  let db: string;
  let S: string;
  let M: string;
  let solutionId: string;
  const ids = { message: 0, request: 0, query: 0 };

  const createSolution = async (name: string): Promise<string> => {
    const res = await svc.request<{ id: string }>('POST', `${O}/solutions`, {
      body: { name, solutionType: 'IntegrationEvent', agentId: agent.agentId },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  };
  const createMap = async (solution: string, body: unknown): Promise<number> => {
    const res = await svc.request<{ id: number }>('POST', `${O}/solutions/${solution}/maps/advanced`, { body });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  };
  const prepare = async (solution = solutionId): Promise<void> => {
    const started = await svc.request<{ id: string }>('POST', `${O}/solutions/${solution}/prepare`);
    expect(started.status, started.text).toBe(200);
    const job = await until(async () => {
      const r = await svc.request<{ isComplete: boolean; hasError: boolean; message: string }>(
        'GET',
        `${O}/solutions/${solution}/prepare/${started.body.id}`,
      );
      return r.body.isComplete ? r.body : undefined;
    }, 'the prepare');
    expect(job, job.message).toMatchObject({ hasError: false });
  };
  const endpoints = async (query = ''): Promise<{ items: Endpoint[]; total: number }> => {
    const res = await svc.request<Endpoint[]>('GET', `${O}/endpoints${query}`);
    expect(res.status, res.text).toBe(200);
    return { items: res.body, total: Number(res.headers['total-count']) };
  };
  /** The stored endpoint rows, by Map name. */
  const rows = async () =>
    svc.service.store.db
      .selectFrom('messageEndpoints')
      .select(['id', 'solutionId', 'urlMapId', 'mapId', 'kind', 'mapName', 'queued', 'messageCount', 'modifiedAt'])
      .orderBy('id')
      .execute();
  const rowOf = async (id: number) => {
    const row = (await rows()).find((r) => r.id === id);
    if (!row) throw new Error(`no endpoint ${id}`);
    return { ...row, urlMapId: Number(row.urlMapId), queued: Number(row.queued), mapId: row.mapId };
  };
  const messagesUrl = (urlMapId: number) => `${svc.url}/v1/orgs/${svc.orgId}/messages/${urlMapId}`;
  const links = async (solution = solutionId) =>
    (await svc.request<Solution>('GET', `${O}/solutions/${solution}`)).body.mapLinks;
  const eventInfo = async (mapId: number, solution = solutionId) => {
    const res = await svc.request<EventInfo>('GET', `${O}/solutions/${solution}/maps/${mapId}/eventinfo`);
    expect(res.status, res.text).toBe(200);
    return res.body;
  };
  const queue = (endpointId: number, count: number) =>
    svc.service.store.db
      .insertInto('eventMessages')
      .values(
        Array.from({ length: count }, (_, i) => ({
          endpointId,
          body: JSON.stringify({ orderId: i }),
          receivedMs: Date.now(),
          leaseRun: null,
          leaseUntilMs: null,
        })),
      )
      .execute();
  const queuedRows = async (endpointId: number) =>
    Number(
      (
        await svc.service.store.db
          .selectFrom('eventMessages')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('endpointId', '=', endpointId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    O = `/v1/orgs/${svc.orgId}`;
    ({ agent } = await connectPlayedAgent(svc, channels, {
      name: 'Events agent',
      hello: { installedConnectors: [{ connectorId: SQLITE, version: '1.0.0' }] },
      reply: (cmd: Incoming) => {
        if (cmd['type'] === 'loadMetadata') return { re: cmd['id'], ok: true, result: METADATA };
        if (cmd['type'] === 'assignSolutions') syncs += 1;
        if (cmd['type'] !== 'runRequest') return undefined;
        if (notHeld > 0) {
          notHeld -= 1;
          const error = { code: 'AGT_SOLUTION_NOT_HELD', kind: 'transient', message: 'Map not held yet' };
          return { re: cmd['id'], ok: false, error };
        }
        return { re: cmd['id'], ok: true, result: { reply: { quote: 'ok' } } };
      },
    }));
    const conn = await svc.request<{ id: string }>('POST', `${O}/connections`, {
      body: { name: 'Orders DB', connectorId: SQLITE, color: '#FF000000' },
    });
    expect(conn.status, conn.text).toBe(201);
    db = conn.body.id;
    solutionId = await createSolution('Order events');
    S = `${O}/solutions/${solutionId}`;
    M = `${S}/maps`;
    ids.message = await createMap(solutionId, messageMap(db));
    ids.request = await createMap(solutionId, requestMap());
    ids.query = await createMap(solutionId, queryMap(db));
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  let orders: Endpoint;
  let quotes: Endpoint;
  /** How many runRequest commands the played Agent refuses as not holding the Map, and how many syncs it got. */
  let notHeld = 0;
  let syncs = 0;

  it('has no endpoint before prepare; eventinfo answers from the Map', async () => {
    expect(await endpoints()).toEqual({ items: [], total: 0 });
    expect((await links()).map((l) => l.eventUrl)).toEqual([null, null, null]);
    expect((await eventInfo(ids.message)).eventUrl).toBe(messagesUrl(ids.message));
  });

  it('prepare makes one endpoint per message or request Map, with the fields of SPEC.md', async () => {
    await prepare();
    const { items, total } = await endpoints();
    expect(total).toBe(2);
    expect(items.map((e) => e.mapName)).toEqual(['Order events', 'Quote requests']);
    [orders, quotes] = items as [Endpoint, Endpoint];
    expect(orders).toEqual({
      id: expect.any(Number),
      entityName: 'OrderEvent',
      mapName: 'Order events',
      mapDescription: 'orders as they happen',
      messageCount: 0,
      createDateTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      lastModificationDate: orders.createDateTime,
    });
    expect(quotes).toMatchObject({ entityName: 'QuoteRequest', mapName: 'Quote requests', messageCount: 0 });
    expect(quotes.id).toBeGreaterThan(orders.id);
    expect(await rowOf(orders.id)).toMatchObject({
      solutionId,
      kind: 'message',
      urlMapId: ids.message,
      mapId: ids.message,
    });
    expect(await rowOf(quotes.id)).toMatchObject({ kind: 'request', urlMapId: ids.request, mapId: ids.request });
  });

  it('a request the Agent cannot run yet (its copy lacks the Map) is sent again once its copies are brought up to date', async () => {
    const token = (await svc.request<{ eventSolutionAccessToken: string }>('GET', `${O}/SecuritySettings`)).body
      .eventSolutionAccessToken;
    const before = syncs;
    notHeld = 1;
    const res = await svc.request('POST', `${O}/requests/${ids.request}?accesstoken=${token}`, {
      auth: null,
      body: { quoteId: 7 },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ quote: 'ok' });
    expect(notHeld).toBe(0);
    expect(syncs).toBeGreaterThan(before);
    // Still not held after the update: the Agent's answer is the caller's, once.
    notHeld = 2;
    const refused = await svc.request<{ code: string }>('POST', `${O}/requests/${ids.request}?accesstoken=${token}`, {
      auth: null,
      body: { quoteId: 8 },
    });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(notHeld).toBe(0);
  });

  it('pages the list by id with the total', async () => {
    expect(await endpoints('?limit=1')).toEqual({ items: [orders], total: 2 });
    expect(await endpoints('?limit=1&offset=1')).toEqual({ items: [quotes], total: 2 });
    expect(await endpoints('?offset=2')).toEqual({ items: [], total: 2 });
  });

  it("names the endpoint's URL in the Map links and the eventinfo, with its count and dates", async () => {
    const byId = new Map((await links()).map((l) => [l.id, l.eventUrl]));
    expect(byId.get(ids.message)).toBe(messagesUrl(ids.message));
    expect(byId.get(ids.request)).toBe(`${svc.url}/v1/orgs/${svc.orgId}/requests/${ids.request}`);
    expect(byId.get(ids.query)).toBeNull();
    const link = await svc.request<MapLink>('GET', `${S}/maplinks/${ids.message}`);
    expect(link.body.eventUrl).toBe(messagesUrl(ids.message));
    const listed = await svc.request<Solution[]>('GET', `${O}/solutions`);
    const inList = listed.body.find((s) => s.id === solutionId)?.mapLinks.find((l) => l.id === ids.message);
    expect(inList?.eventUrl).toBe(messagesUrl(ids.message));
    const info = await eventInfo(ids.message);
    expect(info).toMatchObject({
      mapId: ids.message,
      entityName: 'OrderEvent',
      eventUrl: messagesUrl(ids.message),
      messageCount: 0,
      createDateTime: orders.createDateTime,
      lastModificationDate: orders.lastModificationDate,
    });
    expect((await eventInfo(ids.request)).eventUrl).toBe(byId.get(ids.request));
  });

  it('a second prepare changes nothing', async () => {
    const before = await rows();
    await prepare();
    expect(await rows()).toEqual(before);
  });

  it('clear empties the queue: the rows are gone, queued is 0, the other endpoint keeps its messages', async () => {
    await queue(orders.id, 3);
    await queue(quotes.id, 1);
    await svc.service.store.db
      .updateTable('messageEndpoints')
      .set({ queued: 3, messageCount: 5 })
      .where('id', '=', orders.id)
      .execute();
    await svc.service.store.db
      .updateTable('messageEndpoints')
      .set({ queued: 1, messageCount: 1 })
      .where('id', '=', quotes.id)
      .execute();
    const res = await svc.request<Endpoint>('PUT', `${O}/endpoints/${orders.id}/clear`);
    expect(res.status, res.text).toBe(200);
    // Messages received by the Map and not cleared: the 2 that ran.
    expect(res.body).toMatchObject({ id: orders.id, mapName: 'Order events', messageCount: 2 });
    expect(await queuedRows(orders.id)).toBe(0);
    expect((await rowOf(orders.id)).queued).toBe(0);
    expect(await queuedRows(quotes.id)).toBe(1);
    expect((await rowOf(quotes.id)).queued).toBe(1);
    expect((await eventInfo(ids.message)).messageCount).toBe(2);
    // Clearing an empty queue is no error.
    expect((await svc.request('PUT', `${O}/endpoints/${orders.id}/clear`)).status).toBe(200);
  });

  it('answers 404 problem+json for an endpoint the Organization does not have', async () => {
    const res = await svc.request<Problem>('PUT', `${O}/endpoints/999999/clear`);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.body.code).toBe('API_NOT_FOUND');
    expect(res.body.detail).toContain('999999');
  });

  let replacement: number;

  it('deleting the message Map keeps its endpoint, id and URL; a new Map of its name takes them over', async () => {
    expect((await svc.request('DELETE', `${M}/${ids.message}`)).status).toBe(204);
    expect(await rowOf(orders.id)).toMatchObject({ urlMapId: ids.message, mapId: null });
    expect((await endpoints()).items.map((e) => e.id)).toEqual([orders.id, quotes.id]);

    replacement = await createMap(solutionId, messageMap(db, 'Order events', 'OrderEventV2'));
    await prepare();
    expect(await rowOf(orders.id)).toMatchObject({ urlMapId: ids.message, mapId: replacement });
    const { items } = await endpoints();
    expect(items.map((e) => e.id)).toEqual([orders.id, quotes.id]);
    expect(items[0]).toMatchObject({ entityName: 'OrderEventV2', messageCount: 2 });
    const link = (await links()).find((l) => l.id === replacement);
    expect(link?.eventUrl).toBe(messagesUrl(ids.message));
    expect((await eventInfo(replacement)).eventUrl).toBe(messagesUrl(ids.message));
  });

  it('a renamed message Map keeps its endpoint and URL', async () => {
    const renamed = { ...messageMap(db, 'Order events (all)', 'OrderEventV2') };
    const saved = await svc.request('PUT', `${M}/advanced/${replacement}`, { body: renamed });
    expect(saved.status, saved.text).toBe(200);
    await prepare();
    expect(await rowOf(orders.id)).toMatchObject({
      mapName: 'Order events (all)',
      urlMapId: ids.message,
      mapId: replacement,
    });
    expect((await endpoints()).total).toBe(2);
  });

  it('a copy of the Solution (new Solution, new Maps) gets new endpoints and URLs; the original keeps its', async () => {
    const before = await rows();
    const copyId = await createSolution('Order events copy');
    const copied = {
      message: await createMap(copyId, messageMap(db, 'Order events (all)', 'OrderEventV2')),
      request: await createMap(copyId, requestMap()),
    };
    await prepare(copyId);
    const after = await rows();
    expect(after.slice(0, before.length)).toEqual(before);
    const added = after.slice(before.length);
    expect(added.map((r) => [r.solutionId, r.kind, Number(r.urlMapId), r.mapId])).toEqual([
      [copyId, 'message', copied.message, copied.message],
      [copyId, 'request', copied.request, copied.request],
    ]);
    const copyLinks = new Map((await links(copyId)).map((l) => [l.id, l.eventUrl]));
    expect(copyLinks.get(copied.message)).toBe(messagesUrl(copied.message));
    expect(copyLinks.get(copied.message)).not.toBe(messagesUrl(ids.message));
    expect((await endpoints()).total).toBe(4);
    // Deleting a Solution deletes its endpoints.
    expect((await svc.request('DELETE', `${O}/solutions/${copyId}`)).status).toBe(204);
    expect(await rows()).toEqual(before);
  });

  it('an imported Map gets a new URL: its own ID, even where it took an endpoint over', async () => {
    const created = await svc.request<{ exportId: number }>('POST', `${M}/export?mapIds=${replacement}`);
    expect(created.status, created.text).toBe(200);
    const file = await svc.request<unknown[]>('GET', `${M}/export/${created.body.exportId}`);
    expect(file.status, file.text).toBe(200);
    const imported = await svc.request('POST', `${M}/import`, { body: file.body });
    expect(imported.status, imported.text).toBe(200);
    // Same name: the Map is overwritten (same ID), its revision comment says it was imported.
    const map = await svc.request<{ revisionComment: string }>('GET', `${M}/${replacement}`);
    expect(map.body.revisionComment).toMatch(/^Map Imported/);
    // Until prepared, the endpoint keeps the URL it had.
    expect((await eventInfo(replacement)).eventUrl).toBe(messagesUrl(ids.message));
    await prepare();
    expect(await rowOf(orders.id)).toMatchObject({ urlMapId: replacement, mapId: replacement });
    expect((await links()).find((l) => l.id === replacement)?.eventUrl).toBe(messagesUrl(replacement));
    expect((await eventInfo(replacement)).eventUrl).toBe(messagesUrl(replacement));
    expect((await endpoints()).items.map((e) => e.id)).toEqual([orders.id, quotes.id]);

    // Into another Solution: a new Map, a new endpoint of its own.
    const otherId = await createSolution('Imported events');
    const into = await svc.request<{ maps: Array<{ id: number }> }>('POST', `${O}/solutions/${otherId}/maps/import`, {
      body: file.body,
    });
    expect(into.status, into.text).toBe(200);
    const newMap = into.body.maps[0]?.id ?? 0;
    await prepare(otherId);
    const row = (await rows()).find((r) => r.solutionId === otherId);
    expect(row).toMatchObject({ kind: 'message', mapId: newMap });
    expect(Number(row?.urlMapId)).toBe(newMap);
  });
  describe('the rules of a sync (store level)', () => {
    let sid: string;
    const map = (mapId: number, name: string, more: Partial<EndpointMap> = {}): EndpointMap => ({
      mapId,
      kind: 'message',
      name,
      entityName: 'E',
      description: null,
      imported: false,
      ...more,
    });
    const sync = (maps: EndpointMap[]) =>
      svc.service.store.db
        .transaction()
        .execute((tx) => syncEndpoints(tx, { orgId: svc.orgId, solutionId: sid, maps, now: new Date().toISOString() }));
    const state = async () =>
      (await rows())
        .filter((r) => r.solutionId === sid)
        .map((r) => ({ name: r.mapName, kind: r.kind, url: Number(r.urlMapId), map: r.mapId }));

    beforeAll(async () => {
      sid = await createSolution('Sync rules');
    });

    it('two Maps swapping names keep their own endpoints and URLs', async () => {
      await sync([map(900_001, 'A'), map(900_002, 'B')]);
      const result = await sync([map(900_001, 'B'), map(900_002, 'A')]);
      expect(result).toMatchObject({ created: 0, updated: 2, detached: 0, skipped: [] });
      expect(await state()).toEqual([
        { name: 'B', kind: 'message', url: 900_001, map: 900_001 },
        { name: 'A', kind: 'message', url: 900_002, map: 900_002 },
      ]);
    });

    it("a Map renamed to a gone Map's name takes that endpoint; its own stays behind without a Map", async () => {
      await sync([map(900_001, 'B')]);
      expect(await state()).toContainEqual({ name: 'A', kind: 'message', url: 900_002, map: null });
      await sync([map(900_001, 'A')]);
      expect(await state()).toEqual([
        { name: 'B', kind: 'message', url: 900_001, map: null },
        { name: 'A', kind: 'message', url: 900_002, map: 900_001 },
      ]);
    });

    it('a Map that changes kind keeps its endpoint; a second Map of one kind and name gets none', async () => {
      const result = await sync([map(900_001, 'A', { kind: 'request' }), map(900_003, 'C'), map(900_004, 'c')]);
      expect(result.skipped).toEqual([{ mapId: 900_004, reason: expect.stringContaining('named c') }]);
      expect(await state()).toEqual([
        { name: 'B', kind: 'message', url: 900_001, map: null },
        { name: 'A', kind: 'request', url: 900_002, map: 900_001 },
        { name: 'C', kind: 'message', url: 900_003, map: 900_003 },
      ]);
    });
  });
});
