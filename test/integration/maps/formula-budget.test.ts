/**
 * The formula time budget of a record: a record whose Loop keeps the sandbox busy fails with
 * RUN_FORMULA_TIME_BUDGET once it has used its budget in the Block (or in the run), is recorded
 * like any other record error, and the other records of the run go through untouched.
 */
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostConnection } from '../../../src/connectors/connection.js';
import { ConnectorHost } from '../../../src/connectors/host.js';
import { compilePlan } from '../../../src/maps/compiler/plan.js';
import { runMap, type MapRecordError } from '../../../src/maps/runtime/run.js';

const CONNECTORS = new URL('../../../connectors/', import.meta.url).pathname;
/** Backtracks about 2^20 steps against the pattern below: some milliseconds per evaluation. */
const SLOW = `${'a'.repeat(20)}b`;

/** Five people; person 3 asks for 100,000 iterations, each running a slow regular expression. */
const MAP = {
  version: '3.0',
  name: 'Busy loop',
  batchSize: 10,
  blocks: [
    {
      blockId: '99999999-1111-4111-8111-000000000001',
      name: 'Q',
      blockType: 'Query',
      action: 'Query',
      connectionId: 'src',
      entity: 'people',
    },
    {
      blockId: '99999999-1111-4111-8111-000000000002',
      name: 'L',
      blockType: 'Loop',
      action: 'None',
      condition: 'L.index < Q.n AND NOT REGEXMATCH(Q.text, "^(a+)+$")',
      maxIterations: 100_000,
      body: [],
    },
    {
      blockId: '99999999-1111-4111-8111-000000000003',
      name: 'Done',
      blockType: 'Create',
      action: 'Create',
      connectionId: 'db',
      entity: 'done',
      fieldMappings: [{ targetField: 'id', targetFormula: 'Q.id * 1' }],
    },
  ],
};

let host: ConnectorHost;
let tmp: string;
beforeAll(async () => {
  host = new ConnectorHost({ dir: CONNECTORS, log: pino({ level: 'silent' }) });
  await host.loadAll();
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-formula-budget-'));
});
afterAll(async () => {
  await host.close();
  await fsp.rm(tmp, { recursive: true, force: true });
});

async function setUp(name: string): Promise<{ src: HostConnection; dst: HostConnection; dbFile: string }> {
  const dir = path.join(tmp, name);
  await fsp.mkdir(path.join(dir, 'src'), { recursive: true });
  await fsp.writeFile(
    path.join(dir, 'src', 'schema.json'),
    JSON.stringify({
      entities: {
        'people.csv': {
          fields: [
            { name: 'id', type: 'integer', primaryKey: true },
            { name: 'n', type: 'integer' },
            { name: 'text', type: 'string' },
          ],
        },
      },
    }),
  );
  const rows = [1, 2, 3, 4, 5].map((id) => (id === 3 ? `${id},100000,${SLOW}` : `${id},3,x`));
  await fsp.writeFile(path.join(dir, 'src', 'people.csv'), `id,n,text\n${rows.join('\n')}\n`);
  const dbFile = path.join(dir, 'target.db');
  const db = new Database(dbFile);
  db.exec('CREATE TABLE done (id INTEGER PRIMARY KEY)');
  db.close();
  const src = await host.open({
    connectorId: 'CSV',
    connectionId: 'src',
    properties: { folder: path.join(dir, 'src') },
  });
  const dst = await host.open({ connectorId: 'SQLite', connectionId: 'db', properties: { file: dbFile } });
  return { src, dst, dbFile };
}

async function run(name: string, formulaBudget: { perBlockMs?: number; perRunMs?: number }) {
  const { src, dst, dbFile } = await setUp(name);
  try {
    const plan = compilePlan(MAP, { src: await src.metadata(), db: await dst.metadata() });
    const errors: MapRecordError[] = [];
    const started = performance.now();
    const { stats } = await runMap(plan, {
      connections: new Map([
        ['src', src],
        ['db', dst],
      ]),
      formulaBudget,
      onRecordError: (e) => errors.push(e),
    });
    const ms = performance.now() - started;
    const db = new Database(dbFile, { readonly: true });
    const done = db.prepare('SELECT id FROM done ORDER BY id').all();
    db.close();
    return { stats, errors, done, ms };
  } finally {
    await src.close();
    await dst.close();
  }
}

describe('the formula time budget of a record', () => {
  it('fails the record that spends its budget in one Block; the others go through', async () => {
    const { stats, errors, done, ms } = await run('block', { perBlockMs: 300 });
    expect(stats).toMatchObject({ processed: 5, failed: 1, cancelled: false });
    expect(done).toEqual([{ id: 1 }, { id: 2 }, { id: 4 }, { id: 5 }]);
    expect(errors).toHaveLength(1);
    const [error] = errors;
    expect(error).toMatchObject({ code: 'RUN_FORMULA_TIME_BUDGET', blockName: 'L', blockId: MAP.blocks[1]?.blockId });
    const detail = JSON.parse(error?.errorDetail ?? '{}') as { scope: string; spentMs: number; budgetMs: number };
    expect(detail).toMatchObject({ scope: 'block', budgetMs: 300 });
    expect(detail.spentMs).toBeGreaterThanOrEqual(300);
    // Stopped soon after the budget, far from 100,000 iterations of the slow expression.
    expect(ms).toBeLessThan(20_000);
  });

  it('fails it on the budget of the whole run when the Block budget is off', async () => {
    const { stats, errors, done } = await run('run', { perBlockMs: 0, perRunMs: 300 });
    expect(stats).toMatchObject({ processed: 5, failed: 1 });
    expect(done).toEqual([{ id: 1 }, { id: 2 }, { id: 4 }, { id: 5 }]);
    expect(errors.map((e) => e.code)).toEqual(['RUN_FORMULA_TIME_BUDGET']);
    expect(JSON.parse(errors[0]?.errorDetail ?? '{}')).toMatchObject({ scope: 'run', budgetMs: 300 });
  });
});
