/**
 * The conformance suite every Connector runs (STYLE.md "Connectors"). A connector's test file
 * calls {@link runConformance} with a target that builds a real datastore holding the standard
 * `people` entity natively (not through the connector), so reads are checked against data the
 * connector did not write. Everything else goes through the real plugin host, as the Agent does.
 */
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection, HostQueryOptions } from '../../src/connectors/connection.js';
import {
  compareValues,
  unpackRecords,
  datetimeMillis,
  type ConnectorRecord,
  type EntityMetadata,
  type Filter,
  type PropertyType,
  type RecordBatch,
  type Value,
  type WriteResult,
} from '../../src/connectors/sdk.js';
import type { FerryError } from '../../src/errors/ferry-error.js';
import { isTargetFailure } from '../../src/maps/runtime/target-retry.js';
import { transfer } from '../../src/connectors/transfer.js';

export const CONNECTORS_DIR = path.resolve(import.meta.dirname, '../../connectors');

/** The fields of `people`, in order, with the property type each connector must report. */
export const PEOPLE_FIELDS: { name: string; type: PropertyType }[] = [
  { name: 'id', type: 'integer' },
  { name: 'name', type: 'string' },
  { name: 'email', type: 'string' },
  { name: 'score', type: 'double' },
  { name: 'balance', type: 'decimal' },
  { name: 'active', type: 'boolean' },
  { name: 'born', type: 'date' },
  { name: 'updated_at', type: 'datetime' },
  { name: 'big', type: 'integer' },
];

/** The rows of `people`: what each target writes natively before the suite runs. */
export const PEOPLE: ConnectorRecord[] = [
  {
    id: 1,
    name: 'Ann',
    email: 'ann@example.com',
    score: 1.5,
    balance: '10.00',
    active: true,
    born: '1990-01-02',
    updated_at: '2024-01-01T10:00:00Z',
    big: 1,
  },
  {
    id: 2,
    name: 'Bob',
    email: null,
    score: 2.25,
    balance: '-3.50',
    active: false,
    born: '1985-12-31',
    updated_at: '2024-03-05T08:30:00Z',
    big: 2,
  },
  {
    id: 3,
    name: 'Cy',
    email: 'cy@example.com',
    score: null,
    balance: '0.00',
    active: true,
    born: null,
    updated_at: '2024-02-01T00:00:00Z',
    big: null,
  },
  {
    id: 4,
    name: 'Di "Quoted"',
    email: 'di@example.com',
    score: 100,
    balance: '123456.78',
    active: null,
    born: '2000-02-29',
    updated_at: '2023-12-31T23:59:59Z',
    big: 4,
  },
  {
    id: 5,
    name: 'Ed, Jr',
    email: 'ed@example.org',
    score: -7.125,
    balance: '1.10',
    active: false,
    born: '1970-01-01',
    updated_at: '2024-06-15T12:00:00Z',
    big: '9007199254740993',
  },
  {
    id: 6,
    name: 'Fay\nTwo lines',
    email: 'fay@example.com',
    score: 0,
    balance: '99.99',
    active: true,
    born: '1999-09-09',
    updated_at: null,
    big: -6,
  },
  {
    id: 7,
    name: 'Gus',
    email: 'gus@example.net',
    score: 3.75,
    balance: '5.00',
    active: true,
    born: '2001-01-01',
    updated_at: '2024-03-05T08:30:00Z',
    big: 7,
  },
  {
    id: 8,
    name: 'Hal',
    email: '',
    score: 8,
    balance: '8.80',
    active: false,
    born: '1988-08-08',
    updated_at: '2024-04-01T00:00:00Z',
    big: 8,
  },
];

export interface ConformanceTarget {
  /** The manifest `name` of the connector. */
  connector: string;
  /** Told apart in the suite's title when a connector runs it under more than one setting. */
  label?: string;
  /** Why the suite cannot run here (e.g. no PostgreSQL configured); it is skipped with this message. */
  skip?: string;
  /** A fresh datastore holding `people` (PEOPLE, written natively) and its connection properties. */
  setup(): Promise<{ properties: Record<string, string>; cleanup: () => Promise<void> }>;
  /** Writes the entity `big` natively: `rows` records of {id 1..rows, payload (~100 characters)}. */
  createLarge(properties: Record<string, string>, rows: number): Promise<void>;
  /** Rejects a second record with an existing primary key (SQL datastores; csv does not check). */
  enforcesUniqueKeys: boolean;
  /** A native statement returning the rows of people with id > $1 / ?, and its parameter. */
  nativeQuery?: { statement: string; params: Value[] };
  ensureEntity: boolean;
  /**
   * Takes the datastore away while a write call runs: `during` starts the write (`write`), makes
   * the datastore fail it as it would when its connection drops or its server or file goes away
   * (PostgreSQL: the session is terminated while a lock holds the write; SQLite: another connection
   * holds the file's write lock past the busy time-out; csv: the folder goes away), brings the
   * datastore back once the call has settled, and answers the call's outcome. `properties` are
   * added to the Connection the case writes through.
   */
  interrupt: {
    properties?: Record<string, string>;
    during(
      properties: Record<string, string>,
      write: () => Promise<WriteResult[]>,
    ): Promise<PromiseSettledResult<WriteResult[]>>;
  };
}

const FULLNAME = /^[A-Za-z0-9_]+$/;
const TYPES = new Map(PEOPLE_FIELDS.map((f) => [f.name, f.type]));

/** Values of one field equal in the value model (decimals by value, datetimes by instant). */
export function sameValue(field: string, a: Value | undefined, b: Value | undefined): boolean {
  if (a === null || a === undefined || b === null || b === undefined) return (a ?? null) === (b ?? null);
  const t = TYPES.get(field) ?? 'string';
  if (t === 'datetime') return datetimeMillis(String(a)) === datetimeMillis(String(b));
  return compareValues(t, a, b) === 0;
}

export function expectSameRecord(actual: ConnectorRecord | undefined, expected: ConnectorRecord): void {
  expect(actual, `record ${String(expected['id'])}`).toBeDefined();
  for (const [k, v] of Object.entries(expected)) {
    expect(
      sameValue(k, actual?.[k], v),
      `${String(expected['id'])}.${k}: got ${JSON.stringify(actual?.[k])}, expected ${JSON.stringify(v)}`,
    ).toBe(true);
  }
}

export async function collect(
  source: AsyncIterable<RecordBatch>,
): Promise<{ records: ConnectorRecord[]; batches: number[] }> {
  const records: ConnectorRecord[] = [];
  const batches: number[] = [];
  for await (const b of source) {
    batches.push(b.length);
    records.push(...b);
  }
  return { records, batches };
}

/**
 * A query read both ways, ordered by `id` unless `opts` says otherwise: `packed` from queryPacked
 * (each batch within the batch size) made into records, `records` from query. A packed reader must
 * give exactly the records.
 */
export async function readBothWays(
  conn: HostConnection,
  entity: string,
  filter?: Filter,
  opts: HostQueryOptions = {},
): Promise<[packed: ConnectorRecord[], records: ConnectorRecord[]]> {
  const options = { batchSize: 1000, orderBy: [{ field: 'id', direction: 'asc' as const }], ...opts };
  const records = (await collect(conn.query(entity, filter, options))).records;
  const it = conn.queryPacked(entity, filter, options);
  if (!it) throw new Error(`${entity} is not read packed`);
  const packed: ConnectorRecord[] = [];
  for await (const b of it) {
    expect(b.rows).toBeLessThanOrEqual(options.batchSize);
    packed.push(...unpackRecords(b));
  }
  return [packed, records];
}

async function rejection(p: Promise<unknown>): Promise<{ code?: string; kind?: string; message?: string }> {
  try {
    await p;
  } catch (err) {
    return err as { code?: string };
  }
  throw new Error('expected a rejection');
}

const ids = (rs: ConnectorRecord[]): number[] => rs.map((r) => Number(r['id'])).sort((a, b) => a - b);

/** The filters every connector must evaluate alike, with the ids they select (SQL semantics). */
export const FILTER_CASES: { name: string; filter: Filter; ids: number[] }[] = [
  { name: '=', filter: { op: '=', field: 'name', value: 'Bob' }, ids: [2] },
  {
    name: '<> excludes nulls',
    filter: { op: '<>', field: 'email', value: 'ann@example.com' },
    ids: [3, 4, 5, 6, 7, 8],
  },
  { name: '< on numbers', filter: { op: '<', field: 'score', value: 2.25 }, ids: [1, 5, 6] },
  { name: '<= on decimals', filter: { op: '<=', field: 'balance', value: '5.00' }, ids: [2, 3, 5, 7] },
  { name: '> on dates', filter: { op: '>', field: 'born', value: '1999-09-09' }, ids: [4, 7] },
  {
    name: '>= on datetimes',
    filter: { op: '>=', field: 'updated_at', value: '2024-03-05T08:30:00Z' },
    ids: [2, 5, 7, 8],
  },
  { name: '= on booleans', filter: { op: '=', field: 'active', value: true }, ids: [1, 3, 6, 7] },
  { name: 'isNull', filter: { op: 'isNull', field: 'score' }, ids: [3] },
  { name: 'not isNull', filter: { op: 'not', arg: { op: 'isNull', field: 'born' } }, ids: [1, 2, 4, 5, 6, 7, 8] },
  { name: 'like', filter: { op: 'like', field: 'email', pattern: '%@example.com' }, ids: [1, 3, 4, 6] },
  { name: 'like: _ is one character', filter: { op: 'like', field: 'name', pattern: '_d%' }, ids: [5] },
  {
    name: 'like is case-sensitive and % spans lines',
    filter: { op: 'like', field: 'name', pattern: '%a%' },
    ids: [6, 8],
  },
  { name: 'contains escapes wildcards', filter: { op: 'contains', field: 'name', value: '"Quoted"' }, ids: [4] },
  { name: 'in', filter: { op: 'in', field: 'id', values: [2, 4, 99] }, ids: [2, 4] },
  {
    name: 'and / or',
    filter: {
      op: 'or',
      args: [
        {
          op: 'and',
          args: [
            { op: '>', field: 'id', value: 5 },
            { op: '=', field: 'active', value: false },
          ],
        },
        { op: '=', field: 'id', value: 1 },
      ],
    },
    ids: [1, 8],
  },
  {
    name: 'not of unknown stays unknown',
    filter: { op: 'not', arg: { op: '=', field: 'active', value: true } },
    ids: [2, 5, 8],
  },
  { name: 'big integers compare exactly', filter: { op: '=', field: 'big', value: '9007199254740993' }, ids: [5] },
];

/** Defines the conformance tests for a target. */
export function runConformance(target: ConformanceTarget): void {
  describe.skipIf(Boolean(target.skip))(
    `${target.connector}${target.label ? ` (${target.label})` : ''} conformance`,
    () => {
      let host: ConnectorHost;
      let props: Record<string, string>;
      let cleanup: (() => Promise<void>) | undefined;
      let conn: HostConnection;
      let n = 0;
      const open = async (): Promise<HostConnection> =>
        host.open({
          connectorId: target.connector,
          connectionId: `conf-${target.connector}-${++n}`,
          properties: props,
        });

      beforeAll(async () => {
        host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
        await host.loadAll();
        const s = await target.setup();
        props = s.properties;
        cleanup = s.cleanup;
        conn = await open();
      });
      afterAll(async () => {
        await host?.close();
        await cleanup?.();
      });

      it('loads through the plugin host with a valid manifest', () => {
        const m = host.manifest(target.connector);
        expect(m.name).toBe(target.connector);
        expect(m.solutionRoles.length).toBeGreaterThan(0);
        expect(host.failures().filter((f) => f.name === target.connector)).toEqual([]);
      });

      it('tests the connection, and refuses missing properties with CON_PROPERTIES_INVALID', async () => {
        await expect(conn.test()).resolves.toBeUndefined();
        const err = await rejection(host.open({ connectorId: target.connector, connectionId: 'bad', properties: {} }));
        expect(err.code).toBe('CON_PROPERTIES_INVALID');
        expect(err.kind).toBe('config');
      });

      it('describes people by fullName with the value-model types, the key and the actions', async () => {
        const md = await conn.metadata();
        const names = md.entities.map((e) => e.fullName);
        expect(new Set(names.map((x) => x.toLowerCase())).size).toBe(names.length);
        for (const e of md.entities) {
          expect(e.fullName).toMatch(FULLNAME);
          for (const f of e.fields) expect(f.fullName).toMatch(FULLNAME);
          for (const r of e.relationships) expect(r.fullName).toMatch(FULLNAME);
        }
        const people = md.entities.find((e) => e.fullName === 'people') as EntityMetadata;
        expect(people).toBeDefined();
        expect(people.fields.map((f) => [f.fullName, f.propertyType])).toEqual(
          PEOPLE_FIELDS.map((f) => [f.name, f.type]),
        );
        expect(people.fields.filter((f) => f.isPrimaryKey).map((f) => f.fullName)).toEqual(['id']);
        const actions = people.actions.map((a) => a.action);
        expect(actions).toEqual(
          expect.arrayContaining(['Query', 'Create', 'Update', 'UpdateInsert', 'Upsert', 'Delete']),
        );
        expect(people.actions.find((a) => a.action === 'Query')?.supportsConstraints).toBe(true);
        expect(people.actions.find((a) => a.action === 'Create')?.supportsBulk).toBe(true);
      });

      it('keeps metadata per connection until reloaded', async () => {
        const a = await conn.metadata();
        const b = await conn.metadata();
        expect(b).toBe(a);
        const c = await conn.metadata({ reload: true });
        expect(c).not.toBe(a);
        expect(c.entities.map((e) => e.fullName)).toEqual(a.entities.map((e) => e.fullName));
      });

      it('returns every record with values of the value model', async () => {
        const { records } = await collect(conn.query('people'));
        expect(ids(records)).toEqual(PEOPLE.map((p) => p['id']));
        for (const p of PEOPLE)
          expectSameRecord(
            records.find((r) => r['id'] === p['id']),
            p,
          );
        const five = records.find((r) => r['id'] === 5) as ConnectorRecord;
        expect(typeof five['id']).toBe('number');
        expect(five['big']).toBe('9007199254740993');
        expect(typeof five['score']).toBe('number');
        expect(typeof five['balance']).toBe('string');
        expect(typeof five['active']).toBe('boolean');
        expect(five['born']).toBe('1970-01-01');
        expect(String(five['updated_at'])).toMatch(/^2024-06-15T12:00:00(\.0+)?Z$/);
        expect((records.find((r) => r['id'] === 6) as ConnectorRecord)['name']).toBe('Fay\nTwo lines');
      });

      it('yields batches no larger than asked', async () => {
        const { records, batches } = await collect(conn.query('people', undefined, { batchSize: 3 }));
        expect(records).toHaveLength(PEOPLE.length);
        expect(Math.max(...batches)).toBeLessThanOrEqual(3);
      });

      for (const c of FILTER_CASES) {
        it(`filters: ${c.name}`, async () => {
          const { records } = await collect(conn.query('people', c.filter));
          expect(ids(records)).toEqual(c.ids);
        });
      }

      it('selects fields, orders and limits', async () => {
        const { records } = await collect(
          conn.query('people', undefined, {
            fields: ['id', 'name'],
            orderBy: [{ field: 'score', direction: 'desc' }],
            limit: 3,
          }),
        );
        expect(records).toEqual([
          { id: 4, name: 'Di "Quoted"' },
          { id: 8, name: 'Hal' },
          { id: 7, name: 'Gus' },
        ]);
      });

      it('reads net change: records at or after the date, ascending by the date field', async () => {
        const { records } = await collect(
          conn.query(
            'people',
            { op: '<>', field: 'id', value: 7 },
            { netChange: { field: 'updated_at', since: '2024-02-01T00:00:00Z' } },
          ),
        );
        expect(records.map((r) => r['id'])).toEqual([3, 2, 8, 5]);
      });

      it('names unknown entities and fields with CON_ codes', async () => {
        expect((await rejection(collect(conn.query('no_such_entity')))).code).toBe('CON_ENTITY_NOT_FOUND');
        expect((await rejection(collect(conn.query('people', { op: '=', field: 'nope', value: 1 })))).code).toBe(
          'CON_FIELD_NOT_FOUND',
        );
      });

      it('stops a query when its signal aborts', async () => {
        const ac = new AbortController();
        const it = conn.query('people', undefined, { batchSize: 2, signal: ac.signal })[Symbol.asyncIterator]();
        expect((await it.next()).value).toHaveLength(2);
        ac.abort();
        expect((await rejection(it.next())).code).toBe('CON_ABORTED');
      });

      it('creates records and returns one result per record, in order', async () => {
        const res = await conn.write('Create', 'people', [
          { id: 101, name: 'New A', active: true, born: '2010-10-10', balance: '1.25' },
          { id: 102, name: 'New B', nope: 1 },
          { id: 103, name: 'New C', score: 'not a number' },
          { id: 104, name: 'New D', updated_at: '2024-07-01T00:00:00Z', big: '9007199254740995' },
        ]);
        expect(res.map((r) => r.ok)).toEqual([true, false, false, true]);
        expect(res[1]?.ok === false && res[1].error.code).toBe('UnknownField');
        expect(res[2]?.ok === false && res[2].error.code).toBe('InvalidValue');
        const { records } = await collect(
          conn.query('people', { op: 'in', field: 'id', values: [101, 102, 103, 104] }),
        );
        expect(ids(records)).toEqual([101, 104]);
        expectSameRecord(
          records.find((r) => r['id'] === 101),
          { id: 101, name: 'New A', active: true, born: '2010-10-10', balance: '1.25', email: null },
        );
        expect(records.find((r) => r['id'] === 104)?.['big']).toBe('9007199254740995');
      });

      it('fails exactly the one bad record of a bulk batch of 1000, in place', async () => {
        const batch: ConnectorRecord[] = Array.from({ length: 1000 }, (_, i) => ({
          id: 1000 + i,
          name: `bulk ${i}`,
          score: i / 4,
          balance: `${i}.50`,
          active: i % 2 === 0,
        }));
        batch[637] = { id: 1637, name: 'bad', score: 'NaN-ish' };
        const res = await conn.write('Create', 'people', batch);
        expect(res).toHaveLength(1000);
        const bad = res.map((r, i) => (r.ok ? -1 : i)).filter((i) => i >= 0);
        expect(bad).toEqual([637]);
        expect(res[637]?.ok === false && res[637].error.code).toBe('InvalidValue');
        const { records } = await collect(
          conn.query(
            'people',
            {
              op: 'and',
              args: [
                { op: '>=', field: 'id', value: 1000 },
                { op: '<', field: 'id', value: 2000 },
              ],
            },
            { fields: ['id'] },
          ),
        );
        expect(records).toHaveLength(999);
      });

      it('a write whose datastore goes away mid-call fails as a whole with a code the run waits on, never as record errors; none of it is half written, and the next write works', async () => {
        const c = await host.open({
          connectorId: target.connector,
          connectionId: `conf-${target.connector}-${++n}`,
          properties: { ...props, ...target.interrupt.properties },
        });
        try {
          const batch: ConnectorRecord[] = Array.from({ length: 1500 }, (_, i) => ({
            id: 5000 + i,
            name: `dropped ${i}`,
            score: i / 2,
          }));
          const outcome = await target.interrupt.during(props, () => c.write('Create', 'people', batch));
          const inRange = async (from: number, to: number): Promise<number> =>
            (
              await collect(
                c.query(
                  'people',
                  {
                    op: 'and',
                    args: [
                      { op: '>=', field: 'id', value: from },
                      { op: '<', field: 'id', value: to },
                    ],
                  },
                  { fields: ['id'] },
                ),
              )
            ).records.length;
          if (outcome.status === 'fulfilled') {
            // The datastore came back in time for the call: every record written, as any write.
            expect(outcome.value.every((r) => r.ok)).toBe(true);
            expect(await inRange(5000, 6500)).toBe(1500);
          } else {
            const err = outcome.reason as FerryError;
            expect(isTargetFailure(err), `${err.code}: ${err.message}`).toBe(true);
            // All or nothing: a batch written again after the datastore is back is never doubled.
            expect([0, 1500]).toContain(await inRange(5000, 6500));
          }
          const after = await c.write('Create', 'people', [{ id: 6600, name: 'after the outage' }]);
          expect(after.map((r) => r.ok)).toEqual([true]);
          expect(await inRange(6600, 6601)).toBe(1);
        } finally {
          await c.close();
        }
      });

      it.runIf(target.enforcesUniqueKeys)('reports a duplicate key per record (DuplicateKey)', async () => {
        const res = await conn.write('Create', 'people', [
          { id: 201, name: 'x' },
          { id: 1, name: 'dup' },
          { id: 201, name: 'dup too' },
          { id: 202, name: 'y' },
        ]);
        expect(res.map((r) => (r.ok ? 'ok' : r.error.code))).toEqual(['ok', 'DuplicateKey', 'DuplicateKey', 'ok']);
      });

      it('updates by key: affected counts, NotFound, MissingKey, in order', async () => {
        const res = await conn.write('Update', 'people', [
          { id: 2, email: 'bob@example.com' },
          { id: 9999, name: 'ghost' },
          { name: 'no key' },
          { id: 3, score: 3.5, name: 'Cy' },
        ]);
        expect(res.map((r) => (r.ok ? `ok${r.affected}` : r.error.code))).toEqual([
          'ok1',
          'NotFound',
          'MissingKey',
          'ok1',
        ]);
        const { records } = await collect(conn.query('people', { op: 'in', field: 'id', values: [2, 3] }));
        expectSameRecord(
          records.find((r) => r['id'] === 2),
          { ...(PEOPLE[1] as ConnectorRecord), email: 'bob@example.com' },
        );
        expectSameRecord(
          records.find((r) => r['id'] === 3),
          { ...(PEOPLE[2] as ConnectorRecord), score: 3.5 },
        );
      });

      it('upserts: inserts new keys, updates existing ones, a repeated key applies in order', async () => {
        const res = await conn.write('Upsert', 'people', [
          { id: 301, name: 'Up A' },
          { id: 7, name: 'Gus 2' },
          { id: 301, name: 'Up A2' },
        ]);
        expect(res.every((r) => r.ok)).toBe(true);
        const { records } = await collect(conn.query('people', { op: 'in', field: 'id', values: [7, 301] }));
        expect(records.find((r) => r['id'] === 301)?.['name']).toBe('Up A2');
        expectSameRecord(
          records.find((r) => r['id'] === 7),
          { ...(PEOPLE[6] as ConnectorRecord), name: 'Gus 2' },
        );
      });

      it('update/inserts by lookup fields', async () => {
        const res = await conn.write(
          'UpdateInsert',
          'people',
          [
            { id: 401, name: 'UI new' },
            { id: 8, name: 'Hal 2' },
          ],
          { keyFields: ['id'] },
        );
        expect(res.map((r) => r.ok && r.affected)).toEqual([1, 1]);
        const { records } = await collect(
          conn.query('people', { op: 'in', field: 'id', values: [8, 401] }, { fields: ['id', 'name'] }),
        );
        expect(records.sort((a, b) => Number(a['id']) - Number(b['id']))).toEqual([
          { id: 8, name: 'Hal 2' },
          { id: 401, name: 'UI new' },
        ]);
      });

      it('deletes by key; a second delete of one key is NotFound', async () => {
        const res = await conn.write('Delete', 'people', [{ id: 401 }, { id: 401 }, { id: 123456 }]);
        expect(res.map((r) => (r.ok ? `ok${r.affected}` : r.error.code))).toEqual(['ok1', 'NotFound', 'NotFound']);
        const { records } = await collect(conn.query('people', { op: '=', field: 'id', value: 401 }));
        expect(records).toEqual([]);
      });

      it.runIf(Boolean(target.nativeQuery))('runs a native query with bound parameters', async () => {
        const nq = target.nativeQuery as { statement: string; params: Value[] };
        const { records } = await collect(conn.nativeQuery(nq.statement, nq.params));
        expect(records.length).toBeGreaterThan(0);
        expect(records.every((r) => Number(r['id']) > Number(nq.params[0]))).toBe(true);
      });

      it.runIf(!target.nativeQuery)('refuses a native query with CON_UNSUPPORTED', () => {
        expect(() => conn.nativeQuery('anything')).toThrow(
          expect.objectContaining({ code: 'CON_UNSUPPORTED' }) as Error,
        );
      });

      it.runIf(target.ensureEntity)('creates a replication target from source metadata and widens it', async () => {
        const people = await conn.entity('people');
        const res = await conn.ensureEntity(people, { entity: 'people_copy' });
        expect(res.created).toBe(true);
        expect(res.entity.fullName).toBe('people_copy');
        expect(res.entity.fields.map((f) => [f.fullName, f.propertyType])).toEqual(
          people.fields.map((f) => [f.fullName, f.propertyType]),
        );
        expect(res.entity.fields.find((f) => f.isPrimaryKey)?.fullName).toBe('id');
        const stats = await transfer(conn.query('people', { op: '<', field: 'id', value: 100 }), (b) =>
          conn.write('Create', 'people_copy', b),
        );
        expect(stats.failed).toBe(0);
        const source = await collect(conn.query('people', { op: '<', field: 'id', value: 100 }));
        const copy = await collect(conn.query('people_copy'));
        expect(ids(copy.records)).toEqual(ids(source.records));
        for (const r of source.records)
          expectSameRecord(
            copy.records.find((c) => c['id'] === r['id']),
            r,
          );
        const wider: EntityMetadata = {
          ...people,
          fields: [
            ...people.fields,
            {
              ...(people.fields[1] as EntityMetadata['fields'][number]),
              name: 'nickname',
              fullName: 'nickname',
              originalName: 'nickname',
              isPrimaryKey: false,
              nullable: true,
            },
          ],
        };
        const again = await conn.ensureEntity(wider, { entity: 'people_copy' });
        expect(again.created).toBe(false);
        expect(again.addedFields).toEqual(['nickname']);
        expect((await conn.entity('people_copy')).fields.map((f) => f.fullName)).toContain('nickname');
      });

      it.runIf(!target.ensureEntity)('refuses ensureEntity with CON_UNSUPPORTED', async () => {
        expect((await rejection(conn.ensureEntity(await conn.entity('people')))).code).toBe('CON_UNSUPPORTED');
      });

      it('streams 1,000,000 records in bounded memory', { timeout: 300_000 }, async () => {
        const rows = 1_000_000;
        await target.createLarge(props, rows);
        const c = await open();
        try {
          await c.metadata({ reload: true });
          const base = process.memoryUsage().heapUsed;
          let peak = base;
          let count = 0;
          let sum = 0;
          let maxBatch = 0;
          for await (const b of c.query('big', undefined, { batchSize: 2000 })) {
            count += b.length;
            maxBatch = Math.max(maxBatch, b.length);
            for (const r of b) sum += Number(r['id']);
            if (count % 50_000 < 2000) peak = Math.max(peak, process.memoryUsage().heapUsed);
          }
          expect(count).toBe(rows);
          expect(sum).toBe((rows * (rows + 1)) / 2);
          expect(maxBatch).toBeLessThanOrEqual(2000);
          // The whole result as records would take well over 300 MB of heap.
          expect(peak - base, `heap grew by ${Math.round((peak - base) / 1e6)} MB`).toBeLessThan(128 * 1024 * 1024);
        } finally {
          await c.close();
        }
      });
    },
  );
}
