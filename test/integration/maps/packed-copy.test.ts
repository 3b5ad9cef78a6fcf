/**
 * Packed copies (src/maps/runtime/packed-copy.ts): a Map of a Query and a Create of plain field
 * copies moves its rows packed from the real sqlite plugin's reader thread into a real PostgreSQL
 * table, and gives exactly what the records way gives: the same rows, statistics, progress, record
 * errors and failed-record copies.
 */
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Importing the store helper applies its rule: in CI (CI=true) a missing FERRY_TEST_DATABASE_URL fails the run.
import { createTestDatabase } from '../../helpers/stores.js';
import type { HostConnection } from '../../../src/connectors/connection.js';
import { ConnectorHost } from '../../../src/connectors/host.js';
import { CELL_NUMBER, CELL_TEXT, CELL_VALUE, packRecords, type PackedBatch } from '../../../src/connectors/packed.js';
import { compilePlan } from '../../../src/maps/compiler/plan.js';
import { FormulaEngine } from '../../../src/maps/formula/evaluator.js';
import { fitsCopy, packedCopyOf } from '../../../src/maps/runtime/packed-copy.js';
import {
  runMap,
  type FailedRecordInput,
  type MapRecordError,
  type RunOptions,
  type RunProgress,
} from '../../../src/maps/runtime/run.js';

const CONNECTORS = new URL('../../../connectors/', import.meta.url).pathname;
const URL_SET = Boolean(process.env['FERRY_TEST_DATABASE_URL']);
const ROWS = 2500;
const BATCH = 500;

const block = (n: number): string => `7a1f0000-0000-4000-8000-${String(n).padStart(12, '0')}`;
/** Query `src.people` → Create into `table`: target field ← source field, as given. */
function copyMap(
  table: string,
  pairs: ReadonlyArray<readonly [string, string]>,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    version: '3.0',
    name: 'people',
    batchSize: BATCH,
    blocks: [
      {
        blockId: block(1),
        name: 'Q',
        blockType: 'Query',
        action: 'Query',
        connectionId: 'src',
        entity: 'people',
        ...extra,
      },
      {
        blockId: block(2),
        name: 'W',
        blockType: 'Create',
        action: 'Create',
        connectionId: 'pg',
        entity: table,
        fieldMappings: pairs.map(([t, s]) => ({
          targetField: t,
          targetFormula: s.includes('(') || s.includes('+') ? s : `Q.${s}`,
        })),
      },
    ],
  };
}
const COPY: ReadonlyArray<readonly [string, string]> = [
  ['person_id', 'id'],
  ['full_name', 'name'],
  ['score', 'score'],
  ['born', 'born'],
  ['seen_at', 'updated_at'],
];

describe('fitsCopy', () => {
  it('sends a batch the records way when a value is one a bare field formula would change', () => {
    const ok = packRecords([{ a: 1, b: 'abc' }], ['a', 'b']);
    expect(fitsCopy(ok, 3)).toBe(true);
    expect(fitsCopy(ok, 2)).toBe(false); // text over the limit
    for (const x of [-0, Number.NaN, Number.POSITIVE_INFINITY]) {
      const b = packRecords([{ a: 1 }, { a: x }], ['a']);
      expect(b.tags[1]).toBe(CELL_NUMBER);
      expect(fitsCopy(b, 10)).toBe(false);
    }
    const value: PackedBatch = {
      ...packRecords([{ a: 'x' }], ['a']),
      tags: Uint8Array.of(CELL_VALUE),
      values: ['a long one'],
    };
    expect(fitsCopy(value, 100)).toBe(true);
    expect(fitsCopy(value, 5)).toBe(false);
    expect(packRecords([{ a: 'Zoë' }], ['a']).tags[0]).toBe(CELL_TEXT);
  });
});

describe.skipIf(!URL_SET)('packed copies into PostgreSQL', () => {
  let host: ConnectorHost;
  let tmp: string;
  let src: HostConnection;
  let dst: HostConnection;
  let db: { url: string; drop: () => Promise<void> };
  let client: pg.Client;
  let engine: FormulaEngine;

  beforeAll(async () => {
    host = new ConnectorHost({ dir: CONNECTORS, log: pino({ level: 'silent' }) });
    await host.loadAll();
    tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-packed-copy-'));
    const file = path.join(tmp, 'source.db');
    const s = new Database(file);
    s.exec(
      'CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, score REAL, born DATE, updated_at DATETIME, note TEXT)',
    );
    const ins = s.prepare('INSERT INTO people VALUES (?, ?, ?, ?, ?, ?)');
    s.transaction(() => {
      for (let i = 1; i <= ROWS; i++) {
        const name = i === 1234 ? 'x'.repeat(40) : i % 9 === 0 ? `Zoë ${i} 😀` : i % 13 === 0 ? null : `name ${i}`;
        ins.run(
          i,
          name,
          i % 17 === 0 ? null : i / 4,
          `2024-01-${String((i % 28) + 1).padStart(2, '0')}`,
          `2024-02-01 10:00:${String(i % 60).padStart(2, '0')}`,
          `n${i}`,
        );
      }
    })();
    s.close();
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    src = await host.open({ connectorId: 'SQLite', connectionId: 'src', properties: { file, readerThread: 'on' } });
    dst = await host.open({ connectorId: 'PostgreSQL', connectionId: 'pg', properties: { connectionString: db.url } });
    engine = await FormulaEngine.create();
  });

  afterAll(async () => {
    await engine?.close();
    await client?.end();
    await host?.close();
    await db?.drop();
    if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
  });

  const table = async (name: string, constraint = ''): Promise<void> => {
    await client.query(
      `DROP TABLE IF EXISTS ${name}; CREATE TABLE ${name} (person_id integer, full_name text, score double precision, born date, seen_at timestamp${constraint})`,
    );
  };
  const rows = async (name: string): Promise<unknown[]> =>
    (await client.query(`SELECT * FROM ${name} ORDER BY person_id`)).rows;

  /** Counts the packed and record calls a run makes of both Connections; `written` hears each write's end, `events` each write's start and end. */
  function counted(
    packed: boolean,
    written?: (call: number) => void,
    events: string[] = [],
  ): { connections: Map<string, HostConnection>; calls: Record<string, number> } {
    const calls = { query: 0, queryPacked: 0, write: 0, writePacked: 0 };
    const source = Object.assign(Object.create(src) as HostConnection, {
      query: (...a: Parameters<HostConnection['query']>) => (calls.query++, src.query(...a)),
      queryPacked: (...a: Parameters<HostConnection['queryPacked']>) => (calls.queryPacked++, src.queryPacked(...a)),
    });
    const target = Object.create(dst) as HostConnection;
    Object.defineProperty(target, 'writesPacked', { value: packed });
    let n = 0;
    const hear = async <T>(call: Promise<T>): Promise<T> => {
      const k = ++n;
      events.push(`start ${k}`);
      const out = await call;
      events.push(`end ${k}`);
      written?.(k);
      return out;
    };
    Object.assign(target, {
      write: (...a: Parameters<HostConnection['write']>) => (calls.write++, hear(dst.write(...a))),
      writePacked: (...a: Parameters<HostConnection['writePacked']>) => (
        calls.writePacked++,
        hear(dst.writePacked(...a))
      ),
    });
    return {
      connections: new Map([
        ['src', source],
        ['pg', target],
      ]),
      calls,
    };
  }

  interface Outcome {
    stats: Awaited<ReturnType<typeof runMap>>['stats'];
    errors: MapRecordError[];
    captured: FailedRecordInput[];
    progress: RunProgress[];
    calls: Record<string, number>;
  }
  async function run(
    model: Record<string, unknown>,
    packed: boolean,
    opts: Partial<RunOptions> = {},
    written?: (call: number) => void,
  ): Promise<Outcome> {
    const plan = compilePlan(model, { src: await src.metadata(), pg: await dst.metadata({ reload: true }) });
    const { connections, calls } = counted(packed, written);
    const errors: MapRecordError[] = [];
    const captured: FailedRecordInput[] = [];
    const progress: RunProgress[] = [];
    let n = 0;
    const { stats } = await runMap(plan, {
      connections,
      engine,
      executionId: 'e1',
      onRecordError: (e) => errors.push(e),
      onProgress: (p) => progress.push(p),
      failures: { capture: async (r) => (captured.push(r), `f${++n}`) },
      ...opts,
    });
    return { stats, errors, captured, progress, calls };
  }
  /** What two runs into two tables share: no times, no error ids, the tables' names as T. */
  const comparable = (o: Outcome): unknown => {
    const counts = ({ name, processed, failed }: { name: string; processed: number; failed: number }) => ({
      name,
      processed,
      failed,
    });
    const { processed, failed, batches, cancelled } = o.stats;
    const shared = {
      stats: { processed, failed, batches, cancelled, blocks: o.stats.blocks.map(counts) },
      errors: o.errors.map((e) => ({ ...e, id: '' })),
      captured: o.captured,
      progress: o.progress,
    };
    return JSON.parse(
      JSON.stringify(shared)
        .replace(/(packed|records)_([a-z])\b/g, 'T_$2')
        .replace(/(packed|records)_([a-z])_/g, 'T_$2_'),
    );
  };

  it('copies every row packed, with the statistics and progress of the records way', async () => {
    await table('packed_a');
    await table('records_a');
    const packed = await run(copyMap('packed_a', COPY), true);
    const records = await run(copyMap('records_a', COPY), false);
    expect(packed.calls).toEqual({ query: 0, queryPacked: 1, write: 0, writePacked: ROWS / BATCH });
    expect(records.calls.queryPacked).toBe(0);
    expect(records.calls.writePacked).toBe(0);
    expect(packed.stats).toMatchObject({ processed: ROWS, failed: 0, batches: ROWS / BATCH, cancelled: false });
    expect(comparable(packed)).toEqual(comparable(records));
    const a = await rows('packed_a');
    expect(a).toHaveLength(ROWS);
    expect(a).toEqual(await rows('records_a'));
    expect(a[8]).toMatchObject({ person_id: 9, full_name: 'Zoë 9 😀', score: 2.25 });
  });

  it('a record the target refuses gets the error and failed-record copy the records way gives; the other rows arrive', async () => {
    await table('packed_b', ', CHECK (person_id % 10 <> 0), CHECK (full_name IS NOT NULL)');
    await table('records_b', ', CHECK (person_id % 10 <> 0), CHECK (full_name IS NOT NULL)');
    const packed = await run(copyMap('packed_b', COPY), true);
    const records = await run(copyMap('records_b', COPY), false);
    expect(packed.calls.queryPacked).toBe(1);
    expect(packed.calls.writePacked).toBe(ROWS / BATCH);
    // Both CHECKs refuse rows.
    const refused = Array.from({ length: ROWS }, (_, i) => i + 1).filter(
      (i) => i % 10 === 0 || (i % 13 === 0 && i % 9 !== 0 && i !== 1234),
    );
    expect(packed.stats).toMatchObject({ processed: ROWS, failed: refused.length });
    expect(packed.errors.map((e) => e.sourceRow)).toEqual(refused);
    expect(packed.errors[0]).toMatchObject({
      code: 'RUN_WRITE_FAILED',
      blockName: 'W',
      sourceKey: { id: 10 },
      canReprocess: true,
      failedRecordId: 'f1',
    });
    expect(packed.captured[0]?.source).toEqual({
      id: 10,
      name: 'name 10',
      score: 2.5,
      born: '2024-01-11',
      updated_at: '2024-02-01T10:00:10',
    });
    expect(comparable(packed)).toEqual(comparable(records));
    expect(await rows('packed_b')).toEqual(await rows('records_b'));
  });

  it('a batch with a text over the formula limit goes the records way, where the formula fails that record alone', async () => {
    const short = await FormulaEngine.create({ maxTextLength: 30 });
    try {
      await table('packed_c');
      const out = await run(copyMap('packed_c', COPY), true, { engine: short });
      expect(out.stats).toMatchObject({ processed: ROWS, failed: 1 });
      expect(out.errors.find((e) => e.code === 'FML_TEXT_TOO_LONG')).toMatchObject({
        sourceRow: 1234,
        sourceKey: { id: 1234 },
      });
      // Four batches packed, the one with row 1234 as records.
      expect(out.calls).toMatchObject({ queryPacked: 1, writePacked: ROWS / BATCH - 1, write: 1 });
    } finally {
      await short.close();
    }
  });

  it('a stop ends the run between batches: every batch written is counted, and nothing after them is written', async () => {
    await table('packed_d');
    const stop = new AbortController();
    const seen: number[] = [];
    const out = await run(copyMap('packed_d', COPY), true, {
      stop: stop.signal,
      onProgress: (p) => (seen.push(p.processed), p.batches === 2 && stop.abort()),
    });
    // A batch the target took whole is counted before the next one is written: the stop that its
    // report gave ends the run there, and the target holds what History counts.
    expect(out.stats).toMatchObject({ processed: 2 * BATCH, batches: 2, cancelled: true });
    expect(seen).toEqual([BATCH, 2 * BATCH]);
    expect((await client.query('SELECT count(*)::int AS n FROM packed_d')).rows[0]).toEqual({ n: 2 * BATCH });
  });

  it('an abort while a batch is written reports the rows it refused and counts only the batches before it, as the records way does', async () => {
    const outcomes: Outcome[] = [];
    for (const packed of [true, false]) {
      const name = packed ? 'packed_f' : 'records_f';
      await table(name, ', CHECK (person_id % 10 <> 0)');
      const ctl = new AbortController();
      outcomes.push(
        await run(copyMap(name, COPY), packed, { signal: ctl.signal }, (call) => call === 2 && ctl.abort()),
      );
    }
    const [packed, records] = outcomes as [Outcome, Outcome];
    expect(packed.calls.writePacked).toBe(2);
    expect(packed.stats).toMatchObject({ processed: BATCH, batches: 1, failed: BATCH / 10, cancelled: true });
    // The second batch's refused rows are reported, though the batch is not counted.
    expect(packed.errors.map((e) => e.sourceRow)).toEqual(
      Array.from({ length: (2 * BATCH) / 10 }, (_, i) => 10 * (i + 1)),
    );
    expect(packed.captured).toHaveLength((2 * BATCH) / 10);
    // The Query reads ahead of the writes, by as much as the machine let it before the abort: at
    // least the two batches written, at most one batch more. Everything else is the same both ways.
    for (const o of [packed, records]) {
      const q = o.stats.blocks.find((b) => b.name === 'Q');
      expect(q?.processed).toBeGreaterThanOrEqual(2 * BATCH);
      expect(q?.processed).toBeLessThanOrEqual(3 * BATCH);
    }
    const writesOnly = (o: Outcome): Outcome => ({
      ...o,
      stats: { ...o.stats, blocks: o.stats.blocks.filter((b) => b.name !== 'Q') },
    });
    expect(comparable(writesOnly(packed))).toEqual(comparable(writesOnly(records)));
  });

  it('a failed-record store that fails ends the run with its error, and no write is still out when it has ended', async () => {
    await table('packed_g', ', CHECK (person_id % 10 <> 0)');
    const plan = compilePlan(copyMap('packed_g', COPY), {
      src: await src.metadata(),
      pg: await dst.metadata({ reload: true }),
    });
    const events: string[] = [];
    const { connections } = counted(true, undefined, events);
    await expect(
      runMap(plan, {
        connections,
        engine,
        failures: { capture: () => Promise.reject(new Error('the store is down')) },
      }),
    ).rejects.toThrow('the store is down');
    events.push('ended');
    // The second batch was being written when the first one's report failed: it ended first.
    expect(events).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'ended']);
  });

  it('only a Map of plain copies, with no net change and the key among the fields, is copied packed', async () => {
    await table('packed_e');
    const md = { src: await src.metadata(), pg: await dst.metadata({ reload: true }) };
    const opts = { connections: counted(true).connections };
    const of = (model: Record<string, unknown>) => packedCopyOf(compilePlan(model, md), opts, engine);
    expect(of(copyMap('packed_e', COPY))?.copies.sourceFields).toEqual(['id', 'name', 'score', 'born', 'updated_at']);
    expect(of(copyMap('packed_e', [...COPY.slice(0, 4), ['seen_at', 'UPPER(Q.name)']]))).toBeUndefined();
    expect(of(copyMap('packed_e', COPY.slice(1)))).toBeUndefined(); // the key id is not copied
    expect(of(copyMap('packed_e', [...COPY.slice(0, 4), ['seen_at', 'name']]))).toBeUndefined(); // a field copied twice
    expect(of(copyMap('packed_e', COPY, { netChange: { fieldName: 'updated_at' } }))).toBeUndefined();
    expect(
      packedCopyOf(compilePlan(copyMap('packed_e', COPY), md), { connections: counted(false).connections }, engine),
    ).toBeUndefined();
  });
});
