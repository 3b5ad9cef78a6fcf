/** The bench's rows, written once into a SQLite file and a CSV file. */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { writeBenchRows } from '../rows.js';
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
  const fd = fs.openSync(data.csvFile, 'w');
  fs.writeSync(fd, `${COLUMNS.join(',')}\n`);
  writeBenchRows(db, fd, ROWS);
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
