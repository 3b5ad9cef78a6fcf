import { randomUUID } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecordError } from '../../../../src/protocol/solutions.js';
import { EXPORT_COLUMNS } from '../../../../service/history/export.js';
import { connectPlayedAgent, OpenChannels, type TestAgent, type TestChannel } from '../../../helpers/agent-client.js';
import { failedRecordOf, recordError as defaultRecordError, seedRun } from '../../../helpers/history.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Execution {
  id: number;
}
interface RecordError {
  id: string;
}

/** Text a CSV writer must quote: commas, quotes, line breaks of all kinds, and non-ASCII. */
const AWKWARD = 'a, "quoted" value\r\nsecond line\nthird; ünïcödé ✓';

/** A record error of these tests: with its Block's ID, and every third with awkward text. */
const recordError = (n: number, extra: Partial<RunRecordError> = {}): RunRecordError =>
  defaultRecordError(n, { blockId: 'b2', errorDetail: n % 3 === 0 ? AWKWARD : `detail ${n}`, ...extra });

describe.each(STORE_TARGETS)('History export on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let S: string;
  const channels = new OpenChannels();

  const solution = async (name: string): Promise<string> => {
    const res = await svc.request<{ id: string }>('POST', S, {
      body: { name, solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  };
  /** A finished run with these errors (and, when `cloud`, their failed records kept by the Service); answers its execution ID. */
  const run = async (
    solutionId: string,
    errors: RunRecordError[],
    cloud: Map<string, Record<string, unknown>> = new Map(),
  ): Promise<number> => {
    const failedRecords = errors.flatMap((e) => {
      const source = e.failedRecordId ? cloud.get(e.failedRecordId) : undefined;
      return source ? [failedRecordOf(e, source)] : [];
    });
    await seedRun(ch, { solutionId, errors, failedRecords, finish: { result: 'CompletedWithErrors' } });
    const list = await svc.request<Execution[]>('GET', `${S}/${solutionId}/history?sortOrder=desc&limit=1`);
    const id = list.body[0]?.id;
    if (id === undefined) throw new Error('no execution');
    return id;
  };
  const requestExport = async (path: string, method: 'GET' | 'POST' = 'GET'): Promise<number> => {
    const res = await svc.request<{ exportId: number }>(method, `${path}/export`);
    expect(res.status, res.text).toBe(200);
    expect(Number.isInteger(res.body.exportId)).toBe(true);
    return res.body.exportId;
  };
  const download = (path: string, exportId: number | string) =>
    svc.request<string>('GET', `${path}/export/${exportId}`);
  const rowsOf = (csv: string): Array<Record<string, string>> => parse(csv, { columns: true, bom: true });

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    ({ agent, ch } = await connectPlayedAgent(svc, channels, { name: 'Export agent' }));
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it('exports every error of an execution as RFC 4180 CSV with its failed record, once', async () => {
    const id = await solution('Export cloud');
    // More than two pages of the export, in arrival order; every third with awkward text.
    const errors = Array.from({ length: 2_345 }, (_, i) => recordError(i + 1));
    // The first without the optional fields: no failed record, Map ID or Block.
    const { failedRecordId: _r, mapId: _m, blockId: _b, blockName: _n, ...bare } = recordError(0);
    errors[0] = bare;
    const cloud = new Map<string, Record<string, unknown>>();
    errors.forEach((e, i) => {
      if (e.failedRecordId && i % 5 !== 1)
        cloud.set(e.failedRecordId, {
          Name: `Account ${i}`,
          Note: AWKWARD,
          Amount: i * 1.5,
          Active: i % 2 === 0,
          Missing: null,
        });
    });
    const executionId = await run(id, errors, cloud);
    const H = `${S}/${id}/history/${executionId}`;

    const exportId = await requestExport(H);
    const res = await download(H, exportId);
    expect(res.status, res.text.slice(0, 500)).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="execution-${executionId}-errors.csv"`);
    // A header row, and CRLF after every record.
    expect(res.text.startsWith(`${EXPORT_COLUMNS.join(',')}\r\n`)).toBe(true);
    expect(res.text.endsWith('\r\n')).toBe(true);

    const rows = rowsOf(res.text);
    expect(rows).toHaveLength(errors.length);
    rows.forEach((row, i) => {
      const e = errors[i];
      if (!e) throw new Error('more rows than errors');
      const source = e.failedRecordId ? cloud.get(e.failedRecordId) : undefined;
      expect(row).toEqual({
        id: e.id,
        failedRecordId: e.failedRecordId ?? '',
        mapId: e.mapId === undefined ? '' : String(e.mapId),
        mapName: e.mapName,
        sourceEntity: e.sourceEntity,
        blockId: e.blockId ?? '',
        blockName: e.blockName ?? '',
        code: e.code,
        errorMessage: e.errorMessage,
        errorDetail: e.errorDetail,
        canReprocess: String(e.canReprocess),
        marked: 'false',
        created: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        record: source ? expect.any(String) : '',
        sourceKey: '',
        sourceRow: '',
      });
      if (source) expect(JSON.parse(row['record'] ?? '')).toEqual(source);
    });

    // Once: the second download of the same ID is a 404, and so is an ID never issued.
    expect((await download(H, exportId)).status).toBe(404);
    expect((await download(H, exportId + 1000)).status).toBe(404);
  });

  it("answers the older clients' POST form, by execution id or processExecutionId, to Read-only users too", async () => {
    const id = await solution('Export local');
    const errors = [recordError(1), recordError(2, { errorMessage: '=SUM(A1:A2)' })];
    const executionId = await run(id, errors);
    const H = `${S}/${id}/history/${executionId}`;

    const posted = await svc.request<{ exportId: number }>('POST', `${H}/export`);
    expect(posted.status, posted.text).toBe(200);
    // A POST with an empty JSON body, as the older clients send it.
    const empty = await svc.request<{ exportId: number }>('POST', `${H}/export`, {
      body: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(empty.status, empty.text).toBe(200);
    expect(empty.body.exportId).not.toBe(posted.body.exportId);

    // The failed records stay on the Agent: the record column is empty.
    const rows = rowsOf((await download(H, posted.body.exportId)).text);
    expect(rows.map((r) => [r['id'], r['errorMessage'], r['record']])).toEqual(
      errors.map((e) => [e.id, e.errorMessage, '']),
    );

    const runId = (await svc.request<{ processExecutionId: string }>('GET', H)).body.processExecutionId;
    const byRunId = `${S}/${id}/history/${runId.toUpperCase()}`;
    const viaRunId = await requestExport(byRunId);
    expect(rowsOf((await download(H, viaRunId)).text)).toHaveLength(2);

    const reader = await addUser(svc, svc.orgId, 'ReadOnly');
    const readerExport = await svc.request<{ exportId: number }>('GET', `${H}/export`, { auth: reader });
    expect(readerExport.status, readerExport.text).toBe(200);
    const readerCsv = await svc.request<string>('GET', `${H}/export/${readerExport.body.exportId}`, { auth: reader });
    expect(readerCsv.status).toBe(200);
  });

  it('exports an execution without errors as the header row alone', async () => {
    const id = await solution('Export empty');
    const executionId = await run(id, []);
    const H = `${S}/${id}/history/${executionId}`;
    const res = await download(H, await requestExport(H));
    expect(res.status).toBe(200);
    expect(res.text).toBe(`${EXPORT_COLUMNS.join(',')}\r\n`);
  });

  it('refuses an exportId of another execution, an expired one, bad input and unknown executions', async () => {
    const id = await solution('Export refusals');
    const a = await run(id, [recordError(1)]);
    const b = await run(id, [recordError(2)]);
    const A = `${S}/${id}/history/${a}`;
    const B = `${S}/${id}/history/${b}`;

    // An ID of execution A does not download B, and is not used up by trying.
    const ofA = await requestExport(A);
    expect((await download(B, ofA)).status).toBe(404);
    expect((await download(A, ofA)).status).toBe(200);

    // Past its hour, an exportId is a 404.
    const late = await requestExport(A);
    await svc.service.store.db
      .updateTable('historyExports')
      .set({ expiresAt: new Date(Date.now() - 1000).toISOString() })
      .where('id', '=', late)
      .execute();
    const expired = await download(A, late);
    expect(expired.status).toBe(404);
    expect(expired.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(expired.text).toMatch(/downloads once, within an hour/);

    for (const bad of ['abc', '0', '-1', '1.5', '99999999999']) {
      const res = await download(A, bad);
      expect(res.status, `${bad}: ${res.text}`).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    expect((await svc.request('GET', `${S}/${id}/history/999999/export`)).status).toBe(404);
    expect((await svc.request('POST', `${S}/${id}/history/999999/export`)).status).toBe(404);
    expect((await svc.request('GET', `${S}/${randomUUID()}/history/${a}/export`)).status).toBe(404);
    // Nothing was created by the refused requests.
    const pending = await svc.service.store.db
      .selectFrom('historyExports')
      .select('id')
      .where('executionId', '=', 999999)
      .execute();
    expect(pending).toEqual([]);
  });

  it('pages the errors of an execution by offset in order of arrival, the total in Total-Count', async () => {
    const id = await solution('Deep pages');
    const errors = Array.from({ length: 1_050 }, (_, i) => recordError(i + 1));
    const executionId = await run(id, errors);
    const E = `${S}/${id}/history/${executionId}/errors`;
    for (const [offset, limit] of [
      [0, 100],
      [500, 100],
      [1_000, 100],
      [1_049, 10],
      [1_050, 10],
      [5_000, 10],
      [10, 0],
    ] as const) {
      const res = await svc.request<RecordError[]>('GET', `${E}?offset=${offset}&limit=${limit}`);
      expect(res.status).toBe(200);
      expect(res.headers['total-count']).toBe('1050');
      expect(res.body.map((e) => e.id)).toEqual(errors.slice(offset, offset + limit).map((e) => e.id));
    }
  });
});
