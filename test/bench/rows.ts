/** The 10-column rows the replication and Solutions benchmarks copy, written to SQLite and CSV alike. */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import type Database from 'better-sqlite3';

/**
 * Rows 1…`rows` into the table `rows` of `db` (its 10 columns in order) in one transaction, and
 * the same values as CSV lines appended to the open file `fd` (no header).
 */
export function writeBenchRows(db: Database.Database, fd: number, rows: number): void {
  const ins = db.prepare('INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
  const day0 = Date.UTC(2020, 0, 1);
  let buf = '';
  db.transaction(() => {
    for (let i = 1; i <= rows; i++) {
      const created = new Date(day0 + (i % 3650) * 86_400_000).toISOString().slice(0, 10);
      const updated = new Date(day0 + i * 37_000).toISOString().slice(0, 19);
      const note = i % 20 === 0 ? `note, with a comma ${i}` : `note ${i}`;
      const amount = `${Math.floor(i % 100_000) / 100}`;
      const price = Number(((i * 0.37) % 1000).toFixed(3));
      ins.run(
        i,
        `name_${i}`,
        `user${i}@example.com`,
        amount,
        i % 1000,
        price,
        i % 2 === 0 ? 1 : 0,
        created,
        updated,
        note,
      );
      buf += `${i},name_${i},user${i}@example.com,${amount},${i % 1000},${price},${i % 2 === 0},${created},${updated},"${note}"\n`;
      if (buf.length > 1 << 20) {
        fs.writeSync(fd, buf);
        buf = '';
      }
    }
  })();
  fs.writeSync(fd, buf);
}

/** The fields of the bench CSV, with the property types its schema.json declares. */
export const BENCH_CSV_FIELDS = [
  ['id', 'integer'],
  ['name', 'string'],
  ['email', 'string'],
  ['amount', 'decimal'],
  ['qty', 'integer'],
  ['price', 'double'],
  ['active', 'boolean'],
  ['created', 'date'],
  ['updated', 'datetime'],
  ['note', 'string'],
] as const;

/**
 * The connectors bench's 10-column CSV in `folder` (rows.csv with a header, and the schema.json the
 * CSV Connector reads): about 5% of the notes are quoted (they hold a comma).
 */
export async function writeBenchCsv(folder: string, rows: number): Promise<void> {
  await fsp.mkdir(folder, { recursive: true });
  const ws = fs.createWriteStream(path.join(folder, 'rows.csv'));
  ws.write(`${BENCH_CSV_FIELDS.map((f) => f[0]).join(',')}\n`);
  const day0 = Date.UTC(2020, 0, 1);
  let buf = '';
  for (let i = 1; i <= rows; i++) {
    const created = new Date(day0 + (i % 3650) * 86_400_000).toISOString().slice(0, 10);
    const updated = new Date(day0 + i * 37_000).toISOString();
    const note = i % 20 === 0 ? `"note, with a comma ${i}"` : `note ${i}`;
    buf += `${i},name_${i},user${i}@example.com,${Math.floor(i % 100_000) / 100},${i % 1000},${((i * 0.37) % 1000).toFixed(3)},${i % 2 === 0},${created},${updated},${note}\n`;
    if (buf.length > 1 << 20) {
      if (!ws.write(buf)) await once(ws, 'drain');
      buf = '';
    }
  }
  ws.end(buf);
  await once(ws, 'finish');
  const schema = {
    entities: {
      'rows.csv': { fields: BENCH_CSV_FIELDS.map(([name, type]) => ({ name, type, primaryKey: name === 'id' })) },
    },
  };
  await fsp.writeFile(path.join(folder, 'schema.json'), JSON.stringify(schema));
}

/** The bench rows' table in PostgreSQL. */
export const BENCH_PG_DDL = `CREATE TABLE rows (id integer PRIMARY KEY, name text, email text, amount numeric(12,2), qty integer,
  price double precision, active boolean, created date, updated timestamp, note text)`;

/** The bench rows' table in SQLite. */
export const BENCH_SQLITE_DDL = `CREATE TABLE rows (id INTEGER PRIMARY KEY, name TEXT, email TEXT, amount DECIMAL(12,2), qty INTEGER,
  price REAL, active BOOLEAN, created DATE, updated DATETIME, note TEXT)`;
