/**
 * Edge paths of the starters, request-reply and write-with Blocks against the real csv and sqlite
 * plugins: what the golden fixtures cannot show (run-level refusals, a second reply, a parent key
 * the children cannot get).
 */
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostConnection } from '../../../src/connectors/connection.js';
import { ConnectorHost } from '../../../src/connectors/host.js';
import type { ConnectionMetadata, ConnectorRecord } from '../../../src/connectors/sdk.js';
import { compilePlan } from '../../../src/maps/compiler/plan.js';
import { validateMap } from '../../../src/maps/compiler/validate.js';
import { runMap, type MapRecordError } from '../../../src/maps/runtime/run.js';

const CONNECTORS = new URL('../../../connectors/', import.meta.url).pathname;
let host: ConnectorHost;
let tmp: string;
let conns: Map<string, HostConnection>;
let metadata: Record<string, ConnectionMetadata>;

beforeAll(async () => {
  host = new ConnectorHost({ dir: CONNECTORS, log: pino({ level: 'silent' }) });
  await host.loadAll();
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-msg-'));
  await fsp.mkdir(path.join(tmp, 'csv'));
  await fsp.writeFile(path.join(tmp, 'csv', 'people.csv'), 'id,name\n1,ada\n');
  const db = new Database(path.join(tmp, 'db.sqlite'));
  db.exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, code TEXT UNIQUE, status TEXT);
    INSERT INTO orders VALUES (1, 'A', 'open');
    CREATE TABLE order_lines (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(id), sku TEXT);
    CREATE TABLE lines_in (id INTEGER PRIMARY KEY, code TEXT, sku TEXT);
    INSERT INTO lines_in VALUES (1, 'A', 'x');`);
  db.close();
  const src = await host.open({
    connectorId: 'CSV',
    connectionId: 'src',
    properties: { folder: path.join(tmp, 'csv') },
  });
  const dst = await host.open({
    connectorId: 'SQLite',
    connectionId: 'db',
    properties: { file: path.join(tmp, 'db.sqlite') },
  });
  conns = new Map([
    ['src', src],
    ['db', dst],
  ]);
  metadata = { src: await src.metadata(), db: await dst.metadata() };
});
afterAll(async () => {
  for (const c of conns.values()) await c.close();
  await host.close();
  await fsp.rm(tmp, { recursive: true, force: true });
});

let n = 0;
const id = (): string => `cccccccc-0000-4000-8000-${String(++n).padStart(12, '0')}`;

describe('Native Query', () => {
  it('is a validation error on a Connector without one (csv), valid on sqlite', () => {
    const nq = (connectionId: string) => ({
      version: '3.0',
      name: 'N',
      blocks: [
        {
          blockId: id(),
          name: 'N',
          blockType: 'NativeQuery',
          action: 'NativeQuery',
          connectionId,
          statement: 'SELECT 1 AS one',
          fields: ['one'],
        },
      ],
    });
    expect(validateMap(nq('src'), metadata).results.map((r) => r.code)).toEqual(['MAP_ACTION_UNSUPPORTED']);
    expect(validateMap(nq('db'), metadata).valid).toBe(true);
  });
});

describe('Wait For Message', () => {
  const model = {
    version: '3.0',
    name: 'W',
    blocks: [{ blockId: id(), name: 'W', blockType: 'WaitForMessage', action: 'None', fields: ['a'] }],
  };

  it('refuses a run without a message, or with one that is not an object', async () => {
    const plan = compilePlan(model, metadata);
    await expect(runMap(plan, { connections: conns })).rejects.toMatchObject({ code: 'RUN_MESSAGE_MISSING' });
    await expect(runMap(plan, { connections: conns, message: [1, 2] })).rejects.toMatchObject({
      code: 'RUN_MESSAGE_INVALID',
    });
  });

  it('takes its fields from a Connection entity when it names one', () => {
    const typed = {
      version: '3.0',
      name: 'W',
      blocks: [
        {
          blockId: id(),
          name: 'W',
          blockType: 'WaitForMessage',
          action: 'None',
          connectionId: 'src',
          entity: 'people',
        },
        {
          blockId: id(),
          name: 'C',
          blockType: 'Create',
          action: 'Create',
          connectionId: 'db',
          entity: 'orders',
          fieldMappings: [{ targetField: 'code', targetFormula: 'W.name & W.nope' }],
        },
      ],
    };
    expect(validateMap(typed, metadata).results.map((r) => r.code)).toEqual(['FML_UNKNOWN_FIELD']);
  });
});

describe('Send Reply', () => {
  const reply = (name: string, status: string) => [
    {
      blockId: id(),
      name,
      blockType: 'BuildReply',
      action: 'None',
      fieldMappings: [
        { targetField: 'status', targetFormula: `"${status}"` },
        { targetField: 'asked', targetFormula: 'R.q' },
      ],
    },
    { blockId: id(), name: `Send${name}`, blockType: 'SendReply', action: 'None', source: name },
  ];
  const model = {
    version: '3.0',
    name: 'RR',
    blocks: [
      { blockId: id(), name: 'R', blockType: 'WaitForRequest', action: 'None', fields: ['q'] },
      ...reply('One', 'first'),
      ...reply('Two', 'second'),
    ],
  };

  it('answers a request once: a second Send Reply fails the record with RUN_REPLY_FAILED', async () => {
    const sent: ConnectorRecord[] = [];
    const errors: MapRecordError[] = [];
    const res = await runMap(compilePlan(model, metadata), {
      connections: conns,
      message: { q: 'hello' },
      onReply: async (r) => void sent.push(r),
      onRecordError: (e) => errors.push(e),
    });
    expect(res.reply).toEqual({ status: 'first', asked: 'hello' });
    expect(sent).toEqual([{ status: 'first', asked: 'hello' }]);
    expect(errors.map((e) => [e.blockName, e.code])).toEqual([['SendTwo', 'RUN_REPLY_FAILED']]);
    expect(res.stats.failed).toBe(1);
  });

  it('fails the record when the caller refuses the reply', async () => {
    const errors: MapRecordError[] = [];
    const one = { ...model, blocks: model.blocks.slice(0, 3) };
    const res = await runMap(compilePlan(one, metadata), {
      connections: conns,
      message: { q: 1 },
      onReply: () => Promise.reject(new Error('gone')),
      onRecordError: (e) => errors.push(e),
    });
    expect(errors.map((e) => e.code)).toEqual(['RUN_REPLY_FAILED']);
    expect(errors[0]?.errorMessage).toContain('gone');
    expect(res.stats.failed).toBe(1);
  });

  it('is only allowed in a Map that begins with Wait For Request', () => {
    const msg = {
      ...model,
      blocks: [{ ...model.blocks[0], blockType: 'WaitForMessage' }, ...model.blocks.slice(1, 3)],
    };
    expect(validateMap(msg, metadata).results.map((r) => [r.blockName, r.code])).toEqual([
      ['SendOne', 'MAP_BLOCK_MISPLACED'],
    ]);
  });
});

describe('UpdateWith', () => {
  it('fails the record with RUN_PARENT_KEY_MISSING when the written parent lacks the key its children refer to', async () => {
    const model = {
      version: '3.0',
      name: 'UW',
      blocks: [
        { blockId: id(), name: 'Q', blockType: 'Query', action: 'Query', connectionId: 'db', entity: 'lines_in' },
        {
          blockId: id(),
          name: 'Ls',
          blockType: 'Lookup',
          action: 'Query',
          connectionId: 'db',
          entity: 'lines_in',
          lookupConditions: [{ fieldName: 'code', comparisonOperator: '=', compareValue: 'Q.code' }],
        },
        {
          blockId: id(),
          name: 'UW',
          blockType: 'UpdateWith',
          action: 'UpdateWith',
          connectionId: 'db',
          entity: 'orders',
          lookupConditions: [{ fieldName: 'code', comparisonOperator: '=', compareValue: 'Q.code' }],
          fieldMappings: [{ targetField: 'status', targetFormula: '"done"' }],
          children: [
            {
              relationship: 'order_lines_fk_order_lines_order_id',
              source: 'Ls',
              fieldMappings: [{ targetField: 'sku', targetFormula: 'Ls.sku' }],
            },
          ],
        },
      ],
    };
    const errors: MapRecordError[] = [];
    const res = await runMap(compilePlan(model, metadata), {
      connections: conns,
      onRecordError: (e) => errors.push(e),
    });
    expect(errors.map((e) => [e.blockName, e.code])).toEqual([['UW', 'RUN_PARENT_KEY_MISSING']]);
    expect(res.stats.failed).toBe(1);
    const db = new Database(path.join(tmp, 'db.sqlite'), { readonly: true });
    expect(db.prepare('SELECT status FROM orders WHERE id = 1').get()).toEqual({ status: 'done' });
    expect(db.prepare('SELECT COUNT(*) AS n FROM order_lines').get()).toEqual({ n: 0 });
    db.close();
  });
});
