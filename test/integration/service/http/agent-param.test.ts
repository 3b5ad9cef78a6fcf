import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestChannel, registerTestAgent, until, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

/**
 * Every route of the OpenAPI document that takes an `agentId` (path, query or body), called with
 * an Agent of another Organization and with an ID no Agent has, answers 404 problem+json, and the
 * two answers read the same, so nothing tells that the foreign Agent exists. The Connection's
 * metadata is cached first, so the metadata routes would have an answer without the Agent.
 */
interface Parameter {
  in: string;
  name: string;
  required?: boolean;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: {
    content?: Record<
      string,
      { schema?: { properties?: Record<string, unknown>; anyOf?: Array<{ properties?: Record<string, unknown> }> } }
    >;
  };
}
type Paths = Record<string, Record<string, Operation>>;
interface Problem {
  code: string;
  detail: string;
  status: number;
}

const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const RANDOM = '0b8e1f0e-6a53-4f59-9f55-0c2e7a4d1e11';
const loopbackRule = {
  name: 'lo',
  allowedIpRangeStartAddress: '127.0.0.1',
  allowedIpRangeEndAddress: '127.0.0.1',
  apiAccessEnabled: true,
};

const action = {
  action: 'Query',
  operationName: 'Query',
  blockType: 'Starter',
  supportsBulk: true,
  supportsConstraints: true,
  supportsInput: false,
  supportsLookupConditions: false,
  supportsRelations: false,
  supportsMultipleRecordOperations: false,
  supportsSequences: false,
};
const METADATA = {
  actions: [action],
  entities: [
    {
      id: 'customers',
      name: 'customers',
      fullName: 'customers',
      originalName: 'customers',
      description: '',
      isHidden: false,
      actions: [action],
      relationships: [],
      fields: [
        {
          name: 'id',
          fullName: 'id',
          originalName: 'id',
          description: '',
          isPrimaryKey: true,
          nullable: false,
          size: 8,
          ordinal: 1,
          propertyType: 'integer',
          nativeType: 'INTEGER',
          hasDefault: false,
          requiredInActionInput: false,
          usedInLookupCondition: true,
          usedInActionInput: true,
          usedInQueryConstraint: true,
          usedInQuerySelect: true,
        },
      ],
    },
  ],
};

/** Bodies that pass validation, so that what answers is the Agent check and not a 400. */
const BODIES: Record<string, unknown> = {
  'PUT /v1/orgs/{orgId}/agents/{agentId}': { name: 'Renamed' },
  'POST /v1/orgs/{orgId}/connectors/{connectorId}/preconnect': { properties: [] },
  'POST /v1/orgs/{orgId}/connections/test': { name: 'Unsaved', connectorId: SQLITE, color: '#FF000000' },
  'POST /v1/orgs/{orgId}/solutions': { name: 'Param', solutionType: 'Integration' },
  'PUT /v1/orgs/{orgId}/solutions/{solutionId}': { name: 'Param', solutionType: 'Integration' },
};

const bodyProperties = (op: Operation): string[] => {
  const schema = op.requestBody?.content?.['application/json']?.schema;
  return [
    ...Object.keys(schema?.properties ?? {}),
    ...(schema?.anyOf ?? []).flatMap((s) => Object.keys(s.properties ?? {})),
  ];
};
/** Paths of the properties named agentId (any case) below the top level of a JSON schema. */
function nestedAgentIds(schema: unknown, path: string, depth: number): string[] {
  if (schema === null || typeof schema !== 'object') return [];
  const s = schema as Record<string, unknown>;
  const found: string[] = [];
  for (const [key, sub] of Object.entries((s['properties'] ?? {}) as Record<string, unknown>)) {
    if (key.toLowerCase() === 'agentid' && depth > 0) found.push(`${path}.${key}`);
    found.push(...nestedAgentIds(sub, `${path}.${key}`, depth + 1));
  }
  for (const key of ['items', 'additionalProperties']) found.push(...nestedAgentIds(s[key], `${path}[]`, depth + 1));
  for (const key of ['anyOf', 'oneOf', 'allOf'])
    for (const sub of (s[key] ?? []) as unknown[]) found.push(...nestedAgentIds(sub, path, depth));
  return found;
}

const takesAgentId = (op: Operation): Array<'path' | 'query' | 'body'> => [
  ...(op.parameters ?? []).filter((p) => p.name.toLowerCase() === 'agentid').map((p) => p.in as 'path' | 'query'),
  ...(bodyProperties(op).some((k) => k.toLowerCase() === 'agentid') ? (['body'] as const) : []),
];

describe.each(STORE_TARGETS)('agentId parameters on $name', (target) => {
  let svc: TestService;
  let orgA: number;
  let orgB: number;
  let agentA: TestAgent;
  let agentB: TestAgent;
  let ch: TestChannel;
  let connection: string;
  let ops: Array<{ method: string; path: string; op: Operation; where: Array<'path' | 'query' | 'body'> }>;
  let nested: string[];

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    orgA = svc.orgId;
    const b = await svc.request<{ id: number }>('POST', '/v1/orgs', {
      body: { name: 'Tenant B', parentId: orgA, securityRules: [loopbackRule] },
    });
    expect(b.status).toBe(201);
    orgB = b.body.id;
    agentA = await registerTestAgent(svc, { name: 'A' });
    agentB = await registerTestAgent(svc, { orgId: orgB, name: 'B' });
    ch = await TestChannel.connect(svc, agentA);
    await ch.hello(agentA, { installedConnectors: [{ connectorId: SQLITE, version: '1.0.0' }] });
    ch.autoReply = (cmd) =>
      cmd['type'] === 'loadMetadata' ? { re: cmd['id'], ok: true, result: METADATA } : undefined;

    const conn = await svc.request<{ id: string }>('POST', `/v1/orgs/${orgA}/connections`, {
      body: { name: 'Cached', connectorId: SQLITE, color: '#FF000000' },
    });
    expect(conn.status).toBe(201);
    connection = conn.body.id;
    // Prime the cache: from now on the metadata routes answer without asking any Agent.
    await until(async () => {
      const r = await svc.request(
        'GET',
        `/v1/orgs/${orgA}/connections/${connection}/entitynames?agentId=${agentA.agentId}`,
      );
      return r.status === 200 ? r : undefined;
    }, 'the metadata to be cached');

    const doc = await svc.request<{ paths: Paths }>('GET', '/v1/openapi.json', { auth: null });
    const all = Object.entries(doc.body.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        op,
        where: takesAgentId(op),
      })),
    );
    ops = all.filter((o) => o.where.length > 0);
    nested = all.flatMap((o) =>
      nestedAgentIds(o.op.requestBody?.content?.['application/json']?.schema, `${o.method} ${o.path} body`, 0),
    );
  }, 60_000);
  afterAll(async () => {
    await ch?.close();
    await svc?.close();
  });

  /** Calls the operation with `agentId` wherever it takes one, and valid values elsewhere. */
  const call = (o: (typeof ops)[number], agentId: string) => {
    const path = o.path
      .replace('{orgId}', String(orgA))
      .replace('{agentId}', agentId)
      .replace('{connectionId}', connection)
      .replace('{connectorId}', SQLITE)
      .replace('{entityIdOrName}', 'customers')
      // Map IDs are integers: a GUID would be refused by validation before the Agent check.
      .replace('{mapId}', '1')
      .replace(/\{[^}]+\}/g, RANDOM);
    const query = o.where.includes('query') ? `?agentId=${agentId}` : '';
    const base = BODIES[`${o.method} ${o.path}`];
    const body = o.where.includes('body') ? { ...(base as object | undefined), agentId } : base;
    return svc.request<Problem>(o.method, path + query, { body });
  };

  it('finds the routes that take an agentId, all of them inside an Organization', () => {
    const names = ops.map((o) => `${o.method} ${o.path}`);
    for (const expected of [
      'GET /v1/orgs/{orgId}/connections/{connectionId}/entities',
      'GET /v1/orgs/{orgId}/connectors/{connectorId}/uioptions',
      'POST /v1/orgs/{orgId}/connectors/{connectorId}/preconnect',
      'POST /v1/orgs/{orgId}/connections/{connectionId}/test',
      'GET /v1/orgs/{orgId}/connections',
      'GET /v1/orgs/{orgId}/agents/{agentId}',
    ])
      expect(names).toContain(expected);
    // The check applies to the path's Organization; a route elsewhere would need its own rule.
    for (const name of names) expect(name).toMatch(/^[A-Z]+ \/v1\/orgs\/\{orgId\}\//);
    // The check reads top-level fields; an agentId deeper in a body needs the check extended first.
    expect(nested).toEqual([]);
  });

  it("refuses another Organization's Agent, and an unknown one, with the same 404 on every such route", async () => {
    for (const o of ops) {
      const what = `${o.method} ${o.path}`;
      const foreign = await call(o, agentB.agentId);
      expect(foreign.status, what).toBe(404);
      expect(String(foreign.headers['content-type']), what).toMatch(/application\/problem\+json/);
      expect(foreign.body.code, what).toBe('API_NOT_FOUND');
      expect(foreign.body.detail, what).toBe(`Agent ${agentB.agentId} was not found in Organization ${orgA}.`);
      const unknown = await call(o, RANDOM);
      expect(unknown.status, what).toBe(404);
      expect(unknown.body.code, what).toBe('API_NOT_FOUND');
      expect(unknown.body.detail.replace(RANDOM, 'X'), what).toBe(foreign.body.detail.replace(agentB.agentId, 'X'));
    }
    // The foreign Agent is untouched (the DELETE was refused) and still its Organization's.
    expect((await svc.request('GET', `/v1/orgs/${orgB}/agents/${agentB.agentId}`)).status).toBe(200);
  });

  it("still serves cached metadata without an agentId or with its own Organization's Agent", async () => {
    const entities = `/v1/orgs/${orgA}/connections/${connection}/entities`;
    expect((await svc.request('GET', entities)).status).toBe(200);
    expect((await svc.request('GET', `${entities}?agentId=${agentA.agentId}`)).status).toBe(200);
    expect((await svc.request('GET', `${entities}?AgentId=${agentB.agentId}`)).status).toBe(404);
    expect(
      (await svc.request('GET', `/v1/orgs/${orgA}/connectors/${SQLITE}/uioptions?agentId=${agentA.agentId}`)).status,
    ).toBe(200);
  });
});
