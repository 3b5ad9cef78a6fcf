/**
 * A Map without net change that creates records in a table without a key (nothing in it tells a
 * record written from one not written) resumes a run cut short at the resume point its target
 * committed with the last written batch: a stop, an abort (a killed Agent's next run is the same
 * read), a target that stayed away. The next run writes exactly the rest; a run that reached the
 * end clears the point, so the run after it reads everything again; a source that changed
 * meanwhile is read whole, and the run says so. Real csv and sqlite plugins.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useQueryCreateMap, type QueryCreateCase } from '../../helpers/query-create-map.js';
import { runMap, type MapRecordError, type RunOptions, type RunResult } from '../../../src/maps/runtime/run.js';
import { parseResumePoint } from '../../../src/maps/runtime/resume-point.js';
import { CHECKPOINT_TABLE } from '../../../src/connectors/sdk.js';

const RECORDS = 1000;
const BATCH = 100;
const KEYLESS = 'CREATE TABLE contacts (id INTEGER, full_name TEXT NOT NULL, age_next INTEGER);';
const KEY = 'ferry-map-test';

const newCase = useQueryCreateMap('resume-point');

function people(n: number, tag = 'p'): string {
  let csv = 'id,first,last,age,updated_at\n';
  for (let i = 1; i <= n; i++) csv += `${i},${tag}${i},l${i},${i % 90},2024-01-02T00:00:00Z\n`;
  return csv;
}

/** The query-create Map without net change, into a keyless contacts table. */
async function setUp(): Promise<QueryCreateCase> {
  const model = JSON.parse(
    fs.readFileSync(new URL('../../fixtures/maps/query-create/map.json', import.meta.url), 'utf8'),
  ) as { blocks: Array<Record<string, unknown>> };
  const blocks = model.blocks.map((b) => {
    if (b['blockType'] !== 'Query') return b;
    const { netChange: _drop, ...rest } = b;
    return rest;
  });
  return newCase({
    csv: people(RECORDS),
    model: { batchSize: BATCH, blocks },
    targetSql: KEYLESS,
    target: { busyTimeoutMs: '20' },
  });
}

function table(dbFile: string): { rows: number; distinct: number; names: string[] } {
  const db = new Database(dbFile, { readonly: true });
  try {
    const r = db.prepare('SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids FROM contacts').get() as {
      rows: number;
      distinct_ids: number;
    };
    const names = (
      db.prepare('SELECT DISTINCT substr(full_name, 1, 1) AS t FROM contacts ORDER BY t').all() as { t: string }[]
    ).map((x) => x.t);
    return { rows: r.rows, distinct: r.distinct_ids, names };
  } finally {
    db.close();
  }
}

function point(dbFile: string): ReturnType<typeof parseResumePoint> {
  const db = new Database(dbFile, { readonly: true });
  try {
    const row = db.prepare(`SELECT value FROM "${CHECKPOINT_TABLE}" WHERE key = ?`).get(KEY) as
      { value: string } | undefined;
    return parseResumePoint(row?.value ?? null);
  } finally {
    db.close();
  }
}

async function run(
  env: QueryCreateCase,
  extra: Partial<RunOptions> = {},
): Promise<{ result?: RunResult; error?: unknown; errors: MapRecordError[] }> {
  const errors: MapRecordError[] = [];
  try {
    const result = await runMap(env.plan, {
      connections: env.conns,
      checkpoint: { key: KEY },
      onRecordError: (e) => errors.push(e),
      ...extra,
    });
    return { result, errors };
  } catch (error) {
    return { error, errors };
  }
}

describe('resuming a Map without net change into a table without a key', () => {
  it('a run cut short (an abort, as when the Agent is killed) is resumed at its point: every record written once; the run after a complete one reads everything again', async () => {
    const env = await setUp();
    const ac = new AbortController();
    const cut = await run(env, { signal: ac.signal, onProgress: (p) => p.batches === 3 && ac.abort() });
    expect(cut.result?.stats).toMatchObject({ cancelled: true, processed: 3 * BATCH });
    expect(table(env.dbFile)).toMatchObject({ rows: 3 * BATCH, distinct: 3 * BATCH });
    expect(point(env.dbFile)).toMatchObject({ read: 3 * BATCH });

    const resumed = await run(env);
    expect(resumed.error).toBeUndefined();
    expect(resumed.result?.stats).toMatchObject({ cancelled: false, processed: RECORDS - 3 * BATCH, failed: 0 });
    expect(resumed.result?.notice).toBeUndefined();
    expect(table(env.dbFile)).toMatchObject({ rows: RECORDS, distinct: RECORDS });
    // Read to the end: the point is cleared.
    expect(point(env.dbFile)).toBeNull();

    // A Map without net change copies every record each run: the next run writes them all again.
    const again = await run(env);
    expect(again.result?.stats).toMatchObject({ processed: RECORDS });
    expect(table(env.dbFile)).toMatchObject({ rows: 2 * RECORDS, distinct: RECORDS });
    await env.close();
  });

  it('a target that stays away ends the run at its last written batch; the next run writes exactly the rest', async () => {
    const env = await setUp();
    let lock: Database.Database | undefined;
    const gone = await run(env, {
      targetRetry: { budgetMs: 500, firstDelayMs: 50, maxDelayMs: 200 },
      onProgress: (p) => {
        if (p.batches !== 5) return;
        lock = new Database(env.dbFile);
        lock.exec('BEGIN EXCLUSIVE');
      },
    });
    expect(gone.error).toMatchObject({ code: 'RUN_TARGET_UNAVAILABLE' });
    expect(gone.errors).toEqual([]);
    lock?.exec('ROLLBACK');
    lock?.close();
    expect(table(env.dbFile)).toMatchObject({ rows: 5 * BATCH, distinct: 5 * BATCH });
    const rest = await run(env);
    expect(rest.result?.stats).toMatchObject({ processed: RECORDS - 5 * BATCH, failed: 0 });
    expect(table(env.dbFile)).toMatchObject({ rows: RECORDS, distinct: RECORDS });
    await env.close();
  });

  it('a source replaced since the run was cut short is read whole, and the run says why', async () => {
    const env = await setUp();
    const stop = new AbortController();
    const cut = await run(env, { stop: stop.signal, onProgress: (p) => p.batches === 2 && stop.abort() });
    expect(cut.result?.stats).toMatchObject({ cancelled: true, processed: 2 * BATCH });
    // Another day's file: the same IDs, other people.
    fs.writeFileSync(path.join(env.dir, 'src', 'people.csv'), people(RECORDS, 'q'));
    const next = await run(env);
    expect(next.result?.stats).toMatchObject({ processed: RECORDS, failed: 0 });
    expect(next.result?.notice).toMatch(
      /had written the first 200 records of people; the source no longer reads the same records/,
    );
    expect(table(env.dbFile)).toMatchObject({ rows: RECORDS + 2 * BATCH, names: ['P', 'Q'] });
    await env.close();
  });
});
