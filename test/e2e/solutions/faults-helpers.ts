/**
 * Helpers of the fault tests (faults-*.test.ts): Solutions run by real Agent processes while
 * processes are killed, restarted and cut off. Everything here reads what a user or an operator
 * can see — the REST API, the target databases — plus two of the Agent's own files (its durable
 * outbox and its schedule cursor) to know when a report has been delivered or a schedule has
 * reached the Agent, instead of guessing with sleeps.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { expect } from 'vitest';
import {
  ferry,
  install,
  until,
  untilStatus,
  type AgentView,
  type Proc,
  type ServiceUnderTest,
} from '../agent/harness.js';
import { createConnection, CSV, POSTGRES, type Execution } from './harness.js';
import { BUILT_IN_CONNECTORS } from '../../helpers/built-in-connectors.js';

/** An execution as History shows it, with the fields these tests read. */
export interface Run extends Execution {
  agentId: string;
  start: string;
  stop: string | null;
  dueAt: string | null;
  stopped: boolean;
}

export const orgPath = (sut: ServiceUnderTest): string => `/v1/orgs/${sut.orgId}`;
export const solutionPath = (sut: ServiceUnderTest, solutionId: string): string =>
  `/v1/orgs/${sut.orgId}/solutions/${solutionId}`;

/** Every execution of a Solution in History (the last 45 days), oldest first. */
export async function historyOf(sut: ServiceUnderTest, solutionId: string): Promise<Run[]> {
  const res = await sut.request<Run[]>('GET', `${solutionPath(sut, solutionId)}/history?limit=1000`);
  if (res.status !== 200 || !Array.isArray(res.body))
    throw new Error(`history answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The first record error History holds for a run, as `CODE: message`. */
export async function firstRecordError(
  sut: ServiceUnderTest,
  solutionId: string,
  historyId: number,
): Promise<string | undefined> {
  const res = await sut.request<Array<{ code: string; errorMessage: string }>>(
    'GET',
    `${solutionPath(sut, solutionId)}/history/${historyId}/errors?limit=1`,
  );
  const e = Array.isArray(res.body) ? res.body[0] : undefined;
  return e ? `${e.code}: ${e.errorMessage}` : undefined;
}

export async function statusOf(sut: ServiceUnderTest, solutionId: string): Promise<string> {
  const res = await sut.request<{ status: string }>('GET', solutionPath(sut, solutionId));
  if (res.status !== 200) throw new Error(`GET solution answered ${res.status}`);
  return res.body.status;
}

/** The report IDs still waiting in an Agent instance's durable outbox. */
export function queued(instanceDir: string): string[] {
  const file = path.join(instanceDir, 'data', 'outbox.db');
  if (!fs.existsSync(file)) return [];
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('SELECT id FROM outbox ORDER BY seq').all() as Array<{ id: string }>).map((r) => r.id);
  } finally {
    db.close();
  }
}

/** Waits until an Agent instance has delivered every report it queued (so History has all it will get). */
export function untilDelivered(instanceDir: string, ms = 60_000): Promise<true> {
  return until(
    `the outbox of ${path.basename(instanceDir)} delivered`,
    () => (queued(instanceDir).length === 0 ? true : undefined),
    ms,
  );
}

/** A Solution's schedule as an Agent instance holds it (its scheduler's file). */
export interface HeldSchedule {
  rule: unknown;
  disabled: boolean;
}

/** The schedules an Agent instance holds (its scheduler's file), by Solution ID. */
export function heldSchedules(instanceDir: string): Map<string, HeldSchedule> {
  const file = path.join(instanceDir, 'data', 'schedules.db');
  if (!fs.existsSync(file)) return new Map();
  const db = new Database(file, { readonly: true });
  try {
    const rows = db.prepare('SELECT solution_id, rule, disabled FROM schedules').all() as Array<{
      solution_id: string;
      rule: string;
      disabled: number;
    }>;
    return new Map(
      rows.map((r) => [r.solution_id, { rule: JSON.parse(r.rule) as unknown, disabled: r.disabled === 1 }]),
    );
  } catch {
    // Not created yet (the Agent has not opened it).
    return new Map();
  } finally {
    db.close();
  }
}

/** A due time the API accepts for RunOnce: whole seconds, UTC. */
export function runOnceAt(due: Date): Record<string, unknown> {
  return {
    scheduleOption: 'RunOnce',
    runOnceOptions: { dateTime: due.toISOString().replace(/\.\d{3}Z$/, 'Z') },
    recurringOptions: null,
  };
}

/** The smallest recurring schedule: every minute of every day, UTC. */
export const EVERY_MINUTE = {
  scheduleOption: 'Recurring',
  runOnceOptions: null,
  recurringOptions: {
    days: {
      daysOption: 'DaysInterval',
      daysInterval: 1,
      daysIntervalStartDate: null,
      daysOfWeek: null,
      daysOfMonth: null,
      lastDayOfMonth: null,
    },
    times: {
      timeOption: 'TimeInterval',
      timeInterval: 1,
      timeIntervalUnit: 'minutes',
      hourlyMinutes: null,
      timeOfDay: null,
    },
    timeZone: 'UTC',
  },
};

/** Whole seconds from now, so that the due time the API stores is exactly this instant. */
export function secondsAhead(s: number): Date {
  const d = new Date(Date.now() + s * 1000);
  d.setUTCMilliseconds(0);
  return d;
}

/** Waits until the Agent instance holds this RunOnce due time in its scheduler (the Service has delivered the schedule). */
export function untilAgentHoldsRunOnce(instanceDir: string, solutionId: string, due: Date, ms = 30_000): Promise<true> {
  const second = due.getUTCHours() * 3600 + due.getUTCMinutes() * 60 + due.getUTCSeconds();
  return until(
    `the Agent in ${path.basename(instanceDir)} to hold the schedule due ${due.toISOString()}`,
    () => {
      const rule = heldSchedules(instanceDir).get(solutionId)?.rule as { kind?: string; second?: number } | undefined;
      return rule?.kind === 'RunOnce' && rule.second === second ? true : undefined;
    },
    ms,
  );
}

/** The IS Subscription's records processed so far (usage: each run's records are counted once). */
export async function isUsage(sut: ServiceUnderTest): Promise<number> {
  const res = await sut.request<Array<{ name: string; recordsProcessed: number }>>(
    'GET',
    `${orgPath(sut)}/subscriptions`,
  );
  const is = res.body.find((s) => s.name.includes('(IS)'));
  if (!is) throw new Error(`no IS Subscription: ${JSON.stringify(res.body)}`);
  return is.recordsProcessed;
}

// ── Agents ─────────────────────────────────────────────────────────────────────

export interface AgentUnderTest {
  agentId: string;
  /** The instance folder (data/outbox.db, data/schedules.db, …). */
  dir: string;
  instance: number;
  proc: Proc;
}

/** Installs `count` Agent instances in one home (instances 1, 2, …) and runs each, waiting until each has the built-in Connectors. */
export async function runAgents(
  sut: ServiceUnderTest,
  count: number,
  env: Record<string, string> = {},
): Promise<{ home: string; agents: AgentUnderTest[] }> {
  const home = path.join(sut.dataDir, 'agents');
  const installed = [];
  for (let i = 0; i < count; i++) installed.push(await install(sut, home));
  const agents = installed.map((a, i) => ({
    agentId: a.agentId,
    dir: a.dir,
    instance: i + 1,
    proc: runAgent(home, i + 1, env),
  }));
  for (const a of agents) await untilReady(sut, a.agentId);
  return { home, agents };
}

/** `ferry agent run` of one instance of a home. */
export function runAgent(home: string, instance: number, env: Record<string, string> = {}): Proc {
  return ferry(['agent', 'run', '--home', home, '--instance', String(instance)], env);
}

/** Waits until the Agent is Running, connected since `since` (ISO) when given, with its built-in Connectors. */
export async function untilReady(sut: ServiceUnderTest, agentId: string, since?: string): Promise<void> {
  await untilStatus(sut, agentId, 'Running', 90_000);
  await until(
    `agent ${agentId} connected with its connectors`,
    async () => {
      const res = await sut.request<AgentView & { installedConnectors: unknown[] }>(
        'GET',
        `${orgPath(sut)}/agents/${agentId}`,
      );
      const view = res.body;
      const fresh = since === undefined || (view.lastStartTime ?? '') >= since;
      return view.status === 'Running' && fresh && view.installedConnectors.length === BUILT_IN_CONNECTORS
        ? true
        : undefined;
    },
    90_000,
  );
}

// ── an IS Solution: a small CSV file appended to a keyless PostgreSQL table ────

export const PEOPLE = 3;

/**
 * An Integration Solution whose one Map appends the PEOPLE rows of a CSV file to `arrivals` in
 * PostgreSQL. The table has no key and stamps each row with the database's clock when it is
 * written, so the rows count the runs and say when each ran.
 */
export async function appendingSolution(
  sut: ServiceUnderTest,
  opts: { name: string; agentId: string; folder: string; pgUrl: string; client: pg.Client },
): Promise<string> {
  await opts.client.query(
    'CREATE TABLE IF NOT EXISTS arrivals (id integer NOT NULL, name text, loaded_at timestamptz NOT NULL DEFAULT clock_timestamp())',
  );
  fs.mkdirSync(opts.folder, { recursive: true });
  fs.writeFileSync(
    path.join(opts.folder, 'people.csv'),
    ['id,name', ...Array.from({ length: PEOPLE }, (_, i) => `${i + 1},person ${i + 1}`)].join('\n') + '\n',
  );
  fs.writeFileSync(
    path.join(opts.folder, 'schema.json'),
    JSON.stringify({
      entities: {
        'people.csv': {
          fields: [
            { name: 'id', type: 'integer' },
            { name: 'name', type: 'string' },
          ],
        },
      },
    }),
  );
  const csvId = await createConnection(sut, `${opts.name} files`, CSV, { folder: opts.folder });
  const pgId = await createConnection(sut, `${opts.name} DB`, POSTGRES, {
    connectionString: opts.pgUrl,
    schemas: 'public',
  });
  const sol = await sut.request<{ id: string }>('POST', `${orgPath(sut)}/solutions`, {
    body: { name: opts.name, solutionType: 'Integration', agentId: opts.agentId, mapLinks: [] },
  });
  expect(sol.status, JSON.stringify(sol.body)).toBe(201);
  const map = await sut.request('POST', `${solutionPath(sut, sol.body.id)}/maps/advanced`, {
    body: {
      version: '3.0',
      name: `${opts.name} map`,
      batchSize: 100,
      blocks: [
        {
          blockId: '22222222-2222-4222-8222-000000000001',
          name: 'Q',
          blockType: 'Query',
          action: 'Query',
          connectionId: csvId,
          entity: 'people',
        },
        {
          blockId: '22222222-2222-4222-8222-000000000002',
          name: 'Append',
          blockType: 'Create',
          action: 'Create',
          connectionId: pgId,
          entity: 'arrivals',
          fieldMappings: [
            { targetField: 'id', targetFormula: 'Q.id' },
            { targetField: 'name', targetFormula: 'Q.name' },
          ],
        },
      ],
    },
  });
  expect(map.status, JSON.stringify(map.body)).toBe(201);
  return sol.body.id;
}

/** The rows `arrivals` holds, with when each was written (the database's clock). */
export async function arrivals(client: pg.Client): Promise<Array<{ id: number; loadedAt: Date }>> {
  const { rows } = await client.query<{ id: number; loaded_at: Date }>(
    'SELECT id, loaded_at FROM arrivals ORDER BY loaded_at, id',
  );
  return rows.map((r) => ({ id: r.id, loadedAt: r.loaded_at }));
}

// ── a Replication source: SQLite tables with and without a key ───────────────

/** A distinct modification stamp per value, a second apart. */
export function stamp(i: number): string {
  return new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * A SQLite file with `orders` (integer primary key, `orders` rows), `events` (no primary key,
 * `events` rows, `seq` unique by construction) and `notes` (integer primary key, `notes` rows), all
 * with an `updated_at` stamp shared by groups of rows, so that batch boundaries fall inside groups
 * of equal stamps.
 */
export function writeReplicationSource(file: string, counts: { orders: number; events: number; notes: number }): void {
  const src = new Database(file);
  try {
    src.exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT NOT NULL, amount INTEGER, updated_at DATETIME NOT NULL);
              CREATE TABLE events (seq INTEGER NOT NULL, kind TEXT NOT NULL, updated_at DATETIME NOT NULL);
              CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT, updated_at DATETIME NOT NULL);`);
    const order = src.prepare('INSERT INTO orders VALUES (?, ?, ?, ?)');
    const event = src.prepare('INSERT INTO events VALUES (?, ?, ?)');
    const note = src.prepare('INSERT INTO notes VALUES (?, ?, ?)');
    src.transaction(() => {
      for (let i = 1; i <= counts.orders; i++)
        order.run(i, `order ${i}`, i % 7 === 0 ? null : (i * 13) % 10_000, stamp(i % 4_000));
      for (let i = 1; i <= counts.events; i++) event.run(i, `kind ${i % 11}`, stamp(i % 1_500));
      for (let i = 1; i <= counts.notes; i++) note.run(i, i % 5 === 0 ? null : `note ${i}`, stamp(i % 300));
    })();
  } finally {
    src.close();
  }
}

/** A digest of rows as text, in the order given. */
function digest(rows: ReadonlyArray<readonly unknown[]>): string {
  const h = createHash('sha256');
  // Integers may come as numbers (SQLite, int4) or text (int8): both digest as their decimal text.
  const text = (v: unknown): string =>
    v === null || v === undefined
      ? '\\N'
      : typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint'
        ? String(v)
        : JSON.stringify(v);
  for (const r of rows) h.update(r.map(text).join('\u0001') + '\n');
  return h.digest('hex');
}

/** The tables of {@link writeReplicationSource}: each one's unique column (the key, or `seq` of the keyless one) and the columns compared. */
export const SOURCE_TABLES = {
  orders: { key: 'id', columns: 'id, name, amount' },
  events: { key: 'seq', columns: 'seq, kind' },
  notes: { key: 'id', columns: 'id, body' },
} as const;

/**
 * Checks that PostgreSQL holds exactly the source's rows of each table: the same count, no row
 * twice (by its unique column), and the same values (a digest of every row).
 */
export async function expectCopied(
  file: string,
  client: pg.Client,
  tables: ReadonlyArray<keyof typeof SOURCE_TABLES> = ['orders', 'events'],
): Promise<void> {
  const src = new Database(file, { readonly: true });
  try {
    for (const table of tables) {
      const { key, columns } = SOURCE_TABLES[table];
      const want = src.prepare(`SELECT ${columns} FROM ${table} ORDER BY ${key}`).raw().all() as unknown[][];
      const counts = await client.query<{ n: string; d: string }>(
        `SELECT count(*) AS n, count(DISTINCT ${key}) AS d FROM ${table}`,
      );
      expect({ table, rows: Number(counts.rows[0]?.n), distinct: Number(counts.rows[0]?.d) }).toEqual({
        table,
        rows: want.length,
        distinct: want.length,
      });
      const got = await client.query<unknown[]>({
        text: `SELECT ${columns} FROM ${table} ORDER BY ${key}`,
        rowMode: 'array',
      });
      expect(digest(got.rows), `${table}: the values differ from the source`).toBe(digest(want));
    }
  } finally {
    src.close();
  }
}
