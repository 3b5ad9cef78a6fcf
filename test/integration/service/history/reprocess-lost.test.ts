import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReportBody } from '../../../../src/protocol/channel.js';
import type { RunRecordError } from '../../../../src/protocol/solutions.js';
import {
  OpenChannels,
  registerTestAgent,
  until,
  type Incoming,
  type TestAgent,
  type TestChannel,
} from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface Execution {
  id: number;
  processExecutionId: string;
  result: string;
  isReprocessJob: boolean;
  reprocessRecordsRemaining: number;
}
interface RecordError {
  id: string;
  canReprocess: boolean;
  marked: boolean;
}
interface Problem {
  code: string;
  detail: string;
}

const ERRORS = 5;

const recordError = (n: number): RunRecordError => ({
  id: randomUUID(),
  mapId: 7,
  mapName: 'Map 7',
  sourceEntity: 'account',
  blockName: 'Create',
  code: 'RUN_WRITE_FAILED',
  errorMessage: `record ${n} refused`,
  errorDetail: '{}',
  canReprocess: true,
  failedRecordId: randomUUID(),
});

/** How the played Agent answers the two commands this file is about; undefined: no answer at all. */
interface Answers {
  reprocessRun: (cmd: Incoming, ch: TestChannel) => Incoming | undefined;
  knownRuns: (cmd: Incoming) => Incoming | undefined;
}

/**
 * A reprocess run whose reprocessRun the Agent never answered (the channel dropped, or the answer
 * did not come in time), against an Agent played by hand over the real channel: the Service asks
 * it with knownRuns, when it connects and on a timer, and gives the records back (marked, and the
 * run's execution removed) only for a run the Agent says it does not know.
 */
describe.each(STORE_TARGETS)('reprocess runs the Agent never answered, on $name', (target) => {
  let svc: TestService;
  let O: string;
  const channels = new OpenChannels();

  beforeAll(async () => {
    // The check runs every 200 ms here instead of every minute.
    svc = await startService(target, { cloudAgents: 'off' }, { lostReprocessRunsMs: 200 });
    O = `/v1/orgs/${svc.orgId}`;
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  /** A played Agent, connected, that answers every other command with success. */
  const connect = async (
    agent: TestAgent,
    answers: Answers,
  ): Promise<{ ch: TestChannel; asked: Array<Incoming & { receivedAt: number }> }> => {
    const ch = await channels.connect(svc, agent);
    const asked: Array<Incoming & { receivedAt: number }> = [];
    ch.autoReply = (cmd) => {
      if (cmd['type'] === 'reprocessRun') return answers.reprocessRun(cmd, ch);
      if (cmd['type'] === 'knownRuns') {
        asked.push({ ...cmd, receivedAt: Date.now() });
        return answers.knownRuns(cmd);
      }
      return { re: cmd['id'], ok: true, result: cmd['type'] === 'assignSolutions' ? { need: [] } : {} };
    };
    expect(await ch.hello(agent)).toMatchObject({ ok: true });
    return { ch, asked };
  };

  /** A Solution of `agent` with one finished run of ERRORS record errors, all marked. */
  const markedRun = async (
    agent: TestAgent,
    ch: TestChannel,
  ): Promise<{ S: string; solutionId: string; execution: Execution }> => {
    const sol = await svc.request<{ id: string }>('POST', `${O}/solutions`, {
      body: { name: `Lost ${randomUUID().slice(0, 8)}`, solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(sol.status, sol.text).toBe(201);
    await svc.service.store.db.updateTable('solutions').set({ prepared: 1 }).where('id', '=', sol.body.id).execute();
    const runId = randomUUID();
    const at = new Date(Date.now() - 60_000).toISOString();
    const send = async (report: ReportBody) => expect(await ch.report(report)).toMatchObject({ ok: true });
    await send({ kind: 'runStarted', runId, solutionId: sol.body.id, trigger: 'start', at });
    await send({
      kind: 'runErrors',
      runId,
      solutionId: sol.body.id,
      errors: Array.from({ length: ERRORS }, (_, i) => recordError(i)),
    });
    await send({
      kind: 'runFinished',
      runId,
      solutionId: sol.body.id,
      trigger: 'start',
      startedAt: at,
      at: new Date().toISOString(),
      result: 'CompletedWithErrors',
      processed: ERRORS,
      failed: ERRORS,
      stopped: false,
      sourceDataLocal: true,
      statistics: [],
    });
    const S = `${O}/solutions/${sol.body.id}`;
    const execution = (await svc.request<Execution>('GET', `${S}/history/${runId}`)).body;
    expect(
      (await svc.request<{ changed: number }>('POST', `${S}/history/${execution.id}/mark?mark=true`)).body.changed,
    ).toBe(ERRORS);
    return { S, solutionId: sol.body.id, execution };
  };

  const remaining = async (S: string, id: number): Promise<number> =>
    (await svc.request<Execution>('GET', `${S}/history/${id}`)).body.reprocessRecordsRemaining;
  const reprocessRuns = async (S: string): Promise<Execution[]> =>
    (await svc.request<Execution[]>('GET', `${S}/history`)).body.filter((e) => e.isReprocessJob);
  /** As if the reprocess had been sent a minute ago: older than the Service's wait for its answer. */
  const age = (runId: string) =>
    svc.service.store.db
      .updateTable('executions')
      .set({ start: new Date(Date.now() - 60_000).toISOString() })
      .where('runId', '=', runId)
      .execute();

  const silent = (): undefined => undefined;
  const knowsNone = (cmd: Incoming): Incoming => ({ re: cmd['id'], ok: true, result: { known: [] } });

  it('the channel drops before the answer: the reconnected Agent does not know the run, so its records come back marked and the run leaves History', async () => {
    const agent = await registerTestAgent(svc);
    const first = await connect(agent, {
      reprocessRun: (_cmd, ch) => {
        ch.ws.terminate();
        return undefined;
      },
      knownRuns: knowsNone,
    });
    const { S, execution } = await markedRun(agent, first.ch);

    const lost = await svc.request<Problem>('POST', `${S}/history/${execution.id}/reprocess`);
    expect(lost.status).toBe(409);
    expect(lost.body.code).toBe('AGT_NOT_CONNECTED');
    expect(lost.body.detail).toContain('given back, still marked');
    const [run] = await reprocessRuns(S);
    expect(run).toMatchObject({ result: 'InProgress' });
    expect(lost.body.detail).toContain(run?.processExecutionId);
    expect(await remaining(S, execution.id)).toBe(0);

    await first.ch.closed;
    await age(run?.processExecutionId ?? '');
    const second = await connect(agent, {
      reprocessRun: (cmd) => ({ re: cmd['id'], ok: true, result: { started: true } }),
      knownRuns: knowsNone,
    });
    await until(
      async () => ((await remaining(S, execution.id)) === ERRORS ? true : undefined),
      'the records given back',
    );
    expect(second.asked[0]?.['runIds']).toEqual([run?.processExecutionId]);
    expect(await reprocessRuns(S)).toEqual([]);
    expect((await svc.request('GET', `${S}/history/${run?.processExecutionId}`)).status).toBe(404);
    const errors = (await svc.request<RecordError[]>('GET', `${S}/history/${execution.id}/errors`)).body;
    expect(errors.map((e) => [e.canReprocess, e.marked])).toEqual(Array.from({ length: ERRORS }, () => [true, true]));

    // Reprocessable again, once.
    const again = await svc.request<{ started: boolean; records: number }>(
      'POST',
      `${S}/history/${execution.id}/reprocess`,
    );
    expect(again.body).toMatchObject({ started: true, records: ERRORS });
    expect(await remaining(S, execution.id)).toBe(0);
  });

  it('the Agent knows the run (it started it before the channel dropped): nothing comes back, and the run ends by its own report', async () => {
    const agent = await registerTestAgent(svc);
    const first = await connect(agent, {
      reprocessRun: (_cmd, ch) => {
        ch.ws.terminate();
        return undefined;
      },
      knownRuns: knowsNone,
    });
    const { S, solutionId, execution } = await markedRun(agent, first.ch);
    expect((await svc.request('POST', `${S}/history/${execution.id}/reprocess`)).status).toBe(409);
    const runId = (await reprocessRuns(S))[0]?.processExecutionId ?? '';
    await first.ch.closed;
    await age(runId);

    const second = await connect(agent, {
      reprocessRun: silent,
      knownRuns: (cmd) => ({ re: cmd['id'], ok: true, result: { known: cmd['runIds'] } }),
    });
    // Asked twice: the first answer has been applied.
    await until(async () => (second.asked.length >= 2 ? true : undefined), 'two checks');
    expect(await reprocessRuns(S)).toMatchObject([{ processExecutionId: runId, result: 'InProgress' }]);
    expect(await remaining(S, execution.id)).toBe(0);

    // Its reports, from the Agent's outbox: the run ends, and its records stay taken.
    const at = new Date().toISOString();
    expect(await second.ch.report({ kind: 'runStarted', runId, solutionId, trigger: 'start', at })).toMatchObject({
      ok: true,
    });
    expect(
      await second.ch.report({
        kind: 'runFinished',
        runId,
        solutionId,
        trigger: 'start',
        startedAt: at,
        at,
        result: 'CompletedSuccessfully',
        processed: ERRORS,
        failed: 0,
        stopped: false,
        sourceDataLocal: true,
        statistics: [],
      }),
    ).toMatchObject({ ok: true });
    expect(await reprocessRuns(S)).toMatchObject([{ processExecutionId: runId, result: 'CompletedSuccessfully' }]);
    expect(await remaining(S, execution.id)).toBe(0);
  });

  it('an Agent that cannot answer knownRuns (an older version) keeps the records taken', async () => {
    const agent = await registerTestAgent(svc);
    const first = await connect(agent, {
      reprocessRun: (_cmd, ch) => {
        ch.ws.terminate();
        return undefined;
      },
      knownRuns: knowsNone,
    });
    const { S, execution } = await markedRun(agent, first.ch);
    expect((await svc.request('POST', `${S}/history/${execution.id}/reprocess`)).status).toBe(409);
    const runId = (await reprocessRuns(S))[0]?.processExecutionId ?? '';
    await first.ch.closed;
    await age(runId);

    const older = await connect(agent, {
      reprocessRun: silent,
      knownRuns: (cmd) => ({
        re: cmd['id'],
        ok: false,
        error: { code: 'CHN_INVALID_MESSAGE', kind: 'config', message: 'type: Invalid discriminator value' },
      }),
    });
    await until(async () => (older.asked.length >= 2 ? true : undefined), 'two checks');
    expect(await reprocessRuns(S)).toMatchObject([{ processExecutionId: runId, result: 'InProgress' }]);
    expect(await remaining(S, execution.id)).toBe(0);
  });

  it(
    'no answer in time on a channel that stays open: the next check asks on the same channel and gives the records back',
    { timeout: 60_000 },
    async () => {
      const agent = await registerTestAgent(svc);
      const { ch, asked } = await connect(agent, { reprocessRun: silent, knownRuns: knowsNone });
      const { S, execution } = await markedRun(agent, ch);

      const sent = Date.now();
      const late = await svc.request<Problem>('POST', `${S}/history/${execution.id}/reprocess`);
      expect(late.status).toBe(504);
      expect(late.body.code).toBe('CHN_TIMEOUT');
      expect(late.body.detail).toContain('did not answer the reprocess command in time');

      await until(
        async () => ((await remaining(S, execution.id)) === ERRORS ? true : undefined),
        'the records given back',
      );
      expect(await reprocessRuns(S)).toEqual([]);
      // Not before the reprocess call had stopped waiting for its answer (10 s), though checks ran every 200 ms.
      expect(asked.length).toBeGreaterThan(0);
      expect(Math.min(...asked.map((a) => a.receivedAt)) - sent).toBeGreaterThanOrEqual(10_000);
    },
  );
});
