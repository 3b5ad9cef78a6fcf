import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReportBody } from '../../../../src/protocol/channel.js';
import type { RunRecordError } from '../../../../src/protocol/solutions.js';
import {
  connectPlayedAgent,
  OpenChannels,
  registerTestAgent,
  type Incoming,
  type TestAgent,
  type TestChannel,
} from '../../../helpers/agent-client.js';
import { failedRecordOf, recordError as defaultRecordError, seedRun } from '../../../helpers/history.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface RecordError {
  id: string;
  canReprocess: boolean;
  marked: boolean;
  failedRecordId: string | null;
}
interface Execution {
  id: number;
  processExecutionId: string;
  result: string;
  isReprocessJob: boolean;
  reprocessRecordsRemaining: number;
}
interface ReprocessAnswer {
  historyId: number;
  runId: string | null;
  started: boolean;
  records: number;
  message: string;
}
interface Page {
  records: Array<{ seq: number; errorId: string; failedRecordId: string | null; source?: Record<string, unknown> }>;
  next: number | null;
}

const ERRORS = 450;

/** Record error `n` of Map `mapId`, every one reprocessable. */
const recordError = (n: number, mapId: number, extra: Partial<RunRecordError> = {}): RunRecordError =>
  defaultRecordError(n, {
    mapId,
    mapName: `Map ${mapId}`,
    blockName: 'Create',
    errorDetail: '{}',
    canReprocess: true,
    ...extra,
  });

/**
 * Marks and reprocessing through the API, against an Agent played by hand over the channel: which
 * record errors can be marked, the history-level mark in one statement, and what a reprocess call
 * takes, sends and gives back.
 */
describe.each(STORE_TARGETS)('marks and reprocessing on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let O: string;
  const channels = new OpenChannels();
  /** What the played Agent answers to reprocessRun. */
  let reprocessReply: (cmd: Incoming) => Incoming = (cmd) => ({ re: cmd['id'], ok: true, result: { started: true } });

  const send = async (report: ReportBody): Promise<void> => {
    expect(await ch.report(report)).toMatchObject({ ok: true });
  };

  /** A Solution with one finished run whose errors are `errors`; answers the Solution's path and the execution. */
  const runWithErrors = async (
    name: string,
    errors: RunRecordError[],
  ): Promise<{ S: string; execution: Execution }> => {
    const sol = await svc.request<{ id: string }>('POST', `${O}/solutions`, {
      body: { name, solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(sol.status, sol.text).toBe(201);
    await svc.service.store.db.updateTable('solutions').set({ prepared: 1 }).where('id', '=', sol.body.id).execute();
    const runId = await seedRun(ch, { solutionId: sol.body.id, errors });
    const S = `${O}/solutions/${sol.body.id}`;
    const execution = (await svc.request<Execution>('GET', `${S}/history/${runId}`)).body;
    return { S, execution };
  };
  const errorsOf = async (S: string, id: number): Promise<RecordError[]> =>
    (await svc.request<RecordError[]>('GET', `${S}/history/${id}/errors?limit=1000`)).body;

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    O = `/v1/orgs/${svc.orgId}`;
    ({ agent, ch } = await connectPlayedAgent(svc, channels, {
      name: 'Marks agent',
      reply: (cmd) => (cmd['type'] === 'reprocessRun' ? reprocessReply(cmd) : undefined),
    }));
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it('marks one record error (default true) and unmarks it; one that cannot be reprocessed cannot be marked; bad input is a 400', async () => {
    const { S, execution } = await runWithErrors('Mark one', [
      recordError(1, 7),
      recordError(2, 7, { canReprocess: false, failedRecordId: undefined }),
    ]);
    const [open, closed] = await errorsOf(S, execution.id);
    const marked = await svc.request<RecordError>('POST', `${S}/history/${execution.id}/errors/${open?.id}/mark`);
    expect(marked.status, marked.text).toBe(200);
    expect(marked.body).toMatchObject({ id: open?.id, marked: true, canReprocess: true });
    const unmarked = await svc.request<RecordError>(
      'POST',
      `${S}/history/${execution.processExecutionId}/errors/${open?.id}/mark?mark=false`,
    );
    expect(unmarked.body).toMatchObject({ marked: false });

    const refused = await svc.request<{ code: string; detail: string }>(
      'POST',
      `${S}/history/${execution.id}/errors/${closed?.id}/mark?mark=true`,
    );
    expect(refused.status).toBe(409);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(refused.body.detail).toContain('kept no copy');
    // Clearing a mark it does not have is no error.
    expect(
      (await svc.request('POST', `${S}/history/${execution.id}/errors/${closed?.id}/mark?mark=false`)).status,
    ).toBe(200);

    const bad = await svc.request<{ code: string }>(
      'POST',
      `${S}/history/${execution.id}/errors/${open?.id}/mark?mark=maybe`,
    );
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('API_VALIDATION');
    expect((await svc.request('POST', `${S}/history/${execution.id}/errors/${randomUUID()}/mark`)).status).toBe(404);
    expect((await errorsOf(S, execution.id)).map((e) => e.marked)).toEqual([false, false]);
  });

  it('marks and unmarks every reprocessable record error of an execution in one call (default false)', async () => {
    const errors = Array.from({ length: ERRORS }, (_, n) =>
      recordError(n, 7, n % 10 === 0 ? { canReprocess: false, failedRecordId: undefined } : {}),
    );
    const { S, execution } = await runWithErrors('Mark all', errors);
    const all = await svc.request<{
      historyId: number;
      mark: boolean;
      changed: number;
      reprocessRecordsRemaining: number;
    }>('POST', `${S}/history/${execution.id}/mark?mark=true`);
    expect(all.status, all.text).toBe(200);
    expect(all.body).toEqual({
      historyId: execution.id,
      mark: true,
      changed: ERRORS - ERRORS / 10,
      reprocessRecordsRemaining: ERRORS - ERRORS / 10,
    });
    const listed = await errorsOf(S, execution.id);
    expect(listed.filter((e) => e.marked)).toHaveLength(ERRORS - ERRORS / 10);
    expect(listed.filter((e) => !e.canReprocess).every((e) => !e.marked)).toBe(true);
    // Again: nothing changes.
    expect(
      (await svc.request<{ changed: number }>('POST', `${S}/history/${execution.id}/mark?mark=true`)).body.changed,
    ).toBe(0);
    // Without mark: unmarks.
    const none = await svc.request<{ changed: number; mark: boolean }>('POST', `${S}/history/${execution.id}/mark`);
    expect(none.body).toMatchObject({ mark: false, changed: ERRORS - ERRORS / 10 });
    expect((await errorsOf(S, execution.id)).some((e) => e.marked)).toBe(false);
    expect((await svc.request('POST', `${S}/history/${execution.id}/mark?mark=1x`)).status).toBe(400);
    expect((await svc.request('POST', `${S}/history/999999/mark?mark=true`)).status).toBe(404);
  });

  it('reprocesses the marked records once: a new execution (isReprocessJob), the Agent reads them in pages with the cloud copies, a second reprocess does nothing', async () => {
    const errors = [
      ...Array.from({ length: 700 }, (_, n) => recordError(n, 7)),
      ...Array.from({ length: 20 }, (_, n) => recordError(n, 8)),
    ];
    const { S, execution } = await runWithErrors('Reprocess', errors);
    // The copy of one record is kept in the cloud.
    const cloudCopy = errors[3] as RunRecordError;
    await send({
      kind: 'runFailedRecords',
      runId: execution.processExecutionId,
      solutionId: S.split('/').pop() ?? '',
      records: [failedRecordOf(cloudCopy, { id: 3, name: 'three' })],
    });
    expect((await svc.request('POST', `${S}/history/${execution.id}/mark?mark=true`)).status).toBe(200);
    const listed = await errorsOf(S, execution.id);
    // One record of Map 8 is unmarked: it stays for later.
    const kept = listed.find((e) => e.id === errors[710]?.id);
    await svc.request('POST', `${S}/history/${execution.id}/errors/${kept?.id}/mark?mark=false`);

    const answer = await svc.request<ReprocessAnswer>(
      'POST',
      `${S}/history/${execution.id}/${execution.processExecutionId}/reprocess`,
    );
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ historyId: execution.id, started: true, records: 719 });
    const cmd = await ch.next((m) => m['type'] === 'reprocessRun');
    expect(cmd).toMatchObject({
      solutionId: S.split('/').pop(),
      runId: answer.body.runId,
      executionId: execution.id,
      maps: expect.arrayContaining([
        { mapId: 7, records: 700 },
        { mapId: 8, records: 19 },
      ]) as unknown,
    });

    // The reprocess run is its own execution; the records taken can no longer be marked or reprocessed.
    const job = (await svc.request<Execution>('GET', `${S}/history/${answer.body.runId}`)).body;
    expect(job).toMatchObject({ isReprocessJob: true, result: 'InProgress' });
    expect((await svc.request<Execution>('GET', `${S}/history/${execution.id}`)).body.reprocessRecordsRemaining).toBe(
      1,
    );
    const after = await errorsOf(S, execution.id);
    expect(after.filter((e) => e.canReprocess).map((e) => e.id)).toEqual([kept?.id]);
    expect((await svc.request('POST', `${S}/history/${execution.id}/errors/${errors[0]?.id}/mark`)).status).toBe(409);

    // The Agent pulls Map 7's records page by page, in order, each once.
    const bearer = { authorization: `Bearer ${agent.agentId}.${agent.agentSecret}` };
    const seen: Page['records'] = [];
    let after7 = 0;
    for (let pages = 0; pages < 10; pages++) {
      const page = await svc.request<Page>(
        'GET',
        `/v1/agent/reprocess/${answer.body.runId}/records?mapId=7&after=${after7}`,
        { auth: null, headers: bearer },
      );
      expect(page.status, page.text).toBe(200);
      seen.push(...page.body.records);
      if (page.body.next === null) break;
      after7 = page.body.next;
    }
    expect(seen.map((r) => r.errorId)).toEqual(errors.slice(0, 700).map((e) => e.id));
    expect(seen.find((r) => r.errorId === cloudCopy.id)?.source).toEqual({ id: 3, name: 'three' });
    expect(seen.filter((r) => r.source !== undefined)).toHaveLength(1);
    // Only with the credentials of the Agent that runs it.
    expect(
      (await svc.request('GET', `/v1/agent/reprocess/${answer.body.runId}/records?mapId=7`, { auth: null })).status,
    ).toBe(401);
    const other = await registerTestAgent(svc, { name: 'Another agent' });
    expect(
      (
        await svc.request('GET', `/v1/agent/reprocess/${answer.body.runId}/records?mapId=7`, {
          auth: null,
          headers: { authorization: `Bearer ${other.agentId}.${other.agentSecret}` },
        })
      ).status,
    ).toBe(404);

    // A second reprocess (the older clients' path) finds nothing marked.
    const again = await svc.request<ReprocessAnswer>('POST', `${S}/history/${execution.id}/reprocess`);
    expect(again.body).toMatchObject({ started: false, records: 0, runId: null });
    // Both references must name the same execution.
    expect((await svc.request('POST', `${S}/history/${execution.id}/${job.id}/reprocess`)).status).toBe(404);
  });

  it('ignores a reprocess while the Solution runs: nothing is taken, the records stay marked, no execution is added', async () => {
    const { S, execution } = await runWithErrors(
      'Busy',
      Array.from({ length: 5 }, (_, n) => recordError(n, 7)),
    );
    await svc.request('POST', `${S}/history/${execution.id}/mark?mark=true`);
    const running = randomUUID();
    reprocessReply = (cmd) => ({ re: cmd['id'], ok: true, result: { started: false, runId: running } });
    try {
      const answer = await svc.request<ReprocessAnswer>('POST', `${S}/history/${execution.id}/reprocess`);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toMatchObject({ started: false, runId: running, records: 0 });
      expect(answer.body.message).toContain('running');
    } finally {
      reprocessReply = (cmd) => ({ re: cmd['id'], ok: true, result: { started: true } });
    }
    const errors = await errorsOf(S, execution.id);
    expect(errors.every((e) => e.marked && e.canReprocess)).toBe(true);
    const list = (await svc.request<Execution[]>('GET', `${S}/history`)).body;
    expect(list).toHaveLength(1);
    expect(list[0]?.reprocessRecordsRemaining).toBe(5);
  });
});
