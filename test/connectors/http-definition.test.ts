/**
 * The definition and the properties of the HTTP / JSON API connector: what a bad one says
 * (CON_PROPERTIES_INVALID naming the bad path or property), and the metadata a good one gives.
 */
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../src/connectors/host.js';
import { CONNECTORS_DIR } from './conformance.js';
import { HTTP_CONNECTOR, json, serve, type Served } from './http-api.js';

let host: ConnectorHost;
let served: Served;
beforeAll(async () => {
  host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
  await host.loadAll();
  served = await serve((req, res) =>
    req.path === '/health' ? json(res, 503, { message: 'maintenance' }) : json(res, 200, []),
  );
});
afterAll(async () => {
  await host.close();
  await served.close();
});

const FIELDS = [
  { name: 'id', type: 'integer' },
  { name: 'updated', type: 'datetime' },
  { name: 'label', type: 'string' },
];
const entity = (extra: Record<string, unknown>): string =>
  JSON.stringify({ entities: [{ name: 'items', path: '/items', fields: FIELDS, key: 'id', ...extra }] });

async function failure(properties: Record<string, string>): Promise<{ code?: string; message?: string }> {
  try {
    await host.open({ connectorId: HTTP_CONNECTOR, connectionId: 'def', properties });
  } catch (err) {
    return err as { code?: string; message?: string };
  }
  throw new Error('expected the properties to be refused');
}

describe('http connector definition', () => {
  const cases: Array<[string, string, string]> = [
    ['not JSON', '{ entities: ', 'definition: not valid JSON'],
    ['no entities', '{}', 'definition: entities:'],
    [
      'an unknown pagination type',
      entity({ pagination: { type: 'pages' } }),
      'definition: entities[0].pagination.type:',
    ],
    ['a misspelt key', entity({ recrodsPath: 'data' }), 'definition: entities[0]: Unrecognized key: "recrodsPath".'],
    [
      'a field type that does not exist',
      entity({ fields: [{ name: 'id', type: 'int' }] }),
      'entities[0].fields[0].type',
    ],
    [
      'a key that is no field',
      entity({ key: ['ids'] }),
      'definition: entities[0].key[0]: the entity items has no field ids.',
    ],
    [
      'net change on a text field',
      entity({ netChange: { field: 'label' } }),
      'definition: entities[0].netChange.field: the field label is a string, not a date or datetime.',
    ],
    [
      'a cursor without its cursor',
      entity({ pagination: { type: 'cursor', cursorParam: 'c' } }),
      'definition: entities[0].pagination: a cursor pagination needs cursorPath and cursorParam, or nextUrlPath.',
    ],
    [
      'an update without the key in its path',
      entity({ update: { path: '/items' } }),
      'definition: entities[0].update.path: the update path must name its record by the key',
    ],
    [
      'a placeholder that is no field',
      entity({ delete: { path: '/items/{uuid}' } }),
      'definition: entities[0].delete.path: the entity items has no field uuid.',
    ],
    ['a page size of 0', entity({ pagination: { type: 'offset', pageSize: 0 } }), 'entities[0].pagination.pageSize'],
  ];
  for (const [name, definition, message] of cases) {
    it(`refuses ${name}, naming where`, async () => {
      const err = await failure({ baseUrl: served.url, definition });
      expect(err.code).toBe('CON_PROPERTIES_INVALID');
      expect(err.message).toContain(message);
    });
  }

  it('refuses bad properties, naming the property and never a secret', async () => {
    const definition = entity({});
    expect((await failure({ definition })).message).toContain('baseUrl');
    expect((await failure({ baseUrl: 'ftp://x', definition })).message).toContain('http or https');
    expect((await failure({ baseUrl: 'https://u:p@x', definition })).message).toContain('must not hold a user');
    expect((await failure({ baseUrl: served.url })).message).toContain('definition');
    expect((await failure({ baseUrl: served.url, definition, authType: 'kerberos' })).message).toContain('authType');
    expect((await failure({ baseUrl: served.url, definition, authType: 'bearer' })).message).toContain('token');
    expect((await failure({ baseUrl: served.url, definition, authType: 'oauth2', clientId: 'c' })).message).toContain(
      'tokenUrl',
    );
    expect((await failure({ baseUrl: served.url, definition, maxRetries: '-1' })).message).toContain('maxRetries');
    expect((await failure({ baseUrl: served.url, definition, headers: '[1]' })).message).toContain('headers');
  });

  it('describes the entities: types, key, actions as declared', async () => {
    const definition = JSON.stringify({
      entities: [
        {
          name: 'Order Lines',
          path: '/lines',
          fields: [
            { name: 'order no', type: 'integer' },
            { name: 'line', type: 'integer' },
            { name: 'total', type: 'decimal', description: 'with tax' },
            { name: 'at', type: 'datetime', readOnly: true },
          ],
          key: ['order no', 'line'],
          create: { batch: {} },
          update: { path: '/lines/{order no}/{line}' },
          delete: { path: '/lines/{order_no}/{line}' },
        },
        { name: 'events', path: '/events', fields: [{ name: 'id' }] },
        { name: 'signals', fields: [{ name: 'id' }], create: { path: '/signals' } },
      ],
    });
    const conn = await host.open({
      connectorId: HTTP_CONNECTOR,
      connectionId: 'md',
      properties: { baseUrl: served.url, definition },
    });
    const md = await conn.metadata();
    expect(md.entities.map((e) => [e.fullName, e.actions.map((a) => a.action)])).toEqual([
      ['Order_Lines', ['Query', 'Create', 'Update', 'UpdateInsert', 'Delete']],
      ['events', ['Query']],
      ['signals', ['Create']],
    ]);
    const lines = md.entities[0];
    expect(lines?.fields.map((f) => [f.fullName, f.propertyType, f.isPrimaryKey, f.usedInActionInput])).toEqual([
      ['order_no', 'integer', true, true],
      ['line', 'integer', true, true],
      ['total', 'decimal', false, true],
      ['at', 'datetime', false, false],
    ]);
    expect(lines?.fields[2]?.description).toBe('with tax');
    expect(md.actions.map((a) => a.action)).toEqual(['Query', 'Create', 'Update', 'UpdateInsert', 'Delete']);
    await expect(conn.test()).resolves.toBeUndefined();
    await conn.close();
  });

  it('tests the testPath when given; preconnect answers SUCCESS or fails', async () => {
    await expect(host.preconnect(HTTP_CONNECTOR, { baseUrl: served.url, definition: entity({}) })).resolves.toEqual({
      reply: 'SUCCESS',
    });
    const definition = JSON.stringify({ testPath: '/health', entities: JSON.parse(entity({})).entities as unknown });
    await expect(
      host.preconnect(HTTP_CONNECTOR, { baseUrl: served.url, definition, maxRetries: '0' }),
    ).rejects.toMatchObject({
      code: 'CON_DATASTORE_ERROR',
      message: expect.stringContaining('HTTP 503 (maintenance)') as string,
    });
  });

  it('takes the example definition of docs/connectors.md', async () => {
    const doc = fs.readFileSync(path.resolve(import.meta.dirname, '../../docs/connectors.md'), 'utf8');
    const example = /\n## http\n[\s\S]*?```json\n([\s\S]*?)```/.exec(doc)?.[1] as string;
    const conn = await host.open({
      connectorId: HTTP_CONNECTOR,
      connectionId: 'doc',
      properties: { baseUrl: served.url, definition: example },
    });
    const md = await conn.metadata();
    expect(md.entities.map((e) => [e.fullName, e.actions.map((a) => a.action)])).toEqual([
      ['people', ['Query', 'Create', 'Update', 'UpdateInsert', 'Upsert', 'Delete']],
      ['orders', ['Query']],
    ]);
    await conn.close();
  });
});
