import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReportBody } from '../../../../src/protocol/channel.js';
import { shareErrorFields, type RunMapStats } from '../../../../src/protocol/solutions.js';
import {
  connectPlayedAgent,
  OpenChannels,
  registerTestAgent,
  until,
  type TestAgent,
  type TestChannel,
} from '../../../helpers/agent-client.js';
import { ago, finished, recordError, started } from '../../../helpers/history.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface Execution {
  id: number;
  processExecutionId: string;
  solutionId: string;
  start: string;
  stop: string | null;
  duration: number;
  result: string;
  details: string | null;
  recordsProcessed: number;
  recordsFailed: number;
  reprocessRecordsRemaining: number;
  trigger: string;
  dueAt: string | null;
  stopped: boolean;
  sourceDataLocal: boolean;
  mapStatistics: Array<Record<string, unknown>>;
}
interface RecordError {
  id: string;
  mapName: string;
  errorMessage: string;
  additionalErrorDetails: string;
  canReprocess: boolean;
  marked: boolean;
  failedRecordId: string | null;
}
interface SolutionModel {
  id: string;
  status: string;
  lastRunTime: string | null;
  inProgressStartTime: string | null;
}

const STATS: RunMapStats[] = [
  {
    mapId: 7,
    mapName: 'Accounts',
    entity: 'account',
    processed: 10,
    failed: 2,
    minMs: 1,
    maxMs: 9,
    avgMs: 4.5,
    totalMs: 3_723_000,
    totalTime: '01:02:03',
    blocks: [
      {
        blockId: 'b1',
        name: 'Query accounts',
        blockType: 'Query',
        processed: 10,
        failed: 0,
        minMs: 1,
        maxMs: 2,
        avgMs: 1.5,
        totalMs: 15,
      },
      {
        blockId: 'b2',
        name: 'Create contact',
        blockType: 'Create',
        processed: 10,
        failed: 2,
        minMs: 3,
        maxMs: 9,
        avgMs: 5,
        totalMs: 50,
      },
    ],
  },
];

describe.each(STORE_TARGETS)('History on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let S: string;
  const channels = new OpenChannels();
  const db = () => svc.service.store.db;

  const send = async (report: ReportBody, id?: string): Promise<void> => {
    const reply = await ch.report(report, id);
    expect(reply, JSON.stringify(reply)).toMatchObject({ ok: true });
  };
  const solution = async (name: string, prepared = true): Promise<string> => {
    const res = await svc.request<SolutionModel>('POST', S, {
      body: { name, solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(res.status, res.text).toBe(201);
    // Prepare is not what this suite tests: a prepared Solution shows the run statuses.
    if (prepared) await db().updateTable('solutions').set({ prepared: 1 }).where('id', '=', res.body.id).execute();
    return res.body.id;
  };
  const history = async (solutionId: string, query = '') => {
    const res = await svc.request<Execution[]>('GET', `${S}/${solutionId}/history${query}`);
    expect(res.status, res.text).toBe(200);
    return { items: res.body, total: Number(res.headers['total-count']) };
  };
  const getSolution = async (id: string) => (await svc.request<SolutionModel>('GET', `${S}/${id}`)).body;
  const isUsage = async (): Promise<number> => {
    const res = await svc.request<Array<{ name: string; recordsProcessed: number }>>(
      'GET',
      `/v1/orgs/${svc.orgId}/subscriptions`,
    );
    return res.body.find((s) => s.name === 'Integration Services (IS)')?.recordsProcessed ?? -1;
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

  it('shows a run InProgress, then finished with its counts and statistics; the Solution follows', async () => {
    const id = await solution('Nightly accounts');
    const runId = randomUUID();
    const start = ago(10);
    await send(started(id, runId, start));
    const { items, total } = await history(id);
    expect(total).toBe(1);
    const [running] = items;
    expect(running).toMatchObject({
      processExecutionId: runId,
      solutionId: id,
      start,
      stop: null,
      result: 'InProgress',
      trigger: 'start',
      recordsProcessed: 0,
    });
    expect(Number.isInteger(running?.id)).toBe(true);
    expect(running?.duration).toBeGreaterThanOrEqual(600);
    expect(await getSolution(id)).toMatchObject({ status: 'InProgress', inProgressStartTime: start });

    await send({ kind: 'runProgress', runId, solutionId: id, at: ago(5), processed: 6, failed: 1 });
    expect((await svc.request<Execution>('GET', `${S}/${id}/history/${running?.id}`)).body).toMatchObject({
      result: 'InProgress',
      recordsProcessed: 6,
      recordsFailed: 1,
    });

    await send(
      finished(id, runId, start, {
        result: 'CompletedWithErrors',
        processed: 10,
        failed: 2,
        statistics: STATS,
        details: 'two records refused',
      }),
    );
    // Progress arriving after the end changes nothing.
    await send({ kind: 'runProgress', runId, solutionId: id, at: ago(1), processed: 7, failed: 1 });
    const done = (await svc.request<Execution>('GET', `${S}/${id}/history/${running?.id}`)).body;
    expect(done).toMatchObject({
      result: 'CompletedWithErrors',
      recordsProcessed: 10,
      recordsFailed: 2,
      duration: 90.5,
      details: 'two records refused',
      sourceDataLocal: true,
      stopped: false,
    });
    expect(done.mapStatistics).toEqual([
      {
        mapId: 7,
        mapName: 'Accounts',
        entityName: 'account',
        recordsProcessed: 10,
        recordsFailed: 2,
        minimum: 1,
        maximum: 9,
        average: 4.5,
        totalTime: 3_723_000,
        totalTimeFormatted: '01:02:03',
        fatalError: null,
      },
    ]);
    // The run ID names the execution too.
    expect((await svc.request<Execution>('GET', `${S}/${id}/history/${runId}`)).body.id).toBe(running?.id);

    const stats = await svc.request<{ mapStatistics: unknown[]; legacyCounters: unknown[] }>(
      'GET',
      `${S}/${id}/history/${running?.id}/statistics`,
    );
    expect(stats.status).toBe(200);
    expect(stats.body.mapStatistics).toEqual(done.mapStatistics);
    expect(stats.body.legacyCounters).toEqual([
      {
        mapName: 'Accounts',
        blockId: 'b1',
        blockName: 'Query accounts',
        actionType: 'Query',
        callCount: 10,
        errorCount: 0,
        minimum: 1,
        maximum: 2,
        average: 1.5,
        totalTime: 15,
      },
      {
        mapName: 'Accounts',
        blockId: 'b2',
        blockName: 'Create contact',
        actionType: 'Create',
        callCount: 10,
        errorCount: 2,
        minimum: 3,
        maximum: 9,
        average: 5,
        totalTime: 50,
      },
    ]);
    expect(await getSolution(id)).toMatchObject({
      status: 'OnDemandLastRunRowErrors',
      lastRunTime: start,
      inProgressStartTime: null,
    });
    expect((await history(id, '?result=inprogress')).items).toEqual([]);
  });

  it('counts a report delivered twice once: the same message ID, and the same content under a new one', async () => {
    const id = await solution('Twice');
    const runId = randomUUID();
    const start = ago(30);
    const before = await isUsage();
    const startedId = randomUUID();
    await send(started(id, runId, start), startedId);
    await send(started(id, runId, start), startedId);
    await send(started(id, runId, start));
    const errors = [recordError(1), recordError(2)];
    await send({ kind: 'runErrors', runId, solutionId: id, errors });
    await send({ kind: 'runErrors', runId, solutionId: id, errors });
    const end = finished(id, runId, start, { result: 'CompletedWithErrors', processed: 7, failed: 2 });
    const endId = randomUUID();
    await send(end, endId);
    await send(end, endId);
    await send(end);
    const { items, total } = await history(id);
    expect(total).toBe(1);
    expect(items[0]).toMatchObject({ recordsProcessed: 7, reprocessRecordsRemaining: 1 });
    const errs = await svc.request<RecordError[]>('GET', `${S}/${id}/history/${items[0]?.id}/errors`);
    expect(errs.headers['total-count']).toBe('2');
    expect(errs.body.map((e) => e.id)).toEqual(errors.map((e) => e.id));
    expect(await isUsage()).toBe(before + 7);
  });

  it('stores errors sent with shared fields as those sent whole, and one sent both ways once', async () => {
    const id = await solution('Shared fields');
    const runId = randomUUID();
    await send(started(id, runId, ago(10)));
    const errors = [
      recordError(1, { errorMessage: 'alike' }),
      recordError(2, { errorMessage: 'alike' }),
      recordError(3, { errorMessage: 'alike', blockName: 'Update contact' }),
    ];
    const report = { kind: 'runErrors' as const, runId, solutionId: id, ...shareErrorFields(errors) };
    expect(report.shared).toMatchObject({ mapName: 'Accounts', errorMessage: 'alike' });
    await send(report);
    await send({ kind: 'runErrors', runId, solutionId: id, errors });
    const { items } = await history(id);
    const errs = await svc.request<RecordError[]>('GET', `${S}/${id}/history/${items[0]?.id}/errors`);
    expect(errs.headers['total-count']).toBe('3');
    expect(
      errs.body.map((e) => ({
        id: e.id,
        mapName: e.mapName,
        errorMessage: e.errorMessage,
        canReprocess: e.canReprocess,
        failedRecordId: e.failedRecordId,
      })),
    ).toEqual(
      errors.map((e) => ({
        id: e.id,
        mapName: e.mapName,
        errorMessage: e.errorMessage,
        canReprocess: e.canReprocess,
        failedRecordId: e.failedRecordId,
      })),
    );
    // An error missing a field both in itself and in shared is refused, and nothing of its report is stored.
    const bad = await ch.report({
      kind: 'runErrors',
      runId,
      solutionId: id,
      shared: { mapName: 'Accounts' },
      errors: [{ id: randomUUID(), sourceEntity: 'account' }],
    } as unknown as ReportBody);
    expect(bad).toMatchObject({ ok: false, error: { code: 'CHN_INVALID_MESSAGE' } });
    expect(
      (await svc.request<RecordError[]>('GET', `${S}/${id}/history/${items[0]?.id}/errors`)).headers['total-count'],
    ).toBe('3');
  });

  it("records what a run that ended with its Agent committed: the end's counts, stop and statistics over its last progress, counted in usage once", async () => {
    const id = await solution('Killed');
    const runId = randomUUID();
    const start = ago(20);
    const before = await isUsage();
    await send(started(id, runId, start));
    await send({ kind: 'runProgress', runId, solutionId: id, at: ago(19.95), processed: 10_000, failed: 0 });
    // The Agent came back 97 s later; the run's last batch was committed 4 s after its start.
    const stop = new Date(Date.parse(start) + 4_000).toISOString();
    const stats: RunMapStats[] = [{ ...(STATS[0] as RunMapStats), processed: 42_000, failed: 4, blocks: [] }];
    const end = finished(id, runId, start, {
      result: 'RecordErrorsAndFatalErrors',
      processed: 42_000,
      failed: 4,
      at: stop,
      statistics: stats,
      details: 'RUN_AGENT_ENDED: The Agent process ended during this run.',
    });
    await send(end);
    // Sent again under a new message ID (a kill right after it was queued): counted once.
    await send(end);
    const { items } = await history(id);
    expect(items[0]).toMatchObject({
      result: 'RecordErrorsAndFatalErrors',
      recordsProcessed: 42_000,
      recordsFailed: 4,
      stop,
      duration: 4,
    });
    expect(items[0]?.mapStatistics).toMatchObject([{ mapId: 7, recordsProcessed: 42_000, recordsFailed: 4 }]);
    expect(await isUsage()).toBe(before + 42_000);
  });

  it("raises a killed run's counts to what a later run found in the target's checkpoint, once, and never lowers them", async () => {
    const id = await solution('Killed after a commit');
    const runId = randomUUID();
    const start = ago(30);
    const before = await isUsage();
    await send(started(id, runId, start));
    const stop = new Date(Date.parse(start) + 4_000).toISOString();
    const other: RunMapStats = {
      ...(STATS[0] as RunMapStats),
      mapId: 8,
      mapName: 'Contacts',
      processed: 500,
      failed: 0,
      blocks: [],
    };
    const stats: RunMapStats[] = [other, { ...(STATS[0] as RunMapStats), processed: 42_000, failed: 4, blocks: [] }];
    await send(
      finished(id, runId, start, {
        result: 'RecordErrorsAndFatalErrors',
        processed: 42_500,
        failed: 4,
        at: stop,
        statistics: stats,
        details: 'RUN_AGENT_ENDED: The Agent process ended during this run.',
      }),
    );
    // The next run read Map 7's checkpoint: one batch more had committed, 1 s after the last counted.
    const at = new Date(Date.parse(stop) + 1_000).toISOString();
    const correction: ReportBody = {
      kind: 'runCommitted',
      runId,
      solutionId: id,
      mapId: 7,
      mapName: 'Accounts',
      processed: 44_000,
      failed: 4,
      at,
    };
    await send(correction);
    await send(correction);
    // A figure not larger (a report of an older checkpoint) changes nothing.
    await send({ ...correction, processed: 43_000, at: ago(1) });
    const { items } = await history(id);
    expect(items[0]).toMatchObject({
      result: 'RecordErrorsAndFatalErrors',
      recordsProcessed: 44_500,
      recordsFailed: 4,
      stop: at,
      duration: 5,
    });
    expect(items[0]?.mapStatistics).toMatchObject([
      { mapId: 8, recordsProcessed: 500 },
      { mapId: 7, recordsProcessed: 44_000, recordsFailed: 4 },
    ]);
    expect(await isUsage()).toBe(before + 44_500);

    // A run still going, or one of another Solution, is not changed by it.
    const going = randomUUID();
    await send(started(id, going, ago(2)));
    await send({ ...correction, runId: going });
    const other2 = await solution("Not the killed run's");
    await send({ ...correction, solutionId: other2, processed: 50_000 });
    const now = (await history(id)).items;
    expect(now.find((e) => e.processExecutionId === going)).toMatchObject({
      result: 'InProgress',
      recordsProcessed: 0,
    });
    expect(now.find((e) => e.processExecutionId === runId)).toMatchObject({ recordsProcessed: 44_500 });
    expect(await isUsage()).toBe(before + 44_500);
  });

  it("takes the end's counts, which add up to its statistics, over a progress that said more", async () => {
    const id = await solution('Fewer at the end');
    const runId = randomUUID();
    const start = ago(20);
    const before = await isUsage();
    await send(started(id, runId, start));
    await send({ kind: 'runProgress', runId, solutionId: id, at: ago(19), processed: 700, failed: 3 });
    await send(
      finished(id, runId, start, {
        result: 'CompletedWithErrors',
        processed: 650,
        failed: 2,
        statistics: [{ ...(STATS[0] as RunMapStats), processed: 650, failed: 2 }],
      }),
    );
    expect((await history(id)).items[0]).toMatchObject({ recordsProcessed: 650, recordsFailed: 2 });
    expect(await isUsage()).toBe(before + 650);
  });

  it('keeps the counts the progress reports gave a run an older Agent ended with no counts at all (RUN_AGENT_ENDED)', async () => {
    const id = await solution('Killed on an older Agent');
    const runId = randomUUID();
    const start = ago(20);
    const before = await isUsage();
    await send(started(id, runId, start));
    await send({ kind: 'runProgress', runId, solutionId: id, at: ago(19), processed: 700, failed: 3 });
    await send(
      finished(id, runId, start, {
        result: 'FatalError',
        processed: 0,
        failed: 0,
        details: 'RUN_AGENT_ENDED: The Agent process ended during this run.',
      }),
    );
    const { items } = await history(id);
    expect(items[0]).toMatchObject({ result: 'FatalError', recordsProcessed: 700, recordsFailed: 3 });
    expect(await isUsage()).toBe(before + 700);
  });

  it('says in details while a run is going that its Agent is away, naming it and its last contact, until it reconnects', async () => {
    const away = await registerTestAgent(svc, { name: 'Plant 7' });
    let plant = await channels.connect(svc, away);
    plant.autoReply = (cmd) => ({
      re: cmd['id'],
      ok: true,
      result: cmd['type'] === 'assignSolutions' ? { need: [] } : {},
    });
    expect(await plant.hello(away)).toMatchObject({ ok: true });
    const res = await svc.request<SolutionModel>('POST', S, {
      body: { name: 'Far away', solutionType: 'Integration', agentId: away.agentId },
    });
    expect(res.status, res.text).toBe(201);
    const id = res.body.id;
    const runId = randomUUID();
    const start = ago(3);
    const reply = await plant.report(started(id, runId, start));
    expect(reply).toMatchObject({ ok: true });
    const one = async () => (await svc.request<Execution>('GET', `${S}/${id}/history/${runId}`)).body;
    expect(await one()).toMatchObject({ result: 'InProgress', details: null });

    // The channel drops (the Agent killed, the cable pulled): the run still shows, and says why nothing moves.
    await plant.close();
    const lastContact = (
      await db().selectFrom('agents').select('lastContactTime').where('id', '=', away.agentId).executeTakeFirstOrThrow()
    ).lastContactTime;
    const note = `The Agent Plant 7 (${away.agentId}) has not been in contact since ${lastContact}; the run's outcome is recorded when it reconnects.`;
    const shown = await until(async () => {
      const e = await one();
      return e.details === note ? e : undefined;
    }, 'the away note');
    expect(shown).toMatchObject({ result: 'InProgress', stop: null });
    expect((await history(id)).items[0]?.details).toBe(note);
    expect((await history(id, '?result=InProgress')).items[0]?.details).toBe(note);
    // Silent past the heartbeat thresholds: the status says so too.
    await db().updateTable('agents').set({ status: 'HeartbeatFailed' }).where('id', '=', away.agentId).execute();
    expect((await one()).details).toBe(note.replace('; the run', ' (HeartbeatFailed); the run'));

    // Back: nothing more to say until its report of the run arrives.
    plant = await channels.connect(svc, away);
    plant.autoReply = (cmd) => ({
      re: cmd['id'],
      ok: true,
      result: cmd['type'] === 'assignSolutions' ? { need: [] } : {},
    });
    expect(await plant.hello(away)).toMatchObject({ ok: true });
    expect(await one()).toMatchObject({ result: 'InProgress', details: null });
    await plant.report(
      finished(id, runId, start, {
        result: 'FatalError',
        details: 'RUN_AGENT_ENDED: The Agent process ended during this run.',
      }),
    );
    await plant.close();
    // An ended run keeps its own details, whatever becomes of its Agent.
    expect(await one()).toMatchObject({
      result: 'FatalError',
      details: 'RUN_AGENT_ENDED: The Agent process ended during this run.',
    });
  });

  it('keeps one run whatever order its reports arrive in', async () => {
    const id = await solution('Out of order');
    const runId = randomUUID();
    const [start, dueAt] = [ago(15), ago(16)];
    await send({ kind: 'runErrors', runId, solutionId: id, errors: [recordError(2)] });
    await send({ kind: 'runStarted', runId, solutionId: id, trigger: 'schedule', dueAt, at: start });
    expect((await history(id)).items).toMatchObject([
      {
        processExecutionId: runId,
        start,
        trigger: 'schedule',
        dueAt,
        result: 'InProgress',
        reprocessRecordsRemaining: 1,
      },
    ]);
    await send(
      finished(id, runId, start, { trigger: 'schedule', result: 'CompletedWithErrors', processed: 3, failed: 1 }),
    );
    // The start sent again after the end (a new message ID) does not make the run go again.
    await send({ kind: 'runStarted', runId, solutionId: id, trigger: 'schedule', dueAt, at: start });
    expect((await history(id)).items).toMatchObject([{ result: 'CompletedWithErrors', recordsProcessed: 3 }]);
    expect(await getSolution(id)).toMatchObject({
      status: 'OnDemandLastRunRowErrors',
      inProgressStartTime: null,
      lastRunTime: start,
    });

    // An end that overtook its start.
    const early = randomUUID();
    const earlyStart = ago(5);
    await send(finished(id, early, earlyStart, { processed: 1 }));
    await send(started(id, early, earlyStart));
    expect((await history(id)).items.map((e) => [e.processExecutionId, e.result])).toEqual([
      [runId, 'CompletedWithErrors'],
      [early, 'CompletedSuccessfully'],
    ]);
    expect(await getSolution(id)).toMatchObject({
      status: 'OnDemand',
      inProgressStartTime: null,
      lastRunTime: earlyStart,
    });
  });

  it('shows the last run: IdleLastRunFailed for a scheduled Solution, and a late older end does not overwrite it', async () => {
    const id = await solution('Scheduled');
    const schedule = {
      scheduleOption: 'Recurring',
      recurringOptions: {
        days: { daysOption: 'DaysInterval', daysInterval: 1 },
        times: { timeOption: 'TimeOfDay', timeOfDay: '6:30' },
        timeZone: 'UTC',
      },
    };
    expect((await svc.request('PUT', `${S}/${id}/schedule`, { body: schedule })).status).toBe(200);
    const [older, newer] = [randomUUID(), randomUUID()];
    const [olderStart, newerStart] = [ago(120), ago(60)];
    await send(started(id, older, olderStart));
    await send(started(id, newer, newerStart));
    await send(finished(id, newer, newerStart, { result: 'FatalError', details: 'the target refused the login' }));
    expect(await getSolution(id)).toMatchObject({ status: 'IdleLastRunFailed', lastRunTime: newerStart });
    await send(finished(id, older, olderStart, { result: 'CompletedSuccessfully', processed: 3 }));
    expect(await getSolution(id)).toMatchObject({ status: 'IdleLastRunFailed', lastRunTime: newerStart });
    const fatal = (await history(id, '?result=FatalError')).items[0];
    expect(fatal).toMatchObject({ processExecutionId: newer, details: 'the target refused the login' });
  });

  it('drops a report about a Solution of another Organization', async () => {
    const rule = {
      name: 'loopback',
      allowedIpRangeStartAddress: '127.0.0.1',
      allowedIpRangeEndAddress: '127.0.0.1',
      apiAccessEnabled: true,
    };
    const org = await svc.request<{ id: number }>('POST', '/v1/orgs', {
      body: { name: 'Elsewhere', parentId: svc.orgId, securityRules: [rule] },
    });
    expect(org.status, org.text).toBe(201);
    const theirAgent = await registerTestAgent(svc, { orgId: org.body.id, name: 'Their agent' });
    const theirs = await svc.request<SolutionModel>('POST', `/v1/orgs/${org.body.id}/solutions`, {
      body: { name: 'Theirs', solutionType: 'Integration', agentId: theirAgent.agentId },
    });
    expect(theirs.status, theirs.text).toBe(201);
    await send(started(theirs.body.id, randomUUID(), ago(1)));
    const res = await svc.request<Execution[]>('GET', `/v1/orgs/${org.body.id}/solutions/${theirs.body.id}/history`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('deletes History with its Solution, and acknowledges and drops reports about a deleted Solution', async () => {
    const id = await solution('Short-lived');
    const runId = randomUUID();
    const start = ago(4);
    await send(started(id, runId, start));
    await send({ kind: 'runErrors', runId, solutionId: id, errors: [recordError(1)] });
    await send(finished(id, runId, start, { processed: 1 }));
    await send({ kind: 'scheduleSkipped', solutionId: id, dueAt: ago(3), reason: 'running', at: ago(3) });
    expect((await svc.request('DELETE', `${S}/${id}`)).status).toBe(204);
    const count = async () => ({
      executions: (await db().selectFrom('executions').select('id').where('solutionId', '=', id).execute()).length,
      errors: (
        await db()
          .selectFrom('executionErrors')
          .select('id')
          .where('executionId', 'in', db().selectFrom('executions').select('id').where('runId', '=', runId))
          .execute()
      ).length,
      skips: (await db().selectFrom('scheduleSkips').select('dueAt').where('solutionId', '=', id).execute()).length,
    });
    expect(await count()).toEqual({ executions: 0, errors: 0, skips: 0 });

    const usage = await isUsage();
    const late = randomUUID();
    await send(started(id, late, ago(2)));
    await send({ kind: 'runProgress', runId: late, solutionId: id, at: ago(1), processed: 1, failed: 0 });
    await send({ kind: 'runErrors', runId: late, solutionId: id, errors: [recordError(2)] });
    await send(finished(id, late, ago(2), { processed: 4 }));
    await send({ kind: 'scheduleSkipped', solutionId: id, dueAt: ago(1), reason: 'missed', at: ago(1) });
    expect(await count()).toEqual({ executions: 0, errors: 0, skips: 0 });
    expect(await isUsage()).toBe(usage);
    // The channel is still open and working.
    expect(await ch.heartbeat()).toMatchObject({ ok: true });
  });
});
