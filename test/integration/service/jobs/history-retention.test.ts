import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pruneFailedRecordsCommand } from '../../../../src/agent/commands/prune-failed-records.command.js';
import { FailedRecordStore } from '../../../../src/failures/store.js';
import type { ReportBody } from '../../../../src/protocol/channel.js';
import { HistoryRetention } from '../../../../service/jobs/history-retention.js';
import {
  connectPlayedAgent,
  OpenChannels,
  registerTestAgent,
  type TestAgent,
  type TestChannel,
} from '../../../helpers/agent-client.js';
import { failedRecordOf, recordError, seedRun } from '../../../helpers/history.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

const DAY = 86_400_000;
const RETENTION_DAYS = 30;
const silent = pino({ level: 'silent' });
const daysAgo = (days: number, now = Date.now()): string => new Date(now - days * DAY).toISOString();

describe.each(STORE_TARGETS)('History retention on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let S: string;
  const channels = new OpenChannels();
  const db = () => svc.service.store.db;

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
  /** A run that started `start`, with `errors` record errors (their failed records in the cloud); finished unless `running`. */
  const run = async (
    solutionId: string,
    start: string,
    errors: number,
    running = false,
  ): Promise<{ runId: string; id: number; errorIds: string[]; recordIds: string[] }> => {
    const errs = Array.from({ length: errors }, (_, i) => recordError(i, { errorDetail: '', canReprocess: true }));
    const failedRecords = errs.map((e) => failedRecordOf(e, { Name: e.failedRecordId }));
    const recordIds = failedRecords.map((r) => r.id);
    const runId = await seedRun(ch, {
      solutionId,
      start,
      errors: errs,
      failedRecords,
      finish: running ? false : { sourceDataLocal: false },
    });
    const row = await db().selectFrom('executions').select('id').where('runId', '=', runId).executeTakeFirstOrThrow();
    return { runId, id: Number(row.id), errorIds: errs.map((e) => e.id), recordIds };
  };
  const exists = async (solutionId: string, id: number): Promise<boolean> => {
    const res = await svc.request('GET', `${S}/${solutionId}/history/${id}`);
    expect([200, 404]).toContain(res.status);
    return res.status === 200;
  };
  const errorCount = async (executionId: number): Promise<number> =>
    Number(
      (
        await db()
          .selectFrom('executionErrors')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('executionId', '=', executionId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  const cloudRecords = async (runId: string): Promise<number> =>
    Number(
      (
        await db()
          .selectFrom('failedRecords')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('runId', '=', runId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off', historyRetentionDays: RETENTION_DAYS });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    ({ agent, ch } = await connectPlayedAgent(svc, channels, {
      name: 'Retention agent',
      results: { pruneFailedRecords: { removed: 0 } },
    }));
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it('removes ended executions past the window with their errors, cloud failed records and exports, in chunks; keeps the rest', async () => {
    const id = await solution('Retained');
    const old = await run(id, daysAgo(RETENTION_DAYS + 5), 260);
    const edge = await run(id, daysAgo(RETENTION_DAYS + 1), 3);
    const recent = await run(id, daysAgo(RETENTION_DAYS - 1), 4);
    // A run still going is never removed, however old.
    const stuck = await run(id, daysAgo(RETENTION_DAYS + 20), 2, true);
    const exportId = (await svc.request<{ exportId: number }>('GET', `${S}/${id}/history/${old.id}/export`)).body
      .exportId;
    // A skipped due time past the window, and one inside it.
    const [oldDue, newDue] = [daysAgo(RETENTION_DAYS + 2), daysAgo(1)];
    await send({ kind: 'scheduleSkipped', solutionId: id, dueAt: oldDue, reason: 'missed', at: oldDue });
    await send({ kind: 'scheduleSkipped', solutionId: id, dueAt: newDue, reason: 'missed', at: newDue });

    // Small chunks, so that one execution takes several DELETEs of each kind.
    const retention = new HistoryRetention({
      store: svc.service.store,
      log: silent,
      retentionDays: RETENTION_DAYS,
      chunk: 50,
    });
    const result = await retention.run();
    expect(result).toMatchObject({ executions: 2, errors: 263, failedRecords: 263, skips: 1 });

    expect(await exists(id, old.id)).toBe(false);
    expect(await exists(id, edge.id)).toBe(false);
    expect(await errorCount(old.id)).toBe(0);
    expect(await cloudRecords(old.runId)).toBe(0);
    expect((await svc.request('GET', `${S}/${id}/history/${old.id}/export/${exportId}`)).status).toBe(404);
    expect(await db().selectFrom('historyExports').select('id').where('id', '=', exportId).execute()).toEqual([]);

    expect(await exists(id, recent.id)).toBe(true);
    expect(await errorCount(recent.id)).toBe(4);
    expect(await cloudRecords(recent.runId)).toBe(4);
    expect(await exists(id, stuck.id)).toBe(true);
    expect(await errorCount(stuck.id)).toBe(2);
    const errs = await svc.request<Array<{ id: string }>>('GET', `${S}/${id}/history/${recent.id}/errors`);
    expect(errs.body.map((e) => e.id)).toEqual(recent.errorIds);
    const failed = await svc.request('GET', `${S}/${id}/history/${recent.id}/failedrecords/${recent.errorIds[0]}`);
    expect(failed.status, failed.text).toBe(200);
    const skipped = await svc.request<Array<{ dueAt: string }>>('GET', `${S}/${id}/history/skipped`);
    expect(skipped.body.map((s) => s.dueAt)).toEqual([newDue]);

    // A second pass finds nothing more.
    expect(await retention.run()).toMatchObject({ executions: 0, errors: 0, failedRecords: 0, skips: 0 });
  });

  it('keeps the errors an interrupted removal left numbered from 1, so that deep pages stay right', async () => {
    const id = await solution('Half removed');
    const old = await run(id, daysAgo(RETENTION_DAYS + 3), 120);
    // The removal takes errors from the top: what a stopped pass leaves still pages by offset.
    const { deleteErrorsChunk } = await import('../../../../service/store/repos/executions.repo.js');
    expect(await deleteErrorsChunk(db(), old.id, 50)).toBe(50);
    const page = await svc.request<Array<{ id: string }>>(
      'GET',
      `${S}/${id}/history/${old.id}/errors?offset=60&limit=100`,
    );
    expect(page.headers['total-count']).toBe('70');
    expect(page.body.map((e) => e.id)).toEqual(old.errorIds.slice(60, 70));
    await new HistoryRetention({ store: svc.service.store, log: silent, retentionDays: RETENTION_DAYS }).run();
    expect(await exists(id, old.id)).toBe(false);
  });

  it('waits while a run of the same Solution that started inside the window is going (a reprocess reads older errors)', async () => {
    const id = await solution('Busy');
    const old = await run(id, daysAgo(RETENTION_DAYS + 3), 1);
    const going = await run(id, daysAgo(0.01), 0, true);
    const retention = new HistoryRetention({ store: svc.service.store, log: silent, retentionDays: RETENTION_DAYS });
    await retention.run();
    expect(await exists(id, old.id)).toBe(true);
    await send({
      kind: 'runFinished',
      runId: going.runId,
      solutionId: id,
      trigger: 'start',
      startedAt: daysAgo(0.01),
      at: new Date().toISOString(),
      result: 'CompletedSuccessfully',
      processed: 0,
      failed: 0,
      stopped: false,
      sourceDataLocal: false,
      statistics: [],
    });
    await retention.run();
    expect(await exists(id, old.id)).toBe(false);
  });

  it('removes cloud failed records past the window whose execution is gone or never came', async () => {
    const id = await solution('Orphans');
    const orphanRun = randomUUID();
    await send({
      kind: 'runFailedRecords',
      runId: orphanRun,
      solutionId: id,
      records: [
        {
          id: randomUUID(),
          mapName: 'Accounts',
          entity: 'account',
          blockId: 'b',
          blockName: 'B',
          code: 'RUN_WRITE_FAILED',
          errorMessage: 'x',
          source: {},
        },
      ],
    });
    const freshRun = randomUUID();
    await send({
      kind: 'runFailedRecords',
      runId: freshRun,
      solutionId: id,
      records: [
        {
          id: randomUUID(),
          mapName: 'Accounts',
          entity: 'account',
          blockId: 'b',
          blockName: 'B',
          code: 'RUN_WRITE_FAILED',
          errorMessage: 'x',
          source: {},
        },
      ],
    });
    await db()
      .updateTable('failedRecords')
      .set({ created: daysAgo(RETENTION_DAYS + 1) })
      .where('runId', '=', orphanRun)
      .execute();
    const result = await new HistoryRetention({
      store: svc.service.store,
      log: silent,
      retentionDays: RETENTION_DAYS,
    }).run();
    expect(result.failedRecords).toBe(1);
    expect(await cloudRecords(orphanRun)).toBe(0);
    expect(await cloudRecords(freshRun)).toBe(1);
  });

  it("tells each Agent the window's start (FERRY_HISTORY_RETENTION_DAYS) when it connects and at every pass", async () => {
    const other = await registerTestAgent(svc, { name: 'Pruning agent' });
    const och = await channels.connect(svc, other);
    och.autoReply = (cmd) => ({
      re: cmd['id'],
      ok: true,
      result:
        cmd['type'] === 'pruneFailedRecords' ? { removed: 0 } : cmd['type'] === 'assignSolutions' ? { need: [] } : {},
    });
    const before = Date.now();
    expect(await och.hello(other)).toMatchObject({ ok: true });
    const prune = await och.next((m) => m['type'] === 'pruneFailedRecords');
    const at = Date.parse(String(prune['before']));
    expect(at).toBeGreaterThanOrEqual(before - RETENTION_DAYS * DAY - 1000);
    expect(at).toBeLessThanOrEqual(Date.now() - RETENTION_DAYS * DAY + 1000);

    const sent: Array<{ agentId: string; before: string }> = [];
    const retention = new HistoryRetention({
      store: svc.service.store,
      log: silent,
      retentionDays: RETENTION_DAYS,
      agents: {
        connected: () => [other.agentId],
        send: (agentId, command) => {
          if (command.type === 'pruneFailedRecords') sent.push({ agentId, before: command.before });
          return Promise.resolve({ removed: 0 });
        },
      },
    });
    const now = new Date('2030-05-31T12:00:00Z');
    await retention.run(now);
    expect(sent).toEqual([{ agentId: other.agentId, before: '2030-05-01T12:00:00.000Z' }]);
  });
});

describe('History retention on the Agent: its local failed-record store', () => {
  let dir: string;
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const capture = async (store: FailedRecordStore, executionId: string, n: number): Promise<void> => {
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        store.capture({
          executionId,
          mapName: 'M',
          entity: 'account',
          blockId: 'b',
          blockName: 'B',
          error: { code: 'RUN_WRITE_FAILED', kind: 'config', message: 'x' },
          source: { i },
        }),
      ),
    );
  };

  it('removes the records of the runs before the window, in chunks, and none while a run is open', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-prune-'));
    let clock = Date.parse('2030-01-01T00:00:00Z');
    const store = new FailedRecordStore(dir, { now: () => new Date(clock) });
    // An old run larger than one chunk (5,000), one that straddles the window's start, and a new one.
    await capture(store, 'old-run', 5_200);
    clock += 10 * DAY;
    await capture(store, 'straddling', 2);
    clock += 2 * DAY;
    await capture(store, 'straddling', 1);
    await capture(store, 'new-run', 3);
    store.close();
    const before = new Date(clock - DAY).toISOString();

    let busy = true;
    const prune = pruneFailedRecordsCommand({ folder: dir, busy: () => busy, log: silent });
    expect(await prune({ id: randomUUID(), type: 'pruneFailedRecords', before })).toEqual({
      removed: 0,
      deferred: true,
    });
    busy = false;
    expect(await prune({ id: randomUUID(), type: 'pruneFailedRecords', before })).toEqual({ removed: 5_200 });

    const after = new FailedRecordStore(dir);
    expect(after.list('old-run')).toEqual([]);
    expect(after.list('straddling')).toHaveLength(3);
    expect(after.list('new-run')).toHaveLength(3);
    after.close();
    expect(await prune({ id: randomUUID(), type: 'pruneFailedRecords', before })).toEqual({ removed: 0 });
  });

  it('answers nothing removed on an Agent that never stored a failed record', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-prune-'));
    const prune = pruneFailedRecordsCommand({ folder: path.join(dir, 'failures'), busy: () => false, log: silent });
    expect(await prune({ id: randomUUID(), type: 'pruneFailedRecords', before: new Date().toISOString() })).toEqual({
      removed: 0,
    });
    expect(fs.existsSync(path.join(dir, 'failures'))).toBe(false);
  });
});
