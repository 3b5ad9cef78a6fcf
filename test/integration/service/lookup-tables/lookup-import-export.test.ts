import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Value {
  value1: string;
  value2: string;
}
interface Table {
  id: string;
  name: string;
  modificationBy: string;
  lookupTableValues: Value[];
}
interface ImportResult {
  lookupTableId: string;
  valuesImported: number;
  valuesRemoved: number;
  valueCount: number;
}
interface Problem {
  status: number;
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}

const MISSING = '11111111-1111-4111-8111-111111111111';
const CSV = { 'content-type': 'text/csv' };

describe.each(STORE_TARGETS)('Lookup Table import and export on $name', (target) => {
  let svc: TestService;
  let L: string;
  beforeAll(async () => {
    svc = await startService(target);
    L = `/v1/orgs/${svc.orgId}/lookuptables`;
  });
  afterAll(async () => svc?.close());

  let counter = 0;
  const newTable = async (values: Value[] = []): Promise<Table> => {
    counter += 1;
    const res = await svc.request<Table>('POST', L, { body: { name: `Import ${counter}`, lookupTableValues: values } });
    expect(res.status).toBe(201);
    return res.body;
  };
  const pairsOf = async (id: string): Promise<Array<[string, string]>> => {
    const res = await svc.request<Table>('GET', `${L}/${id}`);
    return res.body.lookupTableValues.map((v) => [v.value1, v.value2]);
  };
  const importCsv = (id: string, body: unknown, query = '', headers?: Record<string, string>) =>
    svc.request<ImportResult & Problem>('POST', `${L}/${id}/import${query}`, { body, ...(headers ? { headers } : {}) });

  describe('import', () => {
    it('takes the CSV as raw text/csv with a header row by default, and appends', async () => {
      const t = await newTable([{ value1: 'old', value2: 'kept' }]);
      const res = await importCsv(t.id, 'value1,value2\nNO,Norway\nSE,Sweden\n', '', CSV);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ lookupTableId: t.id, valuesImported: 2, valuesRemoved: 0, valueCount: 3 });
      expect(await pairsOf(t.id)).toEqual([
        ['old', 'kept'],
        ['NO', 'Norway'],
        ['SE', 'Sweden'],
      ]);
    });

    it('takes the CSV as a JSON string, as {commaSeparatedValues, hasHeaderRow}, or as text/plain', async () => {
      const t = await newTable();
      expect((await importCsv(t.id, JSON.stringify('a,1\nb,2'), '?hasHeaderRow=false')).body.valuesImported).toBe(2);
      expect((await importCsv(t.id, { commaSeparatedValues: 'c,3', hasHeaderRow: false })).body.valuesImported).toBe(1);
      expect((await importCsv(t.id, { CommaSeparatedValues: 'header,row\nd,4' })).body.valuesImported).toBe(1);
      expect(
        (await importCsv(t.id, 'e,5', '?hasHeaderRow=false', { 'content-type': 'text/plain' })).body.valuesImported,
      ).toBe(1);
      expect(await pairsOf(t.id)).toEqual([
        ['a', '1'],
        ['b', '2'],
        ['c', '3'],
        ['d', '4'],
        ['e', '5'],
      ]);
    });

    it('replaces the values with replace=true, and stamps the table with the caller', async () => {
      const t = await newTable([
        { value1: 'x', value2: 'y' },
        { value1: 'z', value2: 'w' },
      ]);
      const user = await addUser(svc, svc.orgId, 'User');
      const res = await svc.request<ImportResult>('POST', `${L}/${t.id}/import?replace=true&hasHeaderRow=false`, {
        auth: user,
        body: 'n,1',
        headers: CSV,
      });
      expect(res.body).toEqual({ lookupTableId: t.id, valuesImported: 1, valuesRemoved: 2, valueCount: 1 });
      expect(await pairsOf(t.id)).toEqual([['n', '1']]);
      expect((await svc.request<Table>('GET', `${L}/${t.id}`)).body.modificationBy).toBe(user.email);
    });

    it('reads RFC 4180: quoted commas, doubled quotes, line breaks inside quotes, CRLF, empty value2, BOM, empty lines, unicode', async () => {
      const t = await newTable();
      const text =
        '\ufeffvalue1,value2\r\n' +
        '"Smith, John","He said ""hi"""\r\n' +
        '"multi\nline","a\r\nb"\r\n' +
        'no value2,\r\n' +
        'quoted empty,""\r\n' +
        '\r\n' +
        'Zürich 中文 😀,ünïcödé\r\n' +
        ' spaced , kept \n' +
        'last,no newline at the end';
      const res = await importCsv(t.id, text, '', CSV);
      expect(res.status, res.text).toBe(200);
      expect(await pairsOf(t.id)).toEqual([
        ['Smith, John', 'He said "hi"'],
        ['multi\nline', 'a\r\nb'],
        ['no value2', ''],
        ['quoted empty', ''],
        ['Zürich 中文 😀', 'ünïcödé'],
        [' spaced ', ' kept '],
        ['last', 'no newline at the end'],
      ]);
      expect(
        (await svc.request<Value>('GET', `${L}/${t.id}/values/value2/${encodeURIComponent('Smith, John')}`)).body
          .value2,
      ).toBe('He said "hi"');
    });

    it('refuses a record with the wrong number of fields with a 400 naming the line, and imports nothing', async () => {
      const t = await newTable([{ value1: 'before', value2: '1' }]);
      const cases: Array<[string, number, RegExp]> = [
        ['value1,value2\na,1\nb,2,3\nc,3\n', 3, /3 fields/],
        ['value1,value2\na,1\n\n"multi\nline",x,y\n', 4, /3 fields/],
        ['value1,value2\na,1\nonly one field\n', 3, /1 field/],
        ['value1,value2\na,1\n,missing value1\n', 3, /value1 is empty/],
        [`value1,value2\na,1\nb,${'x'.repeat(401)}\n`, 3, /longer than 400/],
        ['value1,value2\na,1\n"unclosed,2\nb,3\n', 3, /Quote Not Closed/],
        ['value1,value2\na,1\nb"x",2\n', 3, /Quote/],
      ];
      for (const [text, line, message] of cases) {
        const res = await importCsv(t.id, text, '', CSV);
        expect(res.status, text).toBe(400);
        expect(res.body.code).toBe('API_INVALID_CSV');
        expect(res.body.detail, text).toContain(`Line ${line} `);
        expect(res.body.detail, text).toMatch(message);
        expect(res.body.errors?.[0]?.path).toBe(`body.line.${line}`);
      }
      const replaced = await importCsv(t.id, 'a,1\nb,2,3', '?replace=true&hasHeaderRow=false', CSV);
      expect(replaced.status).toBe(400);
      expect(await pairsOf(t.id)).toEqual([['before', '1']]);
    });

    it('imports an empty text or a header alone as nothing', async () => {
      const t = await newTable([{ value1: 'a', value2: 'b' }]);
      expect((await importCsv(t.id, 'value1,value2\n', '', CSV)).body).toMatchObject({
        valuesImported: 0,
        valueCount: 1,
      });
      expect((await importCsv(t.id, { commaSeparatedValues: '' })).body).toMatchObject({
        valuesImported: 0,
        valueCount: 1,
      });
    });

    it('imports 30,000 lines in one request, in several INSERT statements', async () => {
      const t = await newTable();
      const lines = Array.from({ length: 30_000 }, (_, i) => `key ${i},"value, ${i}"`);
      const res = await importCsv(t.id, `value1,value2\n${lines.join('\n')}\n`, '', CSV);
      expect(res.body).toMatchObject({ valuesImported: 30_000, valueCount: 30_000 });
      const last = await svc.request<Value[]>('GET', `${L}/${t.id}/values?offset=29999`);
      expect(last.body).toMatchObject([{ value1: 'key 29999', value2: 'value, 29999' }]);
      expect(
        (
          await svc.request<Value>(
            'GET',
            `${L}/Import%20${counter}/values/value1/${encodeURIComponent('value, 12345')}`,
          )
        ).body.value1,
      ).toBe('key 12345');
    });

    it('answers other requests while a large import is written, a batch at a time', async () => {
      const other = await newTable([{ value1: 'a', value2: 'b' }]);
      const t = await newTable();
      const lines = 150_000;
      const csv = Array.from(
        { length: lines },
        (_, i) => `CODE-${String(i).padStart(7, '0')},Name of value ${i}\n`,
      ).join('');
      let done = false;
      const started = performance.now();
      const importing = importCsv(t.id, csv, '?hasHeaderRow=false', CSV).then((res) => {
        done = true;
        return res;
      });
      // One /healthz and one read inside the Organization (authentication, role and Security
      // Rule checks, another table's values) after another for as long as the import runs: if the
      // import held the event loop or the store while it parsed, wrote and committed, one of them
      // would wait for most of it.
      const latencies: number[] = [];
      while (!done) {
        for (const path of ['/healthz', `${L}/${other.id}/values`]) {
          const t0 = performance.now();
          const answer = await svc.request('GET', path);
          expect(answer.status).toBe(200);
          if (!done) latencies.push(performance.now() - t0);
        }
      }
      const res = await importing;
      const importMs = performance.now() - started;
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ valuesImported: lines, valueCount: lines });
      expect(latencies.length).toBeGreaterThanOrEqual(3);
      expect(
        Math.max(...latencies),
        `longest request of ${latencies.length} during an import of ${Math.round(importMs)} ms`,
      ).toBeLessThan(importMs / 3);
    });

    it('changes nothing when a line far into a large import is bad, and names that line', async () => {
      const t = await newTable([
        { value1: 'kept', value2: '1' },
        { value1: 'kept', value2: '2' },
      ]);
      // Record 1 spans two lines (a quoted line break), so record 15,000 starts on line 15,002,
      // several slices and batches into the text.
      const records = Array.from({ length: 20_000 }, (_, i) =>
        i === 1 ? '"multi\nline",x' : i === 15_000 ? 'a,b,c' : `k${i},"v, ${i}"`,
      );
      const res = await importCsv(t.id, `${records.join('\r\n')}\r\n`, '?replace=true&hasHeaderRow=false', CSV);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('API_INVALID_CSV');
      expect(res.body.detail).toMatch(/^Line 15002 of the CSV text: it has 3 fields/);
      expect(res.body.errors?.[0]?.path).toBe('body.line.15002');
      expect(await pairsOf(t.id)).toEqual([
        ['kept', '1'],
        ['kept', '2'],
      ]);
      const open = await importCsv(
        t.id,
        `${records.slice(0, 12_000).join('\n')}\n"open quote,1\n${'x,y\n'.repeat(50_000)}`,
        '?replace=true&hasHeaderRow=false',
        CSV,
      );
      expect(open.status).toBe(400);
      expect(open.body.detail).toMatch(/^Line 12002 of the CSV text: /);
      expect(await pairsOf(t.id)).toEqual([
        ['kept', '1'],
        ['kept', '2'],
      ]);
    });

    it('needs an existing table, the write role, an open address and a valid body', async () => {
      const t = await newTable();
      expect((await importCsv(MISSING, 'a,b', '', CSV)).status).toBe(404);
      expect((await importCsv('not-a-guid', 'a,b', '', CSV)).status).toBe(400);
      const reader = await addUser(svc, svc.orgId, 'ReadOnly');
      const refused = await svc.request<Problem>('POST', `${L}/${t.id}/import`, {
        auth: reader,
        body: 'a,b',
        headers: CSV,
      });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('API_FORBIDDEN_ROLE');
      const far = await svc.request<Problem>('POST', `${L}/${t.id}/import`, {
        from: '127.0.0.2',
        body: 'a,b',
        headers: CSV,
      });
      expect(far.status).toBe(403);
      expect(far.body.code).toBe('API_FORBIDDEN_IP');
      for (const body of [
        {},
        { commaSeparatedValues: 1 },
        { commaSeparatedValues: 'a,b', extra: true },
        42,
        null,
        [],
      ]) {
        expect((await importCsv(t.id, JSON.stringify(body))).status, JSON.stringify(body)).toBe(400);
      }
      expect((await importCsv(t.id, 'a,b', '?hasHeaderRow=maybe', CSV)).status).toBe(400);
      expect((await importCsv(t.id, '<a/>', '', { 'content-type': 'application/xml' })).status).toBe(415);
      expect(await pairsOf(t.id)).toEqual([]);
    });

    it('refuses a body above the Service limit with 413', async () => {
      const small = await startService(target, { bodyLimit: 4096 });
      try {
        const t = await small.request<Table>('POST', `/v1/orgs/${small.orgId}/lookuptables`, {
          body: { name: 'Small' },
        });
        const res = await small.request<Problem>('POST', `/v1/orgs/${small.orgId}/lookuptables/${t.body.id}/import`, {
          body: 'a,b\n'.repeat(2000),
          headers: CSV,
        });
        expect(res.status).toBe(413);
        expect(res.body.code).toBe('API_PAYLOAD_TOO_LARGE');
        // Without a Content-Length the Service counts the bytes as they arrive.
        const chunked = await new Promise<{ status: number; text: string }>((resolve, reject) => {
          const auth = `Basic ${Buffer.from(`${ADMIN.email}:${ADMIN.password}`).toString('base64')}`;
          const req = http.request(
            new URL(`/v1/orgs/${small.orgId}/lookuptables/${t.body.id}/import`, small.url),
            { method: 'POST', headers: { authorization: auth, 'content-type': 'text/csv' } },
            (r) => {
              let text = '';
              r.on('data', (c: Buffer) => (text += c.toString()));
              r.on('end', () => resolve({ status: r.statusCode ?? 0, text }));
            },
          );
          req.on('error', reject);
          for (let i = 0; i < 20; i++) req.write('a,b\n'.repeat(100));
          req.end();
        });
        expect(chunked.status).toBe(413);
        expect(chunked.text).toContain('API_PAYLOAD_TOO_LARGE');
        expect(
          (await small.request<Table>('GET', `/v1/orgs/${small.orgId}/lookuptables/${t.body.id}`)).body
            .lookupTableValues,
        ).toEqual([]);
      } finally {
        await small.close();
      }
    });
  });

  describe('export', () => {
    const exportOf = async (id: string): Promise<number> => {
      const res = await svc.request<{ exportId: number }>('GET', `${L}/${id}/export`);
      expect(res.status).toBe(200);
      expect(Number.isInteger(res.body.exportId)).toBe(true);
      return res.body.exportId;
    };

    it('returns an integer exportId, then the table as CSV once', async () => {
      const t = await newTable([
        { value1: 'plain', value2: 'text' },
        { value1: 'Smith, John', value2: 'He said "hi"' },
        { value1: 'multi\nline', value2: '' },
        { value1: 'Zürich 😀', value2: 'cr\rhere' },
      ]);
      const exportId = await exportOf(t.id);
      expect((await svc.request('HEAD', `${L}/${t.id}/export/${exportId}`)).status).toBe(404);
      const res = await svc.request('GET', `${L}/${t.id}/export/${exportId}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(res.headers['content-disposition']).toContain(`filename="${t.name}.csv"`);
      expect(res.text).toBe(
        'value1,value2\r\nplain,text\r\n"Smith, John","He said ""hi"""\r\n"multi\nline",\r\nZürich 😀,"cr\rhere"\r\n',
      );
      const again = await svc.request<Problem>('GET', `${L}/${t.id}/export/${exportId}`);
      expect(again.status).toBe(410);
      expect(again.body.code).toBe('API_EXPORT_USED');
      const second = await exportOf(t.id);
      expect(second).not.toBe(exportId);
      expect((await svc.request('GET', `${L}/${t.id}/export/${second}`)).status).toBe(200);
    });

    it('round-trips: an export imported into another table gives the same values', async () => {
      const values = Array.from({ length: 12_345 }, (_, i) => ({
        value1: i % 3 === 0 ? `q"uote ${i}` : `k${i}`,
        value2: i % 5 === 0 ? '' : `line\nbreak, ${i}`,
      }));
      const source = await newTable(values);
      const csv = await svc.request('GET', `${L}/${source.id}/export/${await exportOf(source.id)}`);
      const copy = await newTable();
      const res = await importCsv(copy.id, csv.text, '', CSV);
      expect(res.body).toMatchObject({ valuesImported: 12_345 });
      expect(await pairsOf(copy.id)).toEqual(values.map((v) => [v.value1, v.value2]));
    });

    it('answers unknown, foreign and malformed export IDs with 4xx, and forgets exports of deleted tables', async () => {
      const a = await newTable([{ value1: 'a', value2: 'b' }]);
      const b = await newTable();
      const exportId = await exportOf(a.id);
      expect((await svc.request('GET', `${L}/${b.id}/export/${exportId}`)).status).toBe(404);
      expect((await svc.request('GET', `${L}/${a.id}/export/999999`)).status).toBe(404);
      expect((await svc.request('GET', `${L}/${a.id}/export/abc`)).status).toBe(400);
      expect((await svc.request('GET', `${L}/${a.id}/export/-1`)).status).toBe(400);
      expect((await svc.request('GET', `${L}/${MISSING}/export`)).status).toBe(404);
      expect((await svc.request('DELETE', `${L}/${a.id}`)).status).toBe(204);
      expect((await svc.request('GET', `${L}/${a.id}/export/${exportId}`)).status).toBe(404);
    });

    it('lets Read-only users export, and refuses other addresses', async () => {
      const t = await newTable([{ value1: 'a', value2: 'b' }]);
      const reader = await addUser(svc, svc.orgId, 'ReadOnly');
      const created = await svc.request<{ exportId: number }>('GET', `${L}/${t.id}/export`, { auth: reader });
      expect(created.status).toBe(200);
      const far = await svc.request<Problem>('GET', `${L}/${t.id}/export/${created.body.exportId}`, {
        from: '127.0.0.2',
      });
      expect(far.status).toBe(403);
      const got = await svc.request('GET', `${L}/${t.id}/export/${created.body.exportId}`, { auth: reader });
      expect(got.text).toBe('value1,value2\r\na,b\r\n');
    });

    it('exports an empty table as the header alone', async () => {
      const t = await newTable();
      const res = await svc.request('GET', `${L}/${t.id}/export/${await exportOf(t.id)}`);
      expect(res.text).toBe('value1,value2\r\n');
    });
  });
});
