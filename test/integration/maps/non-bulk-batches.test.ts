/**
 * A write Block that does not write in bulk (`useBulk: false`) sends a batch per call, as a bulk one
 * does: one result per record, in order, a refused record failing alone, and each written record
 * bound to the Block's name for later Blocks to read. It used to send one record per call (a round
 * trip and a commit each: a Replication without checkForBulk ran at 500–1,200 rows/s). Real csv and
 * sqlite plugins; the Connection's calls are counted on the way through.
 */
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { HostConnection } from '../../../src/connectors/connection.js';
import { useQueryCreateMap } from '../../helpers/query-create-map.js';
import { runMap, type MapRecordError } from '../../../src/maps/runtime/run.js';

const RECORDS = 1000;
const BATCH = 100;
/** Person 500 has the full name of person 5 (full_name is UNIQUE): the target refuses it alone. */
const DUP = 500;

const newCase = useQueryCreateMap('non-bulk');

/** The Connection with its write calls counted by entity. */
function counted(conn: HostConnection, calls: Map<string, number[]>): HostConnection {
  return new Proxy(conn, {
    get(target, prop) {
      if (prop === 'write') {
        return (action: string, entity: string, records: readonly unknown[], opts: unknown) => {
          calls.set(entity, [...(calls.get(entity) ?? []), records.length]);
          return (target.write as (...a: unknown[]) => unknown).call(target, action, entity, records, opts);
        };
      }
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

describe('a write that is not bulk', () => {
  it('goes a batch per call, a refused record failing alone, its written records readable by the next Block', async () => {
    let csv = 'id,first,last,age,updated_at\n';
    for (let i = 1; i <= RECORDS; i++)
      csv += `${i},${i === DUP ? 'p5' : `p${i}`},l${i},${i % 90},2024-01-02T00:00:00Z\n`;
    const fixture = JSON.parse(
      fs.readFileSync(new URL('../../fixtures/maps/query-create/map.json', import.meta.url), 'utf8'),
    ) as { blocks: Array<Record<string, unknown>> };
    const [query, create] = fixture.blocks;
    const blocks = [
      { ...query, netChange: undefined },
      { ...create, useBulk: false },
      {
        blockId: '11111111-1111-4111-8111-000000000003',
        name: 'Log',
        blockType: 'Create',
        action: 'Create',
        connectionId: 'db',
        entity: 'log',
        fieldMappings: [
          { targetField: 'id', targetFormula: 'CreateContact.id' },
          { targetField: 'line', targetFormula: 'CreateContact.full_name & " written"' },
        ],
      },
    ];
    const env = await newCase({
      csv,
      model: { batchSize: BATCH, blocks },
      targetSql:
        'CREATE TABLE contacts (id INTEGER PRIMARY KEY, full_name TEXT NOT NULL UNIQUE, age_next INTEGER); CREATE TABLE log (id INTEGER, line TEXT);',
    });
    const calls = new Map<string, number[]>();
    const conns = new Map([...env.conns].map(([id, c]) => [id, counted(c, calls)]));
    const errors: MapRecordError[] = [];
    const { stats } = await runMap(env.plan, { connections: conns, onRecordError: (e) => errors.push(e) });

    expect(stats).toMatchObject({ processed: RECORDS, failed: 1 });
    expect(errors.map((e) => [e.blockName, e.code, e.sourceRow])).toEqual([['CreateContact', 'RUN_WRITE_FAILED', DUP]]);
    // A batch per call, not a record per call.
    expect(calls.get('contacts')).toEqual(Array.from({ length: RECORDS / BATCH }, () => BATCH));
    const db = new Database(env.dbFile, { readonly: true });
    try {
      expect(db.prepare('SELECT count(*) AS n FROM contacts').get()).toEqual({ n: RECORDS - 1 });
      const log = db.prepare('SELECT id, line FROM log ORDER BY id').all() as { id: number; line: string }[];
      expect(log).toHaveLength(RECORDS - 1);
      expect(log.find((r) => r.id === DUP)).toBeUndefined();
      expect(log.find((r) => r.id === 7)).toEqual({ id: 7, line: 'P7 written' });
    } finally {
      db.close();
    }
    await env.close();
  });
});
