/**
 * What the chaos trials move and how they check it: one generated data set written as a CSV file
 * (the Integration Solutions' source), a SQLite file (the Replication's) and a PostgreSQL reference
 * table (what the targets are compared with, in SQL); the Solutions of each scenario; and the
 * figures of a target table against the reference — rows, distinct keys, keys the source has, and
 * an MD5 of every compared column ordered by key.
 *
 *   scenario            source     target table             write    net change
 *   is-keyed-nc         CSV        is_keyed_nc (PK id)      Upsert   updated_at
 *   is-keyed-full       CSV        is_keyed_full (PK id)    Upsert   —
 *   is-keyless-nc       CSV        is_keyless_nc (no key)   Create   updated_at
 *   is-keyless-full     CSV        is_keyless_full (no key) Create   —
 *   rs                  SQLite     orders (PK id), events (no key; seq) — a Replication Solution
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { ServiceUnderTest } from '../agent/harness.js';
import { copyMap, createConnection, createSolution, CSV, POSTGRES, prepared, SQLITE } from '../solutions/harness.js';
import { orgPath, statusOf, stamp } from '../solutions/faults-helpers.js';
import { until } from '../agent/harness.js';

export const SCENARIO_NAMES = ['is-keyed-nc', 'is-keyed-full', 'is-keyless-nc', 'is-keyless-full', 'rs'] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

/**
 * A target table a scenario writes, with its unique column (the key, or `seq` of the keyless RS
 * table); `keyed` when the table has that column as its primary key (a record written again
 * replaces its row instead of adding one).
 */
export interface CheckedTable {
  table: string;
  key: string;
  keyed: boolean;
}

export interface Scenario {
  name: ScenarioName;
  label: string;
  tables: CheckedTable[];
  /** The Map's Query reads with net change on updated_at (a Replication always does). */
  netChange: boolean;
}

export const SCENARIOS: Record<ScenarioName, Scenario> = {
  'is-keyed-nc': {
    name: 'is-keyed-nc',
    label: 'IS CSV → keyed table, Upsert, net change',
    tables: [{ table: 'is_keyed_nc', key: 'id', keyed: true }],
    netChange: true,
  },
  'is-keyed-full': {
    name: 'is-keyed-full',
    label: 'IS CSV → keyed table, Upsert, no net change',
    tables: [{ table: 'is_keyed_full', key: 'id', keyed: true }],
    netChange: false,
  },
  'is-keyless-nc': {
    name: 'is-keyless-nc',
    label: 'IS CSV → keyless table, Create, net change',
    tables: [{ table: 'is_keyless_nc', key: 'id', keyed: false }],
    netChange: true,
  },
  'is-keyless-full': {
    name: 'is-keyless-full',
    label: 'IS CSV → keyless table, Create, no net change',
    tables: [{ table: 'is_keyless_full', key: 'id', keyed: false }],
    netChange: false,
  },
  rs: {
    name: 'rs',
    label: 'RS SQLite → PostgreSQL (keyed orders, keyless events)',
    tables: [
      { table: 'orders', key: 'id', keyed: true },
      { table: 'events', key: 'seq', keyed: false },
    ],
    netChange: true,
  },
};

/**
 * The prepare refusals issue 29 accepts as the right outcome: a Create into a table without a key
 * from a source read without net change cannot resume exactly, and may be refused at prepare with
 * an error that says so (as Replication refuses an entity it cannot replicate exactly).
 */
export function refusalAccepted(scenario: ScenarioName, message: string): boolean {
  return scenario === 'is-keyless-full' && /key/i.test(message);
}

// ── the data ───────────────────────────────────────────────────────────────────

/** Row i of the data set: a name with the characters CSV must quote every few rows, an amount null every seventh, a stamp shared by three rows. */
export function row(i: number): { id: number; name: string; amount: number | null; updatedAt: string } {
  const name = i % 11 === 0 ? `O'Hara, "Jr" ${i}` : i % 17 === 0 ? `Zoë Ünal ${i}` : `name ${i}`;
  return { id: i, name, amount: i % 7 === 0 ? null : (i * 37) % 100_000, updatedAt: stamp(Math.floor(i / 3)) };
}

const csvField = (v: string): string => (/[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);

/** The data set as `<folder>/rows.csv` and its schema.json (id the primary key, updated_at a datetime). */
export function writeCsvSource(folder: string, rows: number): void {
  fs.mkdirSync(folder, { recursive: true });
  const fd = fs.openSync(path.join(folder, 'rows.csv'), 'w');
  try {
    fs.writeSync(fd, 'id,name,amount,updated_at\n');
    let chunk = '';
    for (let i = 1; i <= rows; i++) {
      const r = row(i);
      chunk += `${r.id},${csvField(r.name)},${r.amount ?? ''},${r.updatedAt}\n`;
      if (chunk.length > 1 << 20) {
        fs.writeSync(fd, chunk);
        chunk = '';
      }
    }
    fs.writeSync(fd, chunk);
  } finally {
    fs.closeSync(fd);
  }
  const fields = [
    { name: 'id', type: 'integer', primaryKey: true },
    { name: 'name', type: 'string' },
    { name: 'amount', type: 'integer' },
    { name: 'updated_at', type: 'datetime' },
  ];
  fs.writeFileSync(path.join(folder, 'schema.json'), JSON.stringify({ entities: { 'rows.csv': { fields } } }));
}

/** The data set as a SQLite file: `orders` (id the primary key) and `events` (no key; `seq` is the row's number). */
export function writeSqliteSource(file: string, rows: number): void {
  const db = new Database(file);
  try {
    db.exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT, amount INTEGER, updated_at DATETIME NOT NULL);
             CREATE TABLE events (seq INTEGER NOT NULL, name TEXT, amount INTEGER, updated_at DATETIME NOT NULL);`);
    const order = db.prepare('INSERT INTO orders VALUES (?, ?, ?, ?)');
    const event = db.prepare('INSERT INTO events VALUES (?, ?, ?, ?)');
    db.transaction(() => {
      for (let i = 1; i <= rows; i++) {
        const r = row(i);
        order.run(r.id, r.name, r.amount, r.updatedAt);
        event.run(r.id, r.name, r.amount, r.updatedAt);
      }
    })();
  } finally {
    db.close();
  }
}

/** The data set as the PostgreSQL table `source` of `client`'s database: what every target is compared with. */
export async function writeReference(client: pg.Client, rows: number): Promise<void> {
  await client.query('CREATE TABLE source (id integer PRIMARY KEY, name text, amount integer)');
  for (let from = 1; from <= rows; from += 50_000) {
    const ids: number[] = [];
    const names: string[] = [];
    const amounts: Array<number | null> = [];
    for (let i = from; i < Math.min(from + 50_000, rows + 1); i++) {
      const r = row(i);
      ids.push(r.id);
      names.push(r.name);
      amounts.push(r.amount);
    }
    await client.query('INSERT INTO source SELECT * FROM unnest($1::int[], $2::text[], $3::int[])', [
      ids,
      names,
      amounts,
    ]);
  }
}

// ── the figures ────────────────────────────────────────────────────────────────

/** A table's figures, in SQL: rows, distinct keys, distinct keys the source has (1 … rows), and the checksum. */
export interface Figures {
  rows: number;
  keys: number;
  known: number;
  checksum: string | null;
}

/** md5 over every compared column of every row, ordered by key (then by the row, so that doubled rows digest the same way each time). */
export async function figures(client: pg.Client, table: string, key: string, sourceRows: number): Promise<Figures> {
  const exists = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [table]);
  if (exists.rows[0]?.t === null) return { rows: 0, keys: 0, known: 0, checksum: null };
  const line = `concat_ws('|', ${key}::text, coalesce(name, '\\N'), coalesce(amount::text, '\\N'))`;
  const { rows } = await client.query<{ rows: number; keys: number; known: number; checksum: string | null }>(
    `SELECT count(*)::int AS rows, count(DISTINCT ${key})::int AS keys,
            count(DISTINCT ${key}) FILTER (WHERE ${key} BETWEEN 1 AND $1)::int AS known,
            md5(string_agg(${line}, E'\\n' ORDER BY ${key}, ${line})) AS checksum
       FROM ${pg.escapeIdentifier(table)}`,
    [sourceRows],
  );
  const r = rows[0];
  return { rows: r?.rows ?? 0, keys: r?.keys ?? 0, known: r?.known ?? 0, checksum: r?.checksum ?? null };
}

/** A target table against the source: rows missing, rows written more than once, rows the source does not have, and whether the checksums agree. */
export interface Comparison {
  lost: number;
  doubled: number;
  foreign: number;
  checksumEqual: boolean;
  target: Figures;
}

export function compare(target: Figures, source: Figures): Comparison {
  return {
    lost: source.keys - target.known,
    doubled: target.rows - target.keys,
    foreign: target.keys - target.known,
    checksumEqual: target.checksum === source.checksum,
    target,
  };
}

/** Rows in the tables (0 for one not created yet): how far the trial's runs have got. */
export async function rowsIn(client: pg.Client, tables: readonly string[]): Promise<number> {
  let n = 0;
  for (const t of tables) {
    const exists = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [t]);
    if (exists.rows[0]?.t === null) continue;
    n += Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${pg.escapeIdentifier(t)}`)).rows[0]?.n);
  }
  return n;
}

// ── the Solutions ──────────────────────────────────────────────────────────────

/** The Connections every trial shares: the CSV folder and the SQLite file. */
export interface Sources {
  csvId: string;
  sqliteId: string;
}

export async function createSources(sut: ServiceUnderTest, folder: string, file: string): Promise<Sources> {
  return {
    csvId: await createConnection(sut, 'Chaos CSV', CSV, { folder }),
    sqliteId: await createConnection(sut, 'Chaos SQLite', SQLITE, { file }),
  };
}

/** The IS target tables of a trial's database. */
export async function createIsTables(client: pg.Client): Promise<void> {
  await client.query(`CREATE TABLE is_keyed_nc (id integer PRIMARY KEY, name text, amount integer);
                      CREATE TABLE is_keyed_full (id integer PRIMARY KEY, name text, amount integer);
                      CREATE TABLE is_keyless_nc (id integer NOT NULL, name text, amount integer);
                      CREATE TABLE is_keyless_full (id integer NOT NULL, name text, amount integer);`);
}

/** A Solution of a trial, prepared; or the reason prepare refused it. */
export type PreparedSolution =
  { scenario: Scenario; id: string; refused?: undefined } | { scenario: Scenario; id: string; refused: string };

/** The Map of an IS scenario: a Query of the CSV (with net change on updated_at when the scenario has it) and an Upsert or a Create. */
function isMap(s: Scenario, n: number, csvId: string, targetId: string, batchSize: number): unknown {
  const model = copyMap({
    n,
    csvId,
    entity: 'rows',
    targetId,
    table: s.tables[0]?.table as string,
    fields: { amount: 'Q.amount' },
    batchSize,
  }) as {
    blocks: Array<Record<string, unknown>>;
  };
  const [query, write] = model.blocks as [Record<string, unknown>, Record<string, unknown>];
  if (s.netChange) query['netChange'] = { fieldName: 'updated_at' };
  if (s.name.startsWith('is-keyed')) Object.assign(write, { blockType: 'Upsert', action: 'InsertUpdate' });
  return model;
}

/**
 * Creates and prepares the Solution of `s` for trial `trial`, writing into the database of
 * `targetId`. An IS Solution that prepare refuses is answered with the refusal's message (the
 * caller decides whether that refusal is the right outcome).
 */
export async function createScenario(
  sut: ServiceUnderTest,
  o: { agentId: string; sources: Sources; targetId: string; trial: number; batchSize: number },
  s: Scenario,
): Promise<PreparedSolution> {
  const name = `Chaos ${o.trial} ${s.name}`;
  if (s.name === 'rs') {
    const created = await sut.request<{ id: string }>('POST', `${orgPath(sut)}/solutions`, {
      body: {
        name,
        solutionType: 'Replication',
        agentId: o.agentId,
        connectionIdForSource: o.sources.sqliteId,
        connectionIdForTarget: o.targetId,
        replicationSettings: { selectionType: 'Selected', entities: ['orders', 'events'] },
        mapLinks: [],
        checkForBulk: true,
      },
    });
    if (created.status !== 201)
      throw new Error(`RS create answered ${created.status}: ${JSON.stringify(created.body)}`);
    const status = await until(
      `${name} prepared`,
      async () => {
        const st = await statusOf(sut, created.body.id);
        return st === 'OnDemand' || st === 'ProvisionError' ? st : undefined;
      },
      180_000,
    );
    return status === 'OnDemand'
      ? { scenario: s, id: created.body.id }
      : { scenario: s, id: created.body.id, refused: `status ${status}` };
  }
  const n = SCENARIO_NAMES.indexOf(s.name) + 1;
  const sol = await createSolution(sut, o.agentId, name, [isMap(s, n, o.sources.csvId, o.targetId, o.batchSize)]);
  const job = await prepared(sut, sol.id);
  if (job.hasError || job.mapErrorModels.length > 0) {
    return {
      scenario: s,
      id: sol.id,
      refused: [job.message, ...job.mapErrorModels.map((m) => m.message)].filter(Boolean).join(' | '),
    };
  }
  return { scenario: s, id: sol.id };
}

/** A new PostgreSQL Connection for a trial's database. */
export function createTarget(sut: ServiceUnderTest, trial: number, url: string): Promise<string> {
  return createConnection(sut, `Chaos target ${trial}`, POSTGRES, { connectionString: url, schemas: 'public' });
}
