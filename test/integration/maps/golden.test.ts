/**
 * Golden Map fixtures: test/fixtures/maps/<case>/{map.json, input/, expected.json}, run through the
 * compiler and the runtime against the real csv (connection "src" = the input folder) and sqlite
 * (connection "db" = a fresh database from input/target.sql) plugins. A case with message.json
 * hands it to the run (Wait For Message / Wait For Request); expected.json may give the reply sent
 * and per-Block statistics by Block name.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../../src/connectors/host.js';
import type { HostConnection } from '../../../src/connectors/connection.js';
import type { ConnectionMetadata, ConnectorRecord } from '../../../src/connectors/sdk.js';
import { compilePlan } from '../../../src/maps/compiler/plan.js';
import { runMap, type MapRecordError } from '../../../src/maps/runtime/run.js';
import { MemoryWatermark } from '../../../src/maps/runtime/watermark.js';
import { FailedRecordStore } from '../../../src/failures/store.js';
import { reprocessFailed } from '../../../src/maps/reprocess-failed.js';

const FIXTURES = new URL('../../fixtures/maps/', import.meta.url).pathname;
const CONNECTORS = new URL('../../../connectors/', import.meta.url).pathname;
const cases = fs.readdirSync(FIXTURES).filter((d) => fs.existsSync(path.join(FIXTURES, d, 'map.json')));

interface Expected {
  tables: Record<string, Record<string, unknown>[]>;
  stats: { processed: number; failed: number };
  errors: { blockName: string; code: string }[];
  lastRunDate?: string;
  blocks?: Record<string, { processed: number; failed: number }>;
  reply?: Record<string, unknown> | null;
}

let host: ConnectorHost;
let tmp: string;
beforeAll(async () => {
  host = new ConnectorHost({ dir: CONNECTORS, log: pino({ level: 'silent' }) });
  await host.loadAll();
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-golden-'));
});
afterAll(async () => {
  await host.close();
  await fsp.rm(tmp, { recursive: true, force: true });
});

async function setUp(name: string): Promise<{
  conns: Map<string, HostConnection>;
  metadata: Record<string, ConnectionMetadata>;
  dbFile: string;
  dir: string;
}> {
  const dir = path.join(tmp, name);
  await fsp.cp(path.join(FIXTURES, name, 'input'), path.join(dir, 'src'), { recursive: true });
  const dbFile = path.join(dir, 'target.db');
  const db = new Database(dbFile);
  db.exec(await fsp.readFile(path.join(dir, 'src', 'target.sql'), 'utf8'));
  db.close();
  await fsp.rm(path.join(dir, 'src', 'target.sql'));
  const src = await host.open({
    connectorId: 'CSV',
    connectionId: `src-${name}`,
    properties: { folder: path.join(dir, 'src') },
  });
  const dst = await host.open({ connectorId: 'SQLite', connectionId: `db-${name}`, properties: { file: dbFile } });
  const conns = new Map([
    ['src', src],
    ['db', dst],
  ]);
  return { conns, metadata: { src: await src.metadata(), db: await dst.metadata() }, dbFile, dir };
}

function tables(dbFile: string, names: string[]): Record<string, unknown[]> {
  const db = new Database(dbFile, { readonly: true });
  try {
    return Object.fromEntries(names.map((t) => [t, db.prepare(`SELECT * FROM ${t} ORDER BY 1`).all()]));
  } finally {
    db.close();
  }
}

describe.each(cases)('golden Map %s', (name) => {
  it('writes the expected records, errors and statistics', async () => {
    const expected = JSON.parse(await fsp.readFile(path.join(FIXTURES, name, 'expected.json'), 'utf8')) as Expected;
    const model = JSON.parse(await fsp.readFile(path.join(FIXTURES, name, 'map.json'), 'utf8')) as {
      lastRunDate?: string;
    };
    const { conns, metadata, dbFile, dir } = await setUp(name);
    const plan = compilePlan(model, metadata);
    const errors: MapRecordError[] = [];
    const progress: number[] = [];
    const store = new FailedRecordStore(path.join(dir, 'failures'));
    const wm = new MemoryWatermark(model.lastRunDate ?? null);
    const messageFile = path.join(FIXTURES, name, 'message.json');
    const message = fs.existsSync(messageFile)
      ? (JSON.parse(await fsp.readFile(messageFile, 'utf8')) as unknown)
      : undefined;
    const replies: ConnectorRecord[] = [];
    const { stats, reply } = await runMap(plan, {
      connections: conns,
      watermark: wm,
      failures: store,
      ...(message !== undefined ? { message } : {}),
      onReply: (r) => void replies.push(r),
      onRecordError: (e) => errors.push(e),
      onProgress: (p) => progress.push(p.processed),
    });
    expect(tables(dbFile, Object.keys(expected.tables))).toEqual(expected.tables);
    expect({ processed: stats.processed, failed: stats.failed }).toEqual(expected.stats);
    expect(errors.map((e) => ({ blockName: e.blockName, code: e.code }))).toEqual(expected.errors);
    expect(progress.at(-1)).toBe(expected.stats.processed);
    if (expected.blocks) {
      const byName = Object.fromEntries(
        stats.blocks.map((b) => [b.name, { processed: b.processed, failed: b.failed }]),
      );
      expect(byName).toEqual(expected.blocks);
    }
    if (expected.reply !== undefined) {
      expect(reply).toEqual(expected.reply);
      expect(replies).toEqual(expected.reply === null ? [] : [expected.reply]);
    }
    if (expected.lastRunDate) {
      expect(Date.parse(stats.lastRunDate ?? '')).toBe(Date.parse(expected.lastRunDate));
      expect(Date.parse((await wm.load())?.lastRunDate ?? '')).toBe(Date.parse(expected.lastRunDate));
    }
    // every failing source record was captured once, holding only the fields the Map reads
    const failed = store.list();
    expect(failed).toHaveLength(expected.stats.failed);
    for (const f of failed) expect(Object.keys(f.source).sort()).toEqual([...plan.sourceFields].sort());
    // reprocess once from the stored copy; the second time is refused
    if (failed.length) {
      store.mark(failed.map((f) => f.id));
      const again = await reprocessFailed(plan, store, { connections: conns });
      expect(again.reprocessed).toHaveLength(failed.length);
      await expect(
        reprocessFailed(plan, store, { connections: conns, ids: [failed[0]?.id ?? ''] }),
      ).rejects.toMatchObject({ code: 'RUN_ALREADY_REPROCESSED' });
    }
    store.close();
    for (const c of conns.values()) await c.close();
  });
});
