import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOCK_TYPES } from '../../../../src/protocol/map.js';
import { registerTestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';

interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
  pattern?: string;
  minItems?: number;
  description?: string;
}
type Content = { content?: Record<string, { schema: JsonSchema }> };
interface Operation {
  summary?: string;
  requestBody?: Content;
  responses?: Record<string, Content>;
}
interface OpenApi {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema> };
}

/**
 * Where `value` breaks `schema` (the keywords the document's Map schemas use), as messages; none
 * when it conforms. The project has no JSON Schema validator of its own to lean on.
 */
function conformance(doc: OpenApi, schema: JsonSchema, value: unknown, at = '$'): string[] {
  if (schema.$ref) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    const target = doc.components.schemas[name];
    return target ? conformance(doc, target, value, at) : [`${at}: ${schema.$ref} does not resolve`];
  }
  const errors: string[] = [];
  for (const part of schema.allOf ?? []) errors.push(...conformance(doc, part, value, at));
  if (schema.anyOf && !schema.anyOf.some((option) => conformance(doc, option, value, at).length === 0))
    errors.push(`${at}: matches no anyOf option`);
  const kind =
    value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value;
  const types = schema.type === undefined ? undefined : [schema.type].flat();
  if (types && !types.includes(kind) && !(kind === 'integer' && types.includes('number')))
    return [...errors, `${at}: ${kind}, expected ${types.join(' or ')}`];
  if ('const' in schema && value !== schema.const) errors.push(`${at}: not ${JSON.stringify(schema.const)}`);
  if (schema.enum && !schema.enum.includes(value))
    errors.push(`${at}: ${JSON.stringify(value)} is not one of the enum`);
  if (schema.pattern && typeof value === 'string' && !new RegExp(schema.pattern).test(value))
    errors.push(`${at}: does not match ${schema.pattern}`);
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems)
      errors.push(`${at}: fewer than ${schema.minItems} items`);
    if (schema.items) value.forEach((item, i) => errors.push(...conformance(doc, schema.items!, item, `${at}[${i}]`)));
  } else if (kind === 'object') {
    const record = value as Record<string, unknown>;
    for (const key of schema.required ?? []) if (!(key in record)) errors.push(`${at}.${key}: required`);
    for (const [key, v] of Object.entries(record)) {
      const property = schema.properties?.[key];
      if (property) errors.push(...conformance(doc, property, v, `${at}.${key}`));
      else if (schema.additionalProperties === false) errors.push(`${at}.${key}: not in the schema`);
    }
  }
  return errors;
}

const jsonSchemaOf = (content: Content | undefined): JsonSchema => {
  const schema = content?.content?.['application/json']?.schema;
  if (!schema) throw new Error('no application/json schema');
  return schema;
};

const FIXTURES = path.join(import.meta.dirname, '../../../fixtures/maps');
const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(fs.readFileSync(path.join(FIXTURES, name, 'map.json'), 'utf8')) as Record<string, unknown>;

describe('the OpenAPI document, /docs and /healthz', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ name: 'sqlite' });
  });
  afterAll(async () => svc?.close());

  it('serves an OpenAPI 3.1 document that lists every /v1 route with a summary', async () => {
    const res = await svc.request<OpenApi>('GET', '/v1/openapi.json', { auth: null });
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const routes = svc.service.app.printRoutes({ commonPrefix: false });
    expect(routes).toContain('/v1/orgs');
    const documented = Object.entries(res.body.paths).flatMap(([p, methods]) =>
      Object.keys(methods).map((m) => `${m.toUpperCase()} ${p}`),
    );
    for (const expected of [
      'GET /v1/orgs',
      'POST /v1/orgs',
      'PUT /v1/orgs/{orgId}',
      'DELETE /v1/orgs/{orgId}/securityrules',
      'PUT /v1/orgs/{orgId}/SecuritySettings/resetcryptotoken',
    ]) {
      expect(documented).toContain(expected);
    }
    for (const [p, methods] of Object.entries(res.body.paths)) {
      for (const [m, op] of Object.entries(methods)) expect(op.summary, `${m} ${p}`).toBeTruthy();
    }
  });

  it('gives the API the version of the package', async () => {
    const res = await svc.request<OpenApi & { info: { version: string } }>('GET', '/v1/openapi.json', { auth: null });
    const pkg = JSON.parse(fs.readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(res.body.info.version).toBe(pkg.version);
  });

  it('matches the copy in docs/openapi.json (regenerate it with npm run openapi)', async () => {
    const res = await svc.request<OpenApi>('GET', '/v1/openapi.json', { auth: null });
    const committed = JSON.parse(
      fs.readFileSync(new URL('../../../../docs/openapi.json', import.meta.url), 'utf8'),
    ) as OpenApi;
    expect(res.body).toEqual(committed);
  });

  describe('the Map model', () => {
    let doc: OpenApi;
    const MAPS = '/v1/orgs/{orgId}/solutions/{solutionId}/maps';
    beforeAll(async () => {
      doc = (await svc.request<OpenApi>('GET', '/v1/openapi.json', { auth: null })).body;
    });

    it('is a component with every Block kind and each field described', () => {
      const { schemas } = doc.components;
      const block = schemas.Block!;
      expect(block.properties!.blockType!.enum).toEqual([...BLOCK_TYPES]);
      expect(block.required).toEqual(['blockId', 'name', 'blockType', 'action']);
      for (const field of [
        'connectionId',
        'entity',
        'filter',
        'netChange',
        'fieldMappings',
        'lookupConditions',
        'children',
        'condition',
        'statement',
        'source',
        'maxRecords',
        'useBulk',
        'then',
        'else',
        'body',
      ]) {
        expect(block.properties, field).toHaveProperty(field);
      }
      for (const [field, property] of Object.entries(block.properties!))
        expect(property.description ?? schemas[property.$ref?.split('/').pop() ?? '']?.description, field).toBeTruthy();
      for (const kind of BLOCK_TYPES) expect(block.properties!.blockType!.description).toContain(kind);
      // Nested sequences, field mappings, lookup conditions, net change and child writes by reference.
      for (const nested of ['then', 'else', 'body'])
        expect(block.properties![nested]!.items).toEqual({ $ref: '#/components/schemas/Block' });
      expect(block.properties!.fieldMappings!.items).toEqual({ $ref: '#/components/schemas/FieldMapping' });
      expect(schemas.FieldMapping!.required).toEqual(['targetField', 'targetFormula']);
      expect(block.properties!.lookupConditions!.items).toEqual({ $ref: '#/components/schemas/LookupCondition' });
      expect(schemas.LookupCondition!.properties!.comparisonOperator!.enum).toEqual(['=', '<>', '<', '<=', '>', '>=']);
      expect(block.properties!.netChange).toEqual({ $ref: '#/components/schemas/NetChange' });
      expect(schemas.NetChange!.required).toEqual(['fieldName']);
      expect(schemas.ChildWrite!.properties!.fieldMappings!.items).toEqual({
        $ref: '#/components/schemas/FieldMapping',
      });
      // The filter is recursive through its own component.
      expect(block.properties!.filter).toEqual(expect.objectContaining({ $ref: '#/components/schemas/Filter' }));
      const ops = schemas.Filter!.anyOf!.map((option) => option.properties!.op!.const ?? option.properties!.op!.enum);
      expect(ops).toEqual([
        ['and', 'or'],
        'not',
        ['=', '<>', '<', '<=', '>', '>='],
        'isNull',
        'like',
        'contains',
        'in',
      ]);
      expect(schemas.Filter!.anyOf![0]!.properties!.args!.items).toEqual({ $ref: '#/components/schemas/Filter' });
      expect(schemas.Filter!.anyOf![1]!.properties!.arg).toEqual({ $ref: '#/components/schemas/Filter' });
      expect(schemas.MapModel!.properties!.blocks!.items).toEqual({ $ref: '#/components/schemas/Block' });
      // What a request may send keeps unknown keys (real exports carry them); what an answer holds does not.
      expect(schemas.BlockInput!.additionalProperties).toBeUndefined();
      expect(schemas.MapModelInput!.properties!.blocks!.items).toEqual({ $ref: '#/components/schemas/BlockInput' });
    });

    it('is what the routes that take or answer a Map model refer to, and every reference resolves', () => {
      const refers = (schema: JsonSchema, name: string) =>
        JSON.stringify(schema).includes(`"#/components/schemas/${name}"`);
      for (const [p, method] of [
        [`${MAPS}/advanced`, 'post'],
        [`${MAPS}/advanced/{mapId}`, 'put'],
        [`${MAPS}/{mapId}/validate`, 'post'],
        [`${MAPS}/{mapId}/changeblocktype`, 'post'],
      ] as const) {
        expect(refers(jsonSchemaOf(doc.paths[p]![method]!.requestBody), 'MapModelInput'), `${method} ${p}`).toBe(true);
      }
      for (const [p, method, status] of [
        [`${MAPS}/{mapId}`, 'get', '200'],
        [MAPS, 'get', '200'],
        [`${MAPS}/advanced`, 'post', '201'],
        [`${MAPS}/export/{exportId}`, 'get', '200'],
      ] as const) {
        expect(refers(jsonSchemaOf(doc.paths[p]![method]!.responses![status]), 'Block'), `${method} ${p}`).toBe(true);
      }
      expect(
        refers(
          jsonSchemaOf(
            doc.paths['/v1/orgs/{orgId}/solution/{solutionId}/maps/advanced/upgrade']!.post!.responses!['200'],
          ),
          'MapModel',
        ),
      ).toBe(true);
      const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!);
      expect(refs.length).toBeGreaterThan(0);
      for (const ref of new Set(refs))
        expect(doc.components.schemas, ref).toHaveProperty(ref.replace('#/components/schemas/', ''));
    });

    it('describes the Maps the API takes and answers', async () => {
      const agent = await registerTestAgent(svc, { name: 'OpenAPI agent' });
      const S = `/v1/orgs/${svc.orgId}/solutions`;
      const solution = await svc.request<{ id: string }>('POST', S, {
        body: { name: 'Documented', solutionType: 'Integration', agentId: agent.agentId },
      });
      expect(solution.status, solution.text).toBe(201);
      const request = jsonSchemaOf(doc.paths[`${MAPS}/advanced`]!.post!.requestBody);
      const answer = jsonSchemaOf(doc.paths[`${MAPS}/{mapId}`]!.get!.responses!['200']);
      for (const name of [
        'query-create',
        'if-else-exit',
        'lookup-foreach-writes',
        'create-with',
        'native-query',
        'loop-control',
      ]) {
        const model = fixture(name);
        expect(conformance(doc, request, model), name).toEqual([]);
        const created = await svc.request<{ id: number }>('POST', `${S}/${solution.body.id}/maps/advanced`, {
          body: model,
        });
        expect(created.status, created.text).toBe(201);
        const read = await svc.request<Record<string, unknown>>(
          'GET',
          `${S}/${solution.body.id}/maps/${created.body.id}`,
        );
        expect(read.status).toBe(200);
        expect(conformance(doc, answer, read.body), name).toEqual([]);
        // The checks bite: a Block without its kind breaks the answer's schema.
        const broken = { ...read.body, blocks: [{ ...(read.body.blocks as object[])[0], blockType: 'Teleport' }] };
        expect(conformance(doc, answer, broken)).not.toEqual([]);
      }
    });
  });

  it('serves the browsable documentation without credentials', async () => {
    const res = await svc.request('GET', '/docs/', { auth: null });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
  });

  it('answers /healthz', async () => {
    const res = await svc.request<{ status: string }>('GET', '/healthz', { auth: null });
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('answers unknown routes with a 404 problem', async () => {
    const res = await svc.request<{ code: string }>('GET', '/v1/nothing-here');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('API_ROUTE_NOT_FOUND');
  });
});
