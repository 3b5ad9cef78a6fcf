import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestChannel, registerTestAgent, until, type Incoming, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type ApiResponse, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}
interface Finding {
  blockId: string | null;
  blockName: string | null;
  severity: 'error' | 'warning';
  code: string;
  message: string;
  formula: string | null;
  field: string | null;
  position: { offset: number; line: number; column: number; length: number } | null;
}
interface FormulaAnswer {
  valid: boolean;
  message: string | null;
  errors: Array<{ code: string; message: string; position: Finding['position'] }>;
}
interface MapAnswer {
  id: number;
  revision: number;
  valid: boolean;
  validated?: boolean;
  errors?: Array<{ blockId: string | null; blockName: string | null; code: string; message: string }>;
}

const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';

const action = (name: string, blockType: 'Starter' | 'Operation') => ({
  action: name,
  operationName: name,
  blockType,
  supportsBulk: true,
  supportsConstraints: name === 'Query',
  supportsInput: name !== 'Query',
  supportsLookupConditions: false,
  supportsRelations: name === 'Query',
  supportsMultipleRecordOperations: false,
  supportsSequences: false,
});
const field = (fullName: string, ordinal: number, propertyType = 'string', pk = false) => ({
  name: fullName,
  fullName,
  originalName: fullName,
  description: '',
  isPrimaryKey: pk,
  nullable: !pk,
  size: 0,
  ordinal,
  propertyType,
  nativeType: '',
  hasDefault: false,
  requiredInActionInput: false,
  usedInLookupCondition: true,
  usedInActionInput: true,
  usedInQueryConstraint: true,
  usedInQuerySelect: true,
});
const entity = (fullName: string, actions: unknown[], fields: unknown[], relationships: unknown[] = []) => ({
  id: fullName,
  name: fullName,
  fullName,
  originalName: fullName,
  description: '',
  isHidden: false,
  actions,
  fields,
  relationships,
});
const QUERY = action('Query', 'Starter');
const CREATE = action('Create', 'Operation');
const PEOPLE_ORDERS = {
  name: 'people_orders',
  fullName: 'people_orders',
  description: '',
  path: 'people.orders',
  thisEntityFullName: 'people',
  relatedEntityFullName: 'orders',
  thisProperties: ['id'],
  relatedProperties: ['person_id'],
  relationshipType: 'OneToMany',
};
/** The source datastore: people with their orders, and a table no Map uses. */
const SOURCE = {
  actions: [QUERY],
  entities: [
    entity(
      'people',
      [QUERY],
      [
        field('id', 1, 'integer', true),
        field('first', 2),
        field('last', 3),
        field('age', 4, 'integer'),
        field('updated_at', 5, 'datetime'),
      ],
      [PEOPLE_ORDERS],
    ),
    entity('orders', [QUERY], [field('id', 1, 'integer', true), field('person_id', 2, 'integer'), field('sku', 3)]),
    entity('unused', [QUERY], [field('id', 1, 'integer', true)]),
  ],
};
/** The target datastore. */
const TARGET = {
  actions: [CREATE],
  entities: [
    entity(
      'contacts',
      [CREATE],
      [field('id', 1, 'integer', true), field('full_name', 2), field('age_next', 3, 'integer')],
    ),
  ],
};

const ID = {
  query: '22222222-1111-4111-8111-000000000001',
  each: '22222222-1111-4111-8111-000000000002',
  create: '22222222-1111-4111-8111-000000000003',
  wait: '22222222-1111-4111-8111-000000000004',
};

describe.each(STORE_TARGETS)('validate, formulas, relationships and event information of Maps on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let S: string;
  let M: string;
  let src: string;
  let db: string;
  let slow: string;
  let broken: string;
  let mapId: number;
  /** loadMetadata commands the Agent received, by Connection ID. */
  const loads: string[] = [];
  /** While set, loads of the slow Connection wait for it. */
  let gate: Promise<void> | undefined;

  const model = (mappings: Array<[string, string]>, connections = { src: () => src, db: () => db }) => ({
    version: '3.0',
    name: 'People to contacts',
    blocks: [
      {
        blockId: ID.query,
        name: 'Q',
        blockType: 'Query',
        action: 'Query',
        connectionId: connections.src(),
        entity: 'people',
        relationships: ['people_orders'],
      },
      {
        blockId: ID.each,
        name: 'EachOrder',
        blockType: 'ForEachChild',
        action: 'None',
        relationship: 'people_orders',
        body: [],
      },
      {
        blockId: ID.create,
        name: 'CreateContact',
        blockType: 'Create',
        action: 'Create',
        connectionId: connections.db(),
        entity: 'contacts',
        fieldMappings: mappings.map(([targetField, targetFormula]) => ({ targetField, targetFormula })),
      },
    ],
  });
  const GOOD: Array<[string, string]> = [
    ['id', 'Q.id'],
    ['full_name', 'UPPER(Q.first)'],
    ['age_next', 'Q.age + 1'],
  ];
  const BAD: Array<[string, string]> = [
    ['id', 'Q.id'],
    ['full_name', 'UPPER(Q.nope)'],
    ['age_next', 'Q.age +\n  '],
  ];

  const validate = async (id: number | string, body?: unknown): Promise<string> => {
    const res = await svc.request<{ validateId: string }>(
      'POST',
      `${M}/${id}/validate`,
      body === undefined ? {} : { body },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body.validateId).toMatch(/^[0-9a-f-]{36}$/);
    return res.body.validateId;
  };
  /** Polls validationresults until the validation has finished. */
  const results = (validateId: string, query = ''): Promise<ApiResponse<Finding[]>> =>
    until(async () => {
      const r = await svc.request<Finding[]>('GET', `${M}/${validateId}/validationresults${query}`);
      return r.status === 404 && (r.body as unknown as Problem).detail.includes('still running') ? undefined : r;
    }, 'the validation to finish');
  const formula = (validateId: string, body: unknown) =>
    svc.request<FormulaAnswer | Problem>('POST', `${M}/${validateId}/validateformula`, { body });
  const getMap = async (id = mapId) => (await svc.request<MapAnswer>('GET', `${M}/${id}`)).body;
  const newConnection = async (name: string): Promise<string> => {
    const r = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/connections`, {
      body: { name, connectorId: SQLITE, color: '#FF000000' },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.id;
  };
  const createMap = async (body: unknown): Promise<number> => {
    const res = await svc.request<MapAnswer>('POST', `${M}/advanced`, { body });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  };

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    agent = await registerTestAgent(svc, { name: 'Validate agent' });
    ch = await TestChannel.connect(svc, agent);
    await ch.hello(agent, { installedConnectors: [{ connectorId: SQLITE, version: '1.0.0' }] });
    [src, db, slow, broken] = [
      await newConnection('People'),
      await newConnection('Contacts'),
      await newConnection('Slow'),
      await newConnection('Broken'),
    ];
    ch.autoReply = (cmd: Incoming) => {
      if (cmd['type'] !== 'loadMetadata') return undefined;
      const conn = String(cmd['connectionId']);
      loads.push(conn);
      if (conn === broken)
        return {
          re: cmd['id'],
          ok: false,
          error: { code: 'CON_AUTH_FAILED', kind: 'config', message: 'password authentication failed' },
        };
      const answer = () => ch.send({ re: cmd['id'], ok: true, result: conn === db ? TARGET : SOURCE });
      if (conn === slow && gate) void gate.then(answer);
      else answer();
      return undefined;
    };
    const solution = await svc.request<{ id: string }>('POST', S, {
      body: { name: 'Validated', solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(solution.status, solution.text).toBe(201);
    M = `${S}/${solution.body.id}/maps`;
    mapId = await createMap(model(GOOD));
  });
  afterAll(async () => {
    await ch?.close();
    await svc?.close();
  });

  let goodValidation: string;

  it("validates the stored Map with metadata loaded through the Solution's Agent, and marks it valid", async () => {
    expect((await getMap()).valid).toBe(false);
    goodValidation = await validate(mapId);
    const res = await results(goodValidation);
    expect(res.status, res.text).toBe(200);
    expect(res.body.filter((f) => f.severity === 'error')).toEqual([]);
    expect(res.headers['total-count']).toBe(String(res.body.length));
    expect(loads.filter((c) => c === src)).toHaveLength(1);
    expect(loads.filter((c) => c === db)).toHaveLength(1);
    expect((await getMap()).valid).toBe(true);
    // Cached metadata is used again: no second load.
    await results(await validate(mapId));
    expect(loads.filter((c) => c === src || c === db)).toHaveLength(2);
  });

  let badValidation: string;

  it('reports per-Block errors with the formula, its field and position; the Map is no longer valid', async () => {
    const saved = await svc.request<MapAnswer>('PUT', `${M}/advanced/${mapId}`, { body: model(BAD) });
    expect(saved.status, saved.text).toBe(200);
    badValidation = await validate(mapId);
    const res = await results(badValidation);
    expect(res.status).toBe(200);
    const errors = res.body.filter((f) => f.severity === 'error');
    expect(errors).toEqual([
      expect.objectContaining({
        blockId: ID.create,
        blockName: 'CreateContact',
        code: 'FML_UNKNOWN_FIELD',
        formula: 'fieldMappings.full_name.targetFormula',
        field: 'full_name',
        position: { offset: 6, line: 1, column: 7, length: 6 },
      }),
      expect.objectContaining({
        blockId: ID.create,
        blockName: 'CreateContact',
        code: 'FML_SYNTAX',
        formula: 'fieldMappings.age_next.targetFormula',
        field: 'age_next',
        position: expect.objectContaining({ line: 2 }),
      }),
    ]);
    expect(errors[0]?.message).toContain('Q.nope');
    expect((await getMap()).valid).toBe(false);

    // filterByBlockId and paging
    const onlyQuery = await svc.request<Finding[]>(
      'GET',
      `${M}/${badValidation}/validationresults?filterByBlockId=${ID.query}`,
    );
    expect(onlyQuery.body.filter((f) => f.severity === 'error')).toEqual([]);
    const page = await svc.request<Finding[]>(
      'GET',
      `${M}/${badValidation}/validationresults?filterByBlockId=${ID.create.toUpperCase()}&limit=1&offset=1`,
    );
    expect(page.body).toHaveLength(1);
    expect(Number(page.headers['total-count'])).toBeGreaterThanOrEqual(2);
  });

  it('checks a save at once when the metadata is loaded: valid, and the errors per Block, a wrong field with the nearest name', async () => {
    const wrong = model([
      ['id', 'Q.id'],
      ['ful_name', 'UPPER(Q.frist)'],
      ['age_next', 'Q.age + 1'],
    ]);
    const saved = await svc.request<MapAnswer>('PUT', `${M}/advanced/${mapId}`, { body: wrong });
    expect(saved.status, saved.text).toBe(200);
    expect(saved.body).toMatchObject({ valid: false, validated: true });
    expect(saved.body.errors).toEqual([
      {
        blockId: ID.create,
        blockName: 'CreateContact',
        code: 'MAP_FIELD_NOT_FOUND',
        message: 'contacts has no field ful_name (did you mean full_name?).',
      },
      {
        blockId: ID.create,
        blockName: 'CreateContact',
        code: 'FML_UNKNOWN_FIELD',
        message: expect.stringContaining('Unknown field Q.frist; did you mean Q.first?'),
      },
    ]);
    expect((await getMap()).valid).toBe(false);
    const fixed = await svc.request<MapAnswer>('PUT', `${M}/advanced/${mapId}`, { body: model(GOOD) });
    expect(fixed.body).toMatchObject({ valid: true, validated: true, errors: [] });
    expect((await getMap()).valid).toBe(true);
    // A Map on a Connection whose metadata the Service has not loaded is saved unchecked.
    const fresh = await newConnection('Never loaded');
    const created = await svc.request<MapAnswer>('POST', `${M}/advanced`, {
      body: { ...model(GOOD, { src: () => fresh, db: () => db }), name: 'Unchecked' },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ valid: false, validated: false, errors: [] });
    expect(loads).not.toContain(fresh);
    await svc.request('DELETE', `${M}/${created.body.id}`);
    await svc.request<MapAnswer>('PUT', `${M}/advanced/${mapId}`, { body: model(BAD) });
  });

  it("validates a model sent in the body instead of the stored Map, leaving the Map's valid state alone", async () => {
    const id = await validate(mapId, model(GOOD));
    expect((await results(id)).body.filter((f) => f.severity === 'error')).toEqual([]);
    expect((await getMap()).valid).toBe(false);
    // PascalCase keys of the original service's clients, and an empty body validates the stored Map.
    const stored = await svc.request<{ validateId: string }>('POST', `${M}/${mapId}/validate`, {
      body: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(stored.status, stored.text).toBe(200);
    expect((await results(stored.body.validateId)).body.some((f) => f.code === 'FML_UNKNOWN_FIELD')).toBe(true);
  });

  it('refuses a model of version 2.0 or older with 400, pointing to the upgrade endpoint, and stores nothing', async () => {
    const count = async () => (await svc.service.store.db.selectFrom('mapValidations').select('id').execute()).length;
    const before = await count();
    for (const version of ['2.0', '1.5', 2]) {
      const res = await svc.request<Problem>('POST', `${M}/${mapId}/validate`, { body: { ...model(GOOD), version } });
      expect(res.status, res.text).toBe(400);
      expect(res.body.code).toBe('MAP_UPGRADE_REQUIRED');
      expect(res.body.detail).toContain('/maps/advanced/upgrade');
      expect(res.body.errors?.[0]?.path).toBe('body.version');
    }
    const pascal = await svc.request<Problem>('POST', `${M}/${mapId}/validate`, {
      body: { ...model(GOOD), version: undefined, Version: '2.0' },
    });
    expect(pascal.status).toBe(400);
    const invalidModel = await svc.request<Problem>('POST', `${M}/${mapId}/validate`, {
      body: { version: '3.0', name: 'x', blocks: [] },
    });
    expect(invalidModel.status).toBe(400);
    expect(await count()).toBe(before);
    expect((await svc.request<Problem>('POST', `${M}/999999/validate`)).status).toBe(404);
  });

  it('answers 404 until the metadata is loaded and the validation has finished', async () => {
    let release: (() => void) | undefined;
    gate = new Promise<void>((r) => (release = r));
    const slowMap = await createMap({ ...model(GOOD, { src: () => slow, db: () => db }), name: 'Slow people' });
    const id = await validate(slowMap);
    await until(async () => (loads.includes(slow) ? true : undefined), 'the load of the slow Connection');
    const early = await svc.request<Problem>('GET', `${M}/${id}/validationresults`);
    expect(early.status).toBe(404);
    expect(early.body.code).toBe('API_NOT_FOUND');
    expect(early.body.detail).toContain('still running');
    expect((await formula(id, { formula: 'Q.id' })).status).toBe(404);
    release?.();
    gate = undefined;
    expect((await results(id)).status).toBe(200);
    expect((await getMap(slowMap)).valid).toBe(true);
  });

  it('reports a metadata load that failed as an error about the Map, and leaves the Map as it was', async () => {
    const brokenMap = await createMap({ ...model(GOOD, { src: () => broken, db: () => db }), name: 'Broken people' });
    const id = await validate(brokenMap);
    const res = await results(id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      expect.objectContaining({ blockId: null, severity: 'error', code: 'API_METADATA_LOAD_FAILED', position: null }),
    ]);
    expect(res.body[0]?.message).toContain('password authentication failed');
    const f = await formula(id, { formula: 'Q.id' });
    expect(f.status).toBe(409);
    expect((f.body as Problem).code).toBe('API_CONFLICT');
  });

  it("checks a formula in the validated Map's context, with the position of each error", async () => {
    const ok = await formula(goodValidation, {
      formula: 'CONCATENATE(Q.first, " ", Q.last)',
      blockId: ID.create,
      targetFieldDataType: 'String',
      path: 'fieldMappings.full_name',
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toEqual({ valid: true, message: null, errors: [] });

    const unknown = await formula(goodValidation, {
      Formula: 'UPPER(Q.nope)',
      BlockId: ID.create,
      Path: 'fieldMappings.full_name',
    });
    expect(unknown.status).toBe(200);
    const u = unknown.body as FormulaAnswer;
    expect(u.valid).toBe(false);
    expect(u.errors).toEqual([
      {
        code: 'FML_UNKNOWN_FIELD',
        message: expect.stringContaining('Q.nope') as string,
        position: { offset: 6, line: 1, column: 7, length: 6 },
      },
    ]);
    expect(u.message).toBe(u.errors[0]?.message);
    expect(u.message).toMatch(/^fieldMappings\.full_name: /);
    expect(u.message).not.toContain('ValidateFormula');

    const syntax = (await formula(goodValidation, { formula: 'UPPER(Q.first', blockId: ID.create }))
      .body as FormulaAnswer;
    expect(syntax.valid).toBe(false);
    expect(syntax.errors[0]).toMatchObject({ code: 'FML_SYNTAX', position: { line: 1 } });

    // A Block reads only the Blocks before it: the Query cannot read the Create's output.
    const later = (await formula(goodValidation, { formula: 'CreateContact.full_name', blockId: ID.query }))
      .body as FormulaAnswer;
    expect(later.errors[0]?.code).toBe('FML_UNKNOWN_FIELD');
    // After the last Block (no blockId) it is in scope, but written in bulk: not readable per record.
    const end = (await formula(goodValidation, { formula: 'CreateContact.full_name' })).body as FormulaAnswer;
    expect(end.errors.map((e) => e.code)).toEqual(['MAP_BATCHED_OUTPUT_READ']);
    expect((await formula(goodValidation, { formula: 'Q.age * 2', blockId: null, path: null })).body).toMatchObject({
      valid: true,
    });
    // Inside a For Each Child the current child is read by the Block's name; before it, it is not.
    expect((await formula(goodValidation, { formula: 'EachOrder.sku', blockId: ID.each })).body).toMatchObject({
      valid: true,
    });
    expect(
      ((await formula(goodValidation, { formula: 'EachOrder.sku', blockId: ID.query })).body as FormulaAnswer).errors[0]
        ?.code,
    ).toBe('FML_UNKNOWN_FIELD');
  });

  it('refuses validateformula without a formula, with a Map ID, an unknown Block or an unknown validation', async () => {
    const missing = await formula(goodValidation, { blockId: ID.create });
    expect(missing.status).toBe(400);
    expect((missing.body as Problem).errors?.[0]?.path).toBe('body.formula');
    const byMap = await formula(String(mapId), { formula: 'Q.id' });
    expect(byMap.status).toBe(400);
    expect((byMap.body as Problem).detail).toContain('validateId');
    const block = await formula(goodValidation, { formula: 'Q.id', blockId: '99999999-1111-4111-8111-000000000009' });
    expect(block.status).toBe(400);
    expect((block.body as Problem).errors?.[0]?.path).toBe('body.blockId');
    expect((await formula('5b0e7a39-3a7f-4d7c-9f4e-0a0a0a0a0a0a', { formula: 'Q.id' })).status).toBe(404);
    expect((await svc.request('GET', `${M}/5b0e7a39-3a7f-4d7c-9f4e-0a0a0a0a0a0a/validationresults`)).status).toBe(404);
    expect((await svc.request<Problem>('GET', `${M}/${mapId}/validationresults`)).status).toBe(400);
  });

  it('lists the relationships the Query or a Block selects, paged', async () => {
    const q = await svc.request<Array<{ fullName: string; relatedEntityFullName: string; relationshipType: string }>>(
      'GET',
      `${M}/${mapId}/relationships`,
    );
    expect(q.status, q.text).toBe(200);
    expect(q.body).toEqual([
      expect.objectContaining({
        fullName: 'people_orders',
        relatedEntityFullName: 'orders',
        relationshipType: 'OneToMany',
        thisProperties: ['id'],
        relatedProperties: ['person_id'],
      }),
    ]);
    expect(q.headers['total-count']).toBe('1');
    const each = await svc.request<Array<{ fullName: string }>>(
      'GET',
      `${M}/${mapId}/relationships?blockId=${ID.each}&agentId=${agent.agentId}`,
    );
    expect(each.body.map((r) => r.fullName)).toEqual(['people_orders']);
    const none = await svc.request<unknown[]>('GET', `${M}/${mapId}/relationships?blockId=${ID.create}`);
    expect(none.body).toEqual([]);
    expect(none.headers['total-count']).toBe('0');
    const page = await svc.request<unknown[]>('GET', `${M}/${mapId}/relationships?limit=0`);
    expect(page.body).toEqual([]);
    expect(page.headers['total-count']).toBe('1');
    expect(
      (await svc.request('GET', `${M}/${mapId}/relationships?blockId=99999999-1111-4111-8111-000000000009`)).status,
    ).toBe(404);
  });

  it('answers the event information of a message Map, and 400 for other Maps', async () => {
    const notMessage = await svc.request<Problem>('GET', `${M}/${mapId}/eventinfo`);
    expect(notMessage.status).toBe(400);
    expect(notMessage.body.code).toBe('API_UNSUPPORTED');
    expect(notMessage.body.detail).toContain('not a message Map');
    const messageMap = await createMap({
      version: '3.0',
      name: 'Order events',
      description: 'orders as they happen',
      blocks: [
        {
          blockId: ID.wait,
          name: 'Msg',
          blockType: 'WaitForMessage',
          action: 'None',
          entity: 'OrderEvent',
          fields: ['orderId', 'customer'],
        },
        {
          blockId: ID.create,
          name: 'Store',
          blockType: 'Create',
          action: 'Create',
          connectionId: db,
          entity: 'contacts',
          fieldMappings: [{ targetField: 'full_name', targetFormula: 'Msg.customer' }],
        },
      ],
    });
    const res = await svc.request<Record<string, unknown>>('GET', `${M}/${messageMap}/eventinfo`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      mapId: messageMap,
      entityName: 'OrderEvent',
      mapName: 'Order events',
      mapDescription: 'orders as they happen',
      messageCount: 0,
    });
    expect(res.body['eventUrl']).toBe(`${svc.url}/v1/orgs/${svc.orgId}/messages/${messageMap}`);
    // Its formulas read the message's fields.
    const id = await validate(messageMap);
    expect((await results(id)).body.filter((f) => f.severity === 'error')).toEqual([]);
    expect((await formula(id, { formula: 'UPPER(Msg.orderId)', blockId: ID.create })).body).toMatchObject({
      valid: true,
    });
  });

  it('lets a Read-only user read results but not validate', async () => {
    const reader = await addUser(svc, svc.orgId, 'ReadOnly');
    expect((await svc.request('GET', `${M}/${goodValidation}/validationresults`, { auth: reader })).status).toBe(200);
    expect((await svc.request('POST', `${M}/${mapId}/validate`, { auth: reader })).status).toBe(403);
  });

  it('forgets validations after 24 hours and with their Map', async () => {
    await svc.service.store.db
      .updateTable('mapValidations')
      .set({ creationDate: new Date(Date.now() - 25 * 3600_000).toISOString() })
      .where('id', '=', badValidation)
      .execute();
    expect((await svc.request('GET', `${M}/${badValidation}/validationresults`)).status).toBe(404);
    expect((await svc.request('DELETE', `${M}/${mapId}`)).status).toBe(204);
    expect((await svc.request('GET', `${M}/${goodValidation}/validationresults`)).status).toBe(404);
  });
});
