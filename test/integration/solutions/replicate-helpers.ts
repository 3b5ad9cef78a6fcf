/**
 * What the replication tests share: a source SQLite database with keyed, keyless and stamp-less
 * tables, Connections opened through the real plugin host, a run with its record errors, and
 * snapshots of an entity compared across datastores.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { ConnectorHost } from '../../../src/connectors/host.js';
import type { HostConnection } from '../../../src/connectors/connection.js';
import type { ConnectorRecord, ConnectionProperties } from '../../../src/connectors/sdk.js';
import type { RunRecordError } from '../../../src/protocol/solutions.js';
import {
  replicate,
  type ReplicateOptions,
  type ReplicateResult,
  type ReplicationStateStore,
} from '../../../src/solutions/replicate.js';

export const CONNECTORS_DIR = path.resolve(import.meta.dirname, '../../../connectors');
export const ORDERS = 20_000;
export const EVENTS = 5_000;
const T0 = Date.UTC(2024, 0, 1);
/** Seven orders share each second: batches end in the middle of a watermark's records. */
export const stamp = (i: number): string => new Date(T0 + Math.floor(i / 7) * 1000).toISOString();
/** Distinct instants after every stamp of the source. */
export const later = (i: number): string => stamp((ORDERS + i) * 7);

export function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-rs-'));
}

/**
 * orders: keyed, modified_at (20,000 rows); customers: text key, updated; events: no key,
 * changed_on; regions: keyed, no stamp; codes: neither key nor stamp; notes: no key, LastModified (120).
 */
export function makeSource(file: string): void {
  const db = new Database(file);
  db.exec(`
    CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, amount DECIMAL(12,2), qty INTEGER, price REAL, modified_at DATETIME);
    CREATE TABLE customers (code TEXT PRIMARY KEY, name TEXT, updated DATETIME);
    CREATE TABLE events (kind TEXT, payload TEXT, changed_on DATETIME);
    CREATE TABLE regions (id INTEGER PRIMARY KEY, name TEXT);
    CREATE TABLE codes (code TEXT, label TEXT);
    CREATE TABLE notes (body TEXT, LastModified DATETIME);`);
  const ins = db.prepare('INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)');
  const insC = db.prepare('INSERT INTO customers VALUES (?, ?, ?)');
  const insE = db.prepare('INSERT INTO events VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= ORDERS; i++)
      ins.run(i, `c${i % 300}`, `${i % 1000}.${String(i % 100).padStart(2, '0')}`, i % 17, (i * 0.25) % 100, stamp(i));
    for (let i = 0; i < 300; i++) insC.run(`c${i}`, `Customer ${i}`, stamp(i * 3));
    // Keyless and with repeated rows: identical kind and payload at different times.
    for (let i = 1; i <= EVENTS; i++) insE.run(`k${i % 5}`, `p${i % 50}`, stamp(i));
    for (let i = 1; i <= 20; i++) db.prepare('INSERT INTO regions VALUES (?, ?)').run(i, `r${i}`);
    for (let i = 1; i <= 5; i++) db.prepare('INSERT INTO codes VALUES (?, ?)').run(`x${i}`, `l${i}`);
    for (let i = 1; i <= 120; i++) db.prepare('INSERT INTO notes VALUES (?, ?)').run(`n${i % 40}`, stamp(i));
  })();
  db.close();
}

/** Runs SQL on a SQLite file. */
export function sqlite(file: string, sql: string, ...params: unknown[]): void {
  const db = new Database(file);
  try {
    if (params.length) db.prepare(sql).run(...params);
    else db.exec(sql);
  } finally {
    db.close();
  }
}

export interface Conns {
  host: ConnectorHost;
  source: HostConnection;
  target: HostConnection;
  close(): Promise<void>;
}

export async function open(
  sourceFile: string,
  target: { connector: string; properties: ConnectionProperties },
): Promise<Conns> {
  const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
  await host.loadAll();
  const source = await host.open({ connectorId: 'SQLite', connectionId: 'src', properties: { file: sourceFile } });
  const tgt = await host.open({ connectorId: target.connector, connectionId: 'tgt', properties: target.properties });
  return { host, source, target: tgt, close: () => host.close() };
}

export interface Run extends ReplicateResult {
  errors: RunRecordError[];
  /** processed per entity. */
  by: Record<string, number>;
}

export async function run(
  c: Conns,
  state: ReplicationStateStore,
  entities: string[],
  extra: Partial<ReplicateOptions> = {},
): Promise<Run> {
  const errors: RunRecordError[] = [];
  const res = await replicate({
    source: c.source,
    target: c.target,
    entities,
    checkForBulk: true,
    signal: new AbortController().signal,
    state,
    log: pino({ level: 'silent' }),
    onRecordError: (e) => errors.push(e),
    ...extra,
  });
  return { ...res, errors, by: Object.fromEntries(res.statistics.map((s) => [s.entity ?? s.mapName, s.processed])) };
}

/** Records of an entity as comparable text lines, sorted: datetimes as instants, decimals as numbers. */
export async function snapshot(conn: HostConnection, entity: string): Promise<string[]> {
  const md = await conn.entity(entity, { reload: true });
  const types = new Map(md.fields.map((f) => [f.fullName, f.propertyType]));
  const out: string[] = [];
  for await (const batch of conn.query(entity, undefined, { batchSize: 1000 })) {
    for (const rec of batch) out.push(line(rec, types));
  }
  return out.sort();
}

function line(rec: ConnectorRecord, types: Map<string, string>): string {
  const norm: Record<string, unknown> = {};
  for (const k of Object.keys(rec).sort()) {
    const v = rec[k] ?? null;
    const t = types.get(k);
    norm[k] =
      v === null
        ? null
        : t === 'datetime'
          ? Date.parse(String(v).endsWith('Z') || /[+-]\d\d:?\d\d$/.test(String(v)) ? String(v) : `${String(v)}Z`)
          : t === 'decimal' || t === 'integer' || t === 'double'
            ? Number(v)
            : v;
  }
  return JSON.stringify(norm);
}

/** How many records an entity holds. */
export async function count(conn: HostConnection, entity: string): Promise<number> {
  let n = 0;
  for await (const batch of conn.query(entity, undefined, { batchSize: 5000 })) n += batch.length;
  return n;
}
