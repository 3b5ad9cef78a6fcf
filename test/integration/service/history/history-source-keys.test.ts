/**
 * Which source record a record error is about: the key (or row) an Agent sends with each error
 * reaches the errors list, the one-error read and the export, in the shared-fields form and whole;
 * an older Agent's errors without them still go in; and the 409 for a record kept on the Agent says
 * how to read it there.
 */
import { randomUUID } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReportBody } from '../../../../src/protocol/channel.js';
import { shareErrorFields, type RunRecordError } from '../../../../src/protocol/solutions.js';
import { connectPlayedAgent, OpenChannels, type TestAgent, type TestChannel } from '../../../helpers/agent-client.js';
import { failedRecordOf, recordError } from '../../../helpers/history.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface RecordErrorModel {
  id: string;
  failedRecordId: string | null;
  sourceKey: Record<string, unknown> | null;
  sourceRow: number | null;
}

describe.each(STORE_TARGETS)('Record errors name their source record on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let S: string;
  const channels = new OpenChannels();

  const send = async (report: ReportBody): Promise<void> => {
    const reply = await ch.report(report);
    expect(reply, JSON.stringify(reply)).toMatchObject({ ok: true });
  };
  const solution = async (name: string): Promise<string> => {
    const res = await svc.request<{ id: string }>('POST', S, {
      body: { name, solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  };
  /** A run whose errors go in one runErrors report (shared fields or whole), its failed records kept in the cloud when given; answers `H/{id}`. */
  const run = async (
    solutionId: string,
    errors: RunRecordError[],
    opts: { shared: boolean; cloud?: Map<string, Record<string, unknown>> },
  ): Promise<{ H: string; runId: string }> => {
    const runId = randomUUID();
    const start = new Date(Date.now() - 60_000).toISOString();
    await send({ kind: 'runStarted', runId, solutionId, trigger: 'start', at: start });
    await send({ kind: 'runErrors', runId, solutionId, ...(opts.shared ? shareErrorFields(errors) : { errors }) });
    const records = [...(opts.cloud ?? new Map<string, Record<string, unknown>>())].map(([id, source]) =>
      failedRecordOf(errors.find((e) => e.failedRecordId === id) as RunRecordError, source),
    );
    if (records.length > 0) await send({ kind: 'runFailedRecords', runId, solutionId, records });
    await send({
      kind: 'runFinished',
      runId,
      solutionId,
      trigger: 'start',
      startedAt: start,
      at: new Date().toISOString(),
      result: 'CompletedWithErrors',
      processed: errors.length,
      failed: errors.length,
      stopped: false,
      sourceDataLocal: records.length === 0,
      statistics: [],
    });
    const list = await svc.request<Array<{ id: number }>>('GET', `${S}/${solutionId}/history?sortOrder=desc&limit=1`);
    return { H: `${S}/${solutionId}/history/${list.body[0]?.id}`, runId };
  };
  const exported = async (H: string): Promise<Array<Record<string, string>>> => {
    const { exportId } = (await svc.request<{ exportId: number }>('GET', `${H}/export`)).body;
    const res = await svc.request<string>('GET', `${H}/export/${exportId}`);
    expect(res.status, res.text).toBe(200);
    return parse(res.text, { columns: true, bom: true });
  };

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    ({ agent, ch } = await connectPlayedAgent(svc, channels, { name: 'Keys agent' }));
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it.each([
    { form: 'shared fields', shared: true },
    { form: 'every error whole', shared: false },
  ])("carries each error's key and row to the list, the one-error read and the export ($form)", async ({ shared }) => {
    const id = await solution(`Keys ${shared ? 'shared' : 'whole'}`);
    const errors = [
      recordError(1, { sourceKey: { AccountId: 'A-1', Region: 3 }, sourceRow: 1 }),
      recordError(2, { sourceKey: { AccountId: 'a "quoted", key', Region: null }, sourceRow: 17 }),
      // A source entity without a primary key: its row alone.
      recordError(3, { sourceRow: 40 }),
    ];
    const cloud = new Map([[errors[0]?.failedRecordId as string, { AccountId: 'A-1', Region: 3, Name: 'Acme, Lyon' }]]);
    const { H } = await run(id, errors, { shared, cloud });

    const list = await svc.request<RecordErrorModel[]>('GET', `${H}/errors`);
    expect(list.status, list.text).toBe(200);
    expect(list.body.map((e) => [e.id, e.sourceKey, e.sourceRow])).toEqual([
      [errors[0]?.id, { AccountId: 'A-1', Region: 3 }, 1],
      [errors[1]?.id, { AccountId: 'a "quoted", key', Region: null }, 17],
      [errors[2]?.id, null, 40],
    ]);
    const one = await svc.request<RecordErrorModel>('GET', `${H}/errors/${errors[1]?.id}`);
    expect(one.body).toMatchObject({ sourceKey: { AccountId: 'a "quoted", key', Region: null }, sourceRow: 17 });

    const rows = await exported(H);
    expect(rows.map((r) => [r['id'], r['sourceKey'] ? JSON.parse(r['sourceKey']) : '', r['sourceRow']])).toEqual([
      [errors[0]?.id, { AccountId: 'A-1', Region: 3 }, '1'],
      [errors[1]?.id, { AccountId: 'a "quoted", key', Region: null }, '17'],
      [errors[2]?.id, '', '40'],
    ]);
    // The failed record's values, kept in the Service, are in the export; the others were not kept.
    expect(JSON.parse(rows[0]?.['record'] ?? '')).toEqual({ AccountId: 'A-1', Region: 3, Name: 'Acme, Lyon' });
    expect(rows.slice(1).map((r) => r['record'])).toEqual(['', '']);
  });

  it("stores an older Agent's errors, without key or row, whole and shared, and reads them as null", async () => {
    const id = await solution('Keys old agent');
    const errors = [recordError(1), recordError(2)];
    const { H } = await run(id, errors, { shared: false });
    const list = await svc.request<RecordErrorModel[]>('GET', `${H}/errors`);
    expect(list.body.map((e) => [e.sourceKey, e.sourceRow])).toEqual([
      [null, null],
      [null, null],
    ]);
    const again = await run(id, [recordError(3), recordError(4)], { shared: true });
    expect((await svc.request<RecordErrorModel[]>('GET', `${again.H}/errors`)).body.map((e) => e.sourceKey)).toEqual([
      null,
      null,
    ]);
    expect((await exported(H)).map((r) => [r['sourceKey'], r['sourceRow']])).toEqual([
      ['', ''],
      ['', ''],
    ]);
  });

  it("refuses a key beyond the protocol's bounds", async () => {
    const id = await solution('Keys too long');
    const runId = randomUUID();
    const reply = await ch.report({
      kind: 'runErrors',
      runId,
      solutionId: id,
      errors: [recordError(1, { sourceKey: { Id: 'x'.repeat(1001) } })],
    });
    expect(reply).toMatchObject({ ok: false, error: { code: 'CHN_INVALID_MESSAGE' } });
  });

  it('answers a failed record kept on the Agent with a 409 that names the command reading it there', async () => {
    const id = await solution('Keys on the agent');
    const errors = [recordError(1, { sourceKey: { AccountId: 'A-9' } })];
    const { H, runId } = await run(id, errors, { shared: false });
    const res = await svc.request<{ detail: string; code: string }>('GET', `${H}/failedrecords/${errors[0]?.id}`);
    expect(res.status, res.text).toBe(409);
    expect(res.body.code).toBe('API_CONFLICT');
    expect(res.body.detail).toContain(
      `ferry agent failures show ${errors[0]?.failedRecordId} [--home DIR] [--instance N]`,
    );
    expect(res.body.detail).toContain(`ferry agent failures list --execution ${runId}`);
    expect(res.body.detail).toContain(agent.agentId);
  });
});
