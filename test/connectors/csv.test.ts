import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import type { Value } from '../../src/connectors/sdk.js';
import { CONNECTORS_DIR, PEOPLE, PEOPLE_FIELDS, collect, runConformance } from './conformance.js';

/** CSV text written by the test itself (RFC 4180), independent of the plugin's own writer. */
function cell(v: Value | undefined): string {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return s === '' || /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
const line = (vals: (Value | undefined)[]): string => `${vals.map(cell).join(',')}\n`;

async function tempFolder(): Promise<string> {
  return fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-csv-'));
}

async function writePeople(folder: string): Promise<void> {
  const names = PEOPLE_FIELDS.map((f) => f.name);
  await fsp.writeFile(
    path.join(folder, 'people.csv'),
    line(names) + PEOPLE.map((p) => line(names.map((n) => p[n]))).join(''),
  );
  const schema = {
    entities: {
      'people.csv': { fields: PEOPLE_FIELDS.map((f) => ({ name: f.name, type: f.type, primaryKey: f.name === 'id' })) },
    },
  };
  await fsp.writeFile(path.join(folder, 'schema.json'), JSON.stringify(schema, null, 2));
}

/** Writes `rows` lines of `id,payload` through a stream (never the whole file in memory). */
async function writeLarge(file: string, rows: number): Promise<void> {
  const ws = fs.createWriteStream(file);
  ws.write('id,payload\n');
  const payload = 'x'.repeat(90);
  let buf = '';
  for (let i = 1; i <= rows; i++) {
    buf += `${i},${payload}${i}\n`;
    if (buf.length > 1 << 20) {
      if (!ws.write(buf)) await once(ws, 'drain');
      buf = '';
    }
  }
  ws.end(buf);
  await once(ws, 'finish');
}

/** The conformance suite once as configured by default and once with every query in a scan thread. */
for (const readerThread of ['auto', 'on'] as const) {
  runConformance({
    connector: 'CSV',
    ...(readerThread === 'on' ? { label: 'reader thread' } : {}),
    async setup() {
      const folder = await tempFolder();
      await writePeople(folder);
      return { properties: { folder, readerThread }, cleanup: () => fsp.rm(folder, { recursive: true, force: true }) };
    },
    async createLarge(properties, rows) {
      await writeLarge(path.join(properties['folder'] as string, 'big.csv'), rows);
    },
    enforcesUniqueKeys: false,
    ensureEntity: true,
    interrupt: {
      // The folder (a share, a mounted disk) goes away as the write starts, and comes back once it settled.
      async during(properties, write) {
        const folder = properties['folder'] as string;
        const call = write();
        await fsp.rename(folder, `${folder}.away`);
        const [outcome] = await Promise.allSettled([call]);
        await fsp.rename(`${folder}.away`, folder);
        return outcome;
      },
    },
  });
}

describe('csv connector', () => {
  let host: ConnectorHost;
  let folder: string;
  let conn: HostConnection;

  beforeAll(async () => {
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
    folder = await tempFolder();
    await fsp.writeFile(
      path.join(folder, 'Order Lines-2024.csv'),
      'Order No,Unit Price ($),zip,when,flag,note\n1,9.5,01234,2024-01-02T03:04:05Z,yes,plain\n2,10,12345,2024-02-03T00:00:00Z,no,"with ""quotes"", commas\nand lines"\n',
    );
    await fsp.writeFile(path.join(folder, 'no-newline.csv'), 'a,b\n1,x');
    await fsp.writeFile(path.join(folder, 'readme.txt'), 'not an entity');
    conn = await host.open({ connectorId: 'CSV', connectionId: 'csv-own', properties: { folder } });
  });
  afterAll(async () => {
    await host.close();
    await fsp.rm(folder, { recursive: true, force: true });
  });

  it('makes one entity per .csv file, with fullNames from file and header names and inferred types', async () => {
    const md = await conn.metadata();
    expect(md.entities.map((e) => e.fullName)).toEqual(['Order_Lines_2024', 'no_newline']);
    const e = md.entities[0];
    expect(e?.originalName).toBe('Order Lines-2024.csv');
    expect(e?.fields.map((f) => [f.fullName, f.originalName, f.propertyType])).toEqual([
      ['Order_No', 'Order No', 'integer'],
      ['Unit_Price____', 'Unit Price ($)', 'double'],
      // Leading zeros make a column text: a number would lose them.
      ['zip', 'zip', 'string'],
      ['when', 'when', 'datetime'],
      ['flag', 'flag', 'boolean'],
      ['note', 'note', 'string'],
    ]);
  });

  it('reads quoted fields with quotes, delimiters and line breaks', async () => {
    const { records } = await collect(conn.query('Order_Lines_2024'));
    expect(records).toEqual([
      { Order_No: 1, Unit_Price____: 9.5, zip: '01234', when: '2024-01-02T03:04:05Z', flag: true, note: 'plain' },
      {
        Order_No: 2,
        Unit_Price____: 10,
        zip: '12345',
        when: '2024-02-03T00:00:00Z',
        flag: false,
        note: 'with "quotes", commas\nand lines',
      },
    ]);
  });

  it('appends to a file that does not end with a line break', async () => {
    const res = await conn.write('Create', 'no_newline', [{ a: 2, b: 'y' }]);
    expect(res).toEqual([{ ok: true, affected: 1 }]);
    expect(await fsp.readFile(path.join(folder, 'no-newline.csv'), 'utf8')).toBe('a,b\n1,x\n2,y\n');
  });

  it('keeps the empty string apart from null', async () => {
    await conn.write('Create', 'no_newline', [
      { a: 3, b: '' },
      { a: 4, b: null },
    ]);
    const { records } = await collect(conn.query('no_newline', { op: '>=', field: 'a', value: 3 }));
    expect(records).toEqual([
      { a: 3, b: '' },
      { a: 4, b: null },
    ]);
  });

  it('needs key fields for keyed writes on a file without a declared key', async () => {
    await expect(conn.write('Update', 'no_newline', [{ a: 1, b: 'z' }])).rejects.toMatchObject({
      code: 'CON_UNSUPPORTED',
    });
    expect(await conn.write('Update', 'no_newline', [{ a: 1, b: 'z' }], { keyFields: ['a'] })).toEqual([
      { ok: true, affected: 1 },
    ]);
  });

  it('reports a missing folder as CON_UNREACHABLE and a broken schema file as CON_PROPERTIES_INVALID', async () => {
    const missing = await host.open({
      connectorId: 'CSV',
      connectionId: 'csv-missing',
      properties: { folder: path.join(folder, 'nope') },
    });
    await expect(missing.test()).rejects.toMatchObject({ code: 'CON_UNREACHABLE', kind: 'transient' });
    await missing.close();
    await fsp.writeFile(
      path.join(folder, 'bad-schema.json'),
      '{ "entities": { "x.csv": { "fields": [ { "name": "a", "type": "money" } ] } } }',
    );
    const broken = await host.open({
      connectorId: 'CSV',
      connectionId: 'csv-broken',
      properties: { folder, schemaFile: 'bad-schema.json' },
    });
    await expect(broken.test()).rejects.toMatchObject({ code: 'CON_PROPERTIES_INVALID' });
    await broken.close();
  });

  it('fails the test, naming the delimiter it sees, when a header reads as one column but holds another delimiter', async () => {
    const dir = await tempFolder();
    try {
      await fsp.writeFile(path.join(dir, 'fine.csv'), 'id,name\n1,a\n');
      await fsp.writeFile(
        path.join(dir, 'people.csv'),
        'id;first;last;email;age;city;updated_at\n1;Ann;Lee;ann@x.org;31;Oslo;2024-01-01\n',
      );
      const wrong = await host.open({ connectorId: 'CSV', connectionId: 'csv-semicolon', properties: { folder: dir } });
      const failure = wrong.test();
      await expect(failure).rejects.toMatchObject({ code: 'CON_PROPERTIES_INVALID', kind: 'config' });
      await expect(failure).rejects.toThrow(
        /header of people\.csv reads as one column with the delimiter , .*holds ;, which makes 7 columns: set the Connection's property delimiter to ;/,
      );
      await wrong.close();
      // With the delimiter the file uses, the test passes, and a one-column file without another delimiter is fine.
      await fsp.writeFile(path.join(dir, 'fine.csv'), 'id;name\n1;a\n');
      await fsp.writeFile(path.join(dir, 'single.csv'), 'note\nhello, world\n');
      const right = await host.open({
        connectorId: 'CSV',
        connectionId: 'csv-semicolon-ok',
        properties: { folder: dir, delimiter: ';' },
      });
      await expect(right.test()).resolves.toBeUndefined();
      await right.close();
      // A tab-separated file read with ;: the hint names tab.
      await fsp.writeFile(path.join(dir, 'people.csv'), 'id\tfirst\n1\tAnn\n');
      const tabbed = await host.open({
        connectorId: 'CSV',
        connectionId: 'csv-tab',
        properties: { folder: dir, delimiter: ';' },
      });
      await expect(tabbed.test()).rejects.toThrow(
        /holds tab, which makes 2 columns: set the Connection's property delimiter to tab/,
      );
      await tabbed.close();
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });

  it(
    'updates a record of a 1,000,000-row file by streaming it through, in bounded memory',
    { timeout: 120_000 },
    async () => {
      const big = await tempFolder();
      try {
        await writeLarge(path.join(big, 'big.csv'), 1_000_000);
        const c = await host.open({ connectorId: 'CSV', connectionId: 'csv-big', properties: { folder: big } });
        const base = process.memoryUsage().heapUsed;
        let peak = base;
        const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 20);
        const res = await c.write(
          'Update',
          'big',
          [
            { id: 500_000, payload: 'changed' },
            { id: 2_000_000, payload: 'absent' },
          ],
          { keyFields: ['id'] },
        );
        clearInterval(timer);
        expect(res.map((r) => (r.ok ? r.affected : r.error.code))).toEqual([1, 'NotFound']);
        expect(peak - base, `heap grew by ${Math.round((peak - base) / 1e6)} MB`).toBeLessThan(128 * 1024 * 1024);
        const { records } = await collect(c.query('big', { op: 'in', field: 'id', values: [499_999, 500_000] }));
        expect(records).toEqual([
          { id: 499_999, payload: `${'x'.repeat(90)}499999` },
          { id: 500_000, payload: 'changed' },
        ]);
        await c.close();
      } finally {
        await fsp.rm(big, { recursive: true, force: true });
      }
    },
  );
});
