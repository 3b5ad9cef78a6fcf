/**
 * What the change-capture tests share: a PostgreSQL database of their own with a keyed table, its
 * Connections through the real plugin host (PostgreSQL source; SQLite or PostgreSQL target), a
 * capture run, and the comparison of source and target in SQL (count, distinct keys, checksum).
 */
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { ConnectorHost } from '../../../src/connectors/host.js';
import type { RunRecordError } from '../../../src/protocol/solutions.js';
import { replicateChanges, type CaptureResult } from '../../../src/solutions/change-capture.js';
import { createTestDatabase } from '../../helpers/stores.js';
import { CONNECTORS_DIR, type Conns } from './replicate-helpers.js';

export interface CaptureDb {
  url: string;
  q<T extends pg.QueryResultRow = Record<string, unknown>>(sql: string, values?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

/** A fresh database; its slots are dropped before it is (a database with a slot cannot be dropped). */
export async function captureDb(): Promise<CaptureDb> {
  const db = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 3 });
  const name = new URL(db.url).pathname.slice(1);
  return {
    url: db.url,
    q: async <T extends pg.QueryResultRow>(sql: string, values?: unknown[]) => (await pool.query<T>(sql, values)).rows,
    drop: async () => {
      await pool.end();
      const admin = new pg.Client({ connectionString: db.url.replace(/\/[^/]*$/, '/postgres') });
      await admin.connect();
      try {
        for (let i = 0; i < 50; i++) {
          const { rows } = await admin.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_replication_slots WHERE database = $1 AND active',
            [name],
          );
          if ((rows[0]?.n ?? 0) === 0) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        await admin.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1', [
          name,
        ]);
      } finally {
        await admin.end();
      }
      await db.drop();
    },
  };
}

/** orders(id key, name, amount numeric, note text, updated timestamptz) with `n` rows. */
export async function makeOrders(db: CaptureDb, n: number, table = 'orders'): Promise<void> {
  await db.q(
    `CREATE TABLE ${table} (id integer PRIMARY KEY, name text NOT NULL, amount numeric(12,2), note text, updated timestamptz NOT NULL DEFAULT now())`,
  );
  await db.q(
    `INSERT INTO ${table} (id, name, amount, note) SELECT i, 'n' || i, (i % 1000) / 10.0, repeat('x', i % 7) FROM generate_series(1, $1) i`,
    [n],
  );
}

export async function openCapture(
  sourceUrl: string,
  target: { connector: string; properties: Record<string, string> },
): Promise<Conns> {
  const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
  await host.loadAll();
  const source = await host.open({
    connectorId: 'PostgreSQL',
    connectionId: 'src',
    properties: { connectionString: sourceUrl },
  });
  const tgt = await host.open({ connectorId: target.connector, connectionId: 'tgt', properties: target.properties });
  return { host, source, target: tgt, close: () => host.close() };
}

export interface CaptureRun extends CaptureResult {
  errors: RunRecordError[];
}

export async function captureRun(
  c: Conns,
  stateDir: string,
  entities: string[],
  extra: { name?: string; continuous?: boolean; signal?: AbortSignal; batchSize?: number } = {},
): Promise<CaptureRun> {
  const errors: RunRecordError[] = [];
  const res = await replicateChanges({
    source: c.source,
    target: c.target,
    entities,
    checkForBulk: true,
    signal: extra.signal ?? new AbortController().signal,
    name: extra.name ?? 'ferry_test_capture',
    settings: { continuous: extra.continuous ?? false, retainedWarnBytes: 1 << 30 },
    stateDir,
    log: pino({ level: process.env['FERRY_TEST_LOG'] ?? 'silent' }),
    onRecordError: (e) => errors.push(e),
    ...(extra.batchSize ? { batchSize: extra.batchSize } : {}),
  });
  return { ...res, errors };
}

/** count, distinct keys and an md5 of every row, as SQL computes them. */
export const PG_SUMMARY = (table: string): string =>
  `SELECT count(*)::int AS n, count(DISTINCT id)::int AS keys,
          coalesce(md5(string_agg(id || '|' || name || '|' || coalesce(amount::text, '') || '|' || coalesce(note, ''), ',' ORDER BY id)), '') AS sum
     FROM ${table}`;

/** {@link PG_SUMMARY} of a table of the database at `url`. */
export async function pgSummary(url: string, table: string): Promise<{ n: number; keys: number; sum: string }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<{ n: number; keys: number; sum: string }>(PG_SUMMARY(table))).rows[0] as {
      n: number;
      keys: number;
      sum: string;
    };
  } finally {
    await c.end();
  }
}

export { path };
