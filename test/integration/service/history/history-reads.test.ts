/**
 * Reading a Solution's History over the REST API: record errors a page at a time, executions
 * filtered by window and result and sorted by each column, 404 for what is not an execution of the
 * Solution, the skipped due times, and a Read-only member's access.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReportBody } from '../../../../src/protocol/channel.js';
import { connectPlayedAgent, OpenChannels, type TestAgent, type TestChannel } from '../../../helpers/agent-client.js';
import { ago, finished, recordError, seedRun, started } from '../../../helpers/history.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Execution {
  id: number;
  processExecutionId: string;
  reprocessRecordsRemaining: number;
}
interface RecordError {
  id: string;
}

describe.each(STORE_TARGETS)('History reads on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let S: string;
  const channels = new OpenChannels();

  const send = async (report: ReportBody, id?: string): Promise<void> => {
    const reply = await ch.report(report, id);
    expect(reply, JSON.stringify(reply)).toMatchObject({ ok: true });
  };
  const solution = async (name: string): Promise<string> => {
    const res = await svc.request<{ id: string }>('POST', S, {
      body: { name, solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(res.status, res.text).toBe(201);
    // Prepare is not what this suite tests: a prepared Solution shows the run statuses.
    await svc.service.store.db.updateTable('solutions').set({ prepared: 1 }).where('id', '=', res.body.id).execute();
    return res.body.id;
  };
  const history = async (solutionId: string, query = '') => {
    const res = await svc.request<Execution[]>('GET', `${S}/${solutionId}/history${query}`);
    expect(res.status, res.text).toBe(200);
    return { items: res.body, total: Number(res.headers['total-count']) };
  };

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    // The Agent answers whatever the Service asks of it: it holds every Solution it is given.
    ({ agent, ch } = await connectPlayedAgent(svc, channels, { name: 'History agent' }));
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it('pages record errors in order of arrival, at any offset', async () => {
    const id = await solution('Many errors');
    // Three reports of errors (200, 200 and 50), the run still going.
    const sent = Array.from({ length: 450 }, (_, i) => recordError(i));
    await seedRun(ch, { solutionId: id, start: ago(20), errors: sent, finish: false });
    const exec = (await history(id)).items[0];
    expect(exec?.reprocessRecordsRemaining).toBe(225);
    const E = `${S}/${id}/history/${exec?.id}/errors`;
    const page = async (query: string) => {
      const res = await svc.request<RecordError[]>('GET', `${E}${query}`);
      expect(res.status, res.text).toBe(200);
      expect(res.headers['total-count']).toBe('450');
      return res.body.map((e) => e.id);
    };
    expect(await page('')).toEqual(sent.slice(0, 100).map((e) => e.id));
    expect(await page('?offset=190&limit=20')).toEqual(sent.slice(190, 210).map((e) => e.id));
    expect(await page('?offset=420&limit=100')).toEqual(sent.slice(420).map((e) => e.id));
    expect(await page('?offset=450')).toEqual([]);
    expect(await page('?limit=0')).toEqual([]);
    // A page whose numbers have a gap (an error removed from the store) still holds `limit` errors.
    await svc.service.store.db
      .deleteFrom('executionErrors')
      .where(
        'id',
        'in',
        sent.slice(195, 200).map((e) => e.id),
      )
      .execute();
    expect(await page('?offset=190&limit=20')).toEqual(
      [...sent.slice(190, 195), ...sent.slice(200, 215)].map((e) => e.id),
    );

    const one = sent[3];
    const got = await svc.request<RecordError>('GET', `${E}/${one?.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      id: one?.id,
      failedRecordId: one?.failedRecordId,
      mapName: 'Accounts',
      sourceEntity: 'account',
      errorMessage: 'record 3 refused',
      errorDetail: 'detail 3',
      additionalErrorDetails: '',
      canReprocess: false,
      marked: false,
      mapId: 7,
      blockName: 'Create contact',
      code: 'RUN_WRITE_FAILED',
      created: expect.any(String),
      sourceKey: null,
      sourceRow: null,
    });
    expect((await svc.request('GET', `${E}/${randomUUID()}`)).status).toBe(404);
  });

  it('filters by window and result, and sorts by each column in both directions', async () => {
    const id = await solution('Sorted');
    const runs = [
      { runId: randomUUID(), start: ago(60 * 24 * 60), result: 'CompletedSuccessfully', processed: 100, failed: 0 },
      { runId: randomUUID(), start: ago(300), result: 'FatalError', processed: 5, failed: 5 },
      { runId: randomUUID(), start: ago(200), result: 'CompletedSuccessfully', processed: 50, failed: 0 },
      { runId: randomUUID(), start: ago(100), result: 'RecordErrorsAndFatalErrors', processed: 20, failed: 9 },
    ] as const;
    for (const r of runs) {
      await send(started(id, r.runId, r.start));
      await send(finished(id, r.runId, r.start, { result: r.result, processed: r.processed, failed: r.failed }));
    }
    const going = randomUUID();
    await send(started(id, going, ago(50)));
    const ids = async (query: string) => (await history(id, query)).items.map((e) => e.processExecutionId);
    const [old, fatal, fine, mixed] = runs.map((r) => r.runId);

    expect(await ids('')).toEqual([fatal, fine, mixed, going]);
    expect((await history(id)).total).toBe(4);
    const sixtyOneDaysAgo = new Date(Date.now() - 61 * 86_400_000);
    const unpadded = `${sixtyOneDaysAgo.getUTCFullYear()}-${sixtyOneDaysAgo.getUTCMonth() + 1}-${sixtyOneDaysAgo.getUTCDate()}`;
    expect(await ids(`?laterThanDate=${unpadded}`)).toEqual([old, fatal, fine, mixed, going]);
    expect(await ids(`?laterThanDate=${encodeURIComponent(runs[2].start)}`)).toEqual([fine, mixed, going]);
    // What public clients send for "from the beginning": SQL Server's minimum and .NET's.
    expect(await ids('?laterThanDate=1753-01-01')).toEqual([old, fatal, fine, mixed, going]);
    expect(await ids('?laterThanDate=0001-01-01T00:00:00')).toEqual([old, fatal, fine, mixed, going]);
    expect(await ids('?result=inprogress')).toEqual([going]);
    expect(await ids('?result=FATALERROR')).toEqual([fatal]);
    expect(await ids('?sortOrder=desc')).toEqual([going, mixed, fine, fatal]);
    expect(await ids('?executionHistoryColumnSort=RecordsProcessed&sortOrder=desc')).toEqual([
      fine,
      mixed,
      fatal,
      going,
    ]);
    expect(await ids('?executionHistoryColumnSort=3')).toEqual([fine, going, fatal, mixed]);
    expect(await ids('?executionHistoryColumnSort=result')).toEqual([fine, fatal, going, mixed]);
    expect(await ids('?executionHistoryColumnSort=1&sortOrder=DESC&limit=2&offset=1')).toEqual([going, fatal]);

    for (const bad of [
      'result=Happy',
      'executionHistoryColumnSort=4',
      'sortOrder=up',
      'laterThanDate=yesterday',
      'laterThanDate=2024-2-30',
      'limit=1001',
    ]) {
      const res = await svc.request<{ code: string; errors: Array<{ path: string }> }>(
        'GET',
        `${S}/${id}/history?${bad}`,
      );
      expect(res.status, bad).toBe(400);
      expect(res.body.code).toBe('API_VALIDATION');
      expect(res.body.errors[0]?.path).toBe(`query.${bad.split('=')[0]}`);
    }
  });

  it('answers 404 for what is not an execution of that Solution', async () => {
    const a = await solution('Four oh four A');
    const b = await solution('Four oh four B');
    const runId = randomUUID();
    await send(started(a, runId, ago(3)));
    const exec = (await history(a)).items[0];
    const cases = [
      `${S}/${randomUUID()}/history`,
      `${S}/${b}/history/${exec?.id}`,
      `${S}/${b}/history/${runId}`,
      `${S}/${a}/history/999999`,
      `${S}/${a}/history/${randomUUID()}/statistics`,
      `${S}/${b}/history/${exec?.id}/errors`,
      `${S}/${a}/history/${exec?.id}/errors/${randomUUID()}`,
      `/v1/orgs/${svc.orgId}/solutions/${randomUUID()}/history/skipped`,
    ];
    for (const path of cases) {
      const res = await svc.request<{ code: string }>('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.body.code).toBe('API_NOT_FOUND');
    }
    await send(finished(a, runId, ago(3)));
  });

  it('lists skipped due times newest first, each once', async () => {
    const id = await solution('Skipping');
    const due = ['2026-01-01T06:30:00.000Z', '2026-01-02T06:30:00.000Z'];
    await send({ kind: 'scheduleSkipped', solutionId: id, dueAt: due[0] ?? '', reason: 'missed', at: ago(2) });
    await send({ kind: 'scheduleSkipped', solutionId: id, dueAt: due[1] ?? '', reason: 'running', at: ago(1) });
    await send({ kind: 'scheduleSkipped', solutionId: id, dueAt: due[1] ?? '', reason: 'running', at: ago(1) });
    const res = await svc.request<Array<{ dueAt: string; reason: string }>>('GET', `${S}/${id}/history/skipped`);
    expect(res.status).toBe(200);
    expect(res.headers['total-count']).toBe('2');
    expect(res.body.map((s) => [s.dueAt, s.reason])).toEqual([
      [due[1], 'running'],
      [due[0], 'missed'],
    ]);
  });

  it('lets a Read-only member read it', async () => {
    const id = await solution('Readable');
    await send(started(id, randomUUID(), ago(1)));
    const reader = await addUser(svc, svc.orgId, 'ReadOnly');
    const res = await svc.request<Execution[]>('GET', `${S}/${id}/history`, { auth: reader });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(1);
  });
});
