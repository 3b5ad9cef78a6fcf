/** The bench's rows, written once into a SQLite file and a CSV file. */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { COLUMNS, FAILING_ROWS, FIELDS, ROWS, RS_SOURCE_INDEX, SQLITE_DDL } from './settings.js';

export interface Data {
  dir: string;
  sqliteFile: string;
  /** The folder of the CSV Connection: rows.csv (with a header) and schema.json. */
  csvFolder: string;
  csvFile: string;
  /** A folder with tiny.csv (10 rows) for the start latency. */
  tinyFolder: string;
}

/** The same ROWS rows into SQLite (the RS source) and a CSV file (the IS source and the anchors'). */
export function generate(dir: string): Data {
  const data: Data = {
    dir,
    sqliteFile: path.join(dir, 'source.db'),
    csvFolder: path.join(dir, 'csv'),
    csvFile: path.join(dir, 'csv', 'rows.csv'),
    tinyFolder: path.join(dir, 'tiny'),
  };
  fs.mkdirSync(data.csvFolder);
  fs.mkdirSync(data.tinyFolder);
  const db = new Database(data.sqliteFile);
  db.pragma('journal_mode = WAL');
  db.exec(SQLITE_DDL);
  const ins = db.prepare('INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
  const fd = fs.openSync(data.csvFile, 'w');
  fs.writeSync(fd, `${COLUMNS.join(',')}\n`);
  const day0 = Date.UTC(2020, 0, 1);
  let buf = '';
  db.transaction(() => {
    for (let i = 1; i <= ROWS; i++) {
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
  fs.closeSync(fd);
  if (RS_SOURCE_INDEX) db.exec('CREATE INDEX rows_updated_at ON rows (julianday(updated_at))');
  db.close();
  const schema = (file: string, fields: ReadonlyArray<readonly [string, string]>) => ({
    entities: { [file]: { fields: fields.map(([name, type]) => ({ name, type, primaryKey: name === 'id' })) } },
  });
  // head.csv: the first FAILING_ROWS rows, for the failing run (when it reads fewer than all).
  if (FAILING_ROWS < ROWS) {
    const text = fs.readFileSync(data.csvFile, 'utf8');
    let end = 0;
    for (let i = 0; i <= FAILING_ROWS && end >= 0; i++) end = text.indexOf('\n', end) + 1;
    fs.writeFileSync(path.join(data.csvFolder, 'head.csv'), text.slice(0, end));
  }
  const described = schema('rows.csv', FIELDS);
  fs.writeFileSync(
    path.join(data.csvFolder, 'schema.json'),
    JSON.stringify({
      entities: {
        ...described.entities,
        ...(FAILING_ROWS < ROWS ? { 'head.csv': described.entities['rows.csv'] } : {}),
      },
    }),
  );
  fs.writeFileSync(
    path.join(data.tinyFolder, 'tiny.csv'),
    `id\n${Array.from({ length: 10 }, (_, i) => i + 1).join('\n')}\n`,
  );
  fs.writeFileSync(path.join(data.tinyFolder, 'schema.json'), JSON.stringify(schema('tiny.csv', [['id', 'integer']])));
  return data;
}
