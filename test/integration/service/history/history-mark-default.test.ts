import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { RunRecordError } from '../../../../src/protocol/solutions.js';
import { historyMarkDefault } from '../../../../service/store/migrations/023-history-mark-default.js';
import {
  OpenChannels,
  registerTestAgent,
  type Incoming,
  type TestAgent,
  type TestChannel,
} from '../../../helpers/agent-client.js';
import { recordError as defaultRecordError, seedRun } from '../../../helpers/history.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface RecordError {
  id: string;
  canReprocess: boolean;
  marked: boolean;
}
interface MarkAllAnswer {
  historyId: number;
  mark: boolean;
  changed: number;
  reprocessRecordsRemaining: number;
}
interface ReprocessAnswer {
  started: boolean;
  records: number;
}

/** 12 record errors; every fourth (0, 4, 8) cannot be reprocessed, so 9 can. */
const ERRORS = 12;
const REPROCESSABLE = 9;
const recordError = (n: number): RunRecordError =>
  defaultRecordError(n, n % 4 === 0 ? { canReprocess: false, failedRecordId: undefined } : { canReprocess: true });

/**
 * The execution's mark default (migration 023): marking every error of an execution sets it and
 * clears the errors' own marks, so each error's mark is its own or else the default. What a client
 * sees is what it saw when a mark-all wrote every error: the listing, one error, the export, the
 * counts, and what a reprocess takes and gives back.
 */
describe.each(STORE_TARGETS)('the mark default of an execution on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let O: string;
  const channels = new OpenChannels();
  let reprocessStarts = true;

  /** A Solution with one run whose errors are `errors` (ended unless `finish` is false). */
  const runWithErrors = async (
    name: string,
    errors: RunRecordError[],
    finish = true,
  ): Promise<{ S: string; H: string; runId: string; solutionId: string }> => {
    const sol = await svc.request<{ id: string }>('POST', `${O}/solutions`, {
      body: { name, solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(sol.status, sol.text).toBe(201);
    await svc.service.store.db.updateTable('solutions').set({ prepared: 1 }).where('id', '=', sol.body.id).execute();
    const runId = await seedRun(ch, { solutionId: sol.body.id, errors, ...(finish ? {} : { finish: false }) });
    const S = `${O}/solutions/${sol.body.id}`;
    const { id } = (await svc.request<{ id: number }>('GET', `${S}/history/${runId}`)).body;
    return { S, H: `${S}/history/${id}`, runId, solutionId: sol.body.id };
  };
  const markAll = async (H: string, mark: boolean): Promise<MarkAllAnswer> => {
    const res = await svc.request<MarkAllAnswer>('POST', `${H}/mark?mark=${mark}`);
    expect(res.status, res.text).toBe(200);
    return res.body;
  };
  const markOne = async (H: string, id: string, mark: boolean): Promise<RecordError> => {
    const res = await svc.request<RecordError>('POST', `${H}/errors/${id}/mark?mark=${mark}`);
    expect(res.status, res.text).toBe(200);
    return res.body;
  };
  const listed = async (H: string): Promise<RecordError[]> =>
    (await svc.request<RecordError[]>('GET', `${H}/errors?limit=1000`)).body;
  const markedIds = async (H: string): Promise<string[]> => (await listed(H)).filter((e) => e.marked).map((e) => e.id);
  /** The `marked` column of the CSV export, by error ID. */
  const exported = async (H: string): Promise<Map<string, string>> => {
    const req = await svc.request<{ exportId: number }>('GET', `${H}/export`);
    expect(req.status, req.text).toBe(200);
    const csv = await svc.request('GET', `${H}/export/${req.body.exportId}`);
    expect(csv.status).toBe(200);
    const [header, ...rows] = csv.text.trimEnd().split('\r\n');
    const at = header?.split(',').indexOf('marked') ?? -1;
    return new Map(rows.map((r) => r.split(',')).map((f) => [f[0] ?? '', f[at] ?? '']));
  };
  const reprocessable = (errors: RunRecordError[]): RunRecordError[] => errors.filter((e) => e.canReprocess);

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    O = `/v1/orgs/${svc.orgId}`;
    agent = await registerTestAgent(svc, { name: 'Mark default agent' });
    ch = await channels.connect(svc, agent);
    ch.autoReply = (cmd): Incoming => {
      if (cmd['type'] === 'reprocessRun')
        return {
          re: cmd['id'],
          ok: true,
          result: reprocessStarts ? { started: true } : { started: false, runId: cmd['runId'] },
        };
      return { re: cmd['id'], ok: true, result: cmd['type'] === 'assignSolutions' ? { need: [] } : {} };
    };
    expect(await ch.hello(agent)).toMatchObject({ ok: true });
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it('marks all, then unmarks one: every other reprocessable error stays marked, in the listing, one by one and in the export', async () => {
    const errors = Array.from({ length: ERRORS }, (_, n) => recordError(n));
    const { H } = await runWithErrors('Mark all, unmark one', errors);
    const [one, ...others] = reprocessable(errors);
    expect(await markAll(H, true)).toMatchObject({
      mark: true,
      changed: REPROCESSABLE,
      reprocessRecordsRemaining: REPROCESSABLE,
    });

    expect(await markOne(H, one?.id ?? '', false)).toMatchObject({ id: one?.id, marked: false, canReprocess: true });
    expect(await markedIds(H)).toEqual(others.map((e) => e.id));
    expect((await svc.request<RecordError>('GET', `${H}/errors/${one?.id}`)).body.marked).toBe(false);
    expect((await svc.request<RecordError>('GET', `${H}/errors/${others[0]?.id}`)).body.marked).toBe(true);
    // Those that cannot be reprocessed are never marked, whatever the default.
    expect((await svc.request<RecordError>('GET', `${H}/errors/${errors[0]?.id}`)).body).toMatchObject({
      canReprocess: false,
      marked: false,
    });
    const csv = await exported(H);
    expect(errors.map((e) => csv.get(e.id))).toEqual(
      errors.map((e) => (e.canReprocess && e.id !== one?.id ? 'true' : 'false')),
    );
    expect((await svc.request<{ reprocessRecordsRemaining: number }>('GET', H)).body.reprocessRecordsRemaining).toBe(
      REPROCESSABLE,
    );

    // Marking all again changes that one only; unmarking all, every reprocessable one.
    expect((await markAll(H, true)).changed).toBe(1);
    expect(await markedIds(H)).toHaveLength(REPROCESSABLE);
    expect(await markAll(H, false)).toMatchObject({
      mark: false,
      changed: REPROCESSABLE,
      reprocessRecordsRemaining: REPROCESSABLE,
    });
    expect(await markedIds(H)).toEqual([]);
  });

  it('unmarks all, then marks one: that one alone is marked, and a mark-all counts what it changes', async () => {
    const errors = Array.from({ length: ERRORS }, (_, n) => recordError(n));
    const { H } = await runWithErrors('Unmark all, mark one', errors);
    const [, two] = reprocessable(errors);
    await markAll(H, true);
    expect((await markAll(H, false)).changed).toBe(REPROCESSABLE);

    expect(await markOne(H, two?.id ?? '', true)).toMatchObject({ id: two?.id, marked: true });
    expect(await markedIds(H)).toEqual([two?.id]);
    const csv = await exported(H);
    expect([...csv.entries()].filter(([, marked]) => marked === 'true').map(([id]) => id)).toEqual([two?.id]);

    expect((await markAll(H, false)).changed).toBe(1);
    expect(await markedIds(H)).toEqual([]);
    await markOne(H, two?.id ?? '', true);
    expect((await markAll(H, true)).changed).toBe(REPROCESSABLE - 1);
    // Marking all when all are marked already changes nothing.
    expect((await markAll(H, true)).changed).toBe(0);
  });

  it('marks all, then reprocesses: the run takes every reprocessable error, and none is left to mark or take', async () => {
    const errors = Array.from({ length: ERRORS }, (_, n) => recordError(n));
    const { S, H } = await runWithErrors('Mark all, reprocess', errors);
    await markAll(H, true);
    const answer = await svc.request<ReprocessAnswer>('POST', `${H}/reprocess`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ started: true, records: REPROCESSABLE });
    expect(await ch.next((m) => m['type'] === 'reprocessRun')).toMatchObject({
      maps: [{ mapId: 7, records: REPROCESSABLE }],
    });

    const after = await listed(H);
    expect(after.map((e) => [e.canReprocess, e.marked])).toEqual(errors.map(() => [false, false]));
    expect((await svc.request<{ reprocessRecordsRemaining: number }>('GET', H)).body.reprocessRecordsRemaining).toBe(0);
    expect(await markAll(H, true)).toMatchObject({ changed: 0, reprocessRecordsRemaining: 0 });
    expect(await markedIds(H)).toEqual([]);
    expect((await svc.request<ReprocessAnswer>('POST', `${H}/reprocess`)).body).toMatchObject({
      started: false,
      records: 0,
    });
    // The reprocess run is an execution of its own, whose errors start unmarked.
    const runs = (await svc.request<Array<{ isReprocessJob: boolean }>>('GET', `${S}/history`)).body;
    expect(runs.filter((r) => r.isReprocessJob)).toHaveLength(1);
  });

  it('gives back what a reprocess that did not start took: marked as before, and unmarked by an unmark-all', async () => {
    const errors = Array.from({ length: ERRORS }, (_, n) => recordError(n));
    const { H } = await runWithErrors('Mark all, given back', errors);
    const [one, ...others] = reprocessable(errors);
    await markAll(H, true);
    await markOne(H, one?.id ?? '', false);
    reprocessStarts = false;
    try {
      expect((await svc.request<ReprocessAnswer>('POST', `${H}/reprocess`)).body).toMatchObject({
        started: false,
        records: 0,
      });
    } finally {
      reprocessStarts = true;
    }
    expect(await markedIds(H)).toEqual(others.map((e) => e.id));
    expect((await listed(H)).filter((e) => e.canReprocess)).toHaveLength(REPROCESSABLE);
    expect((await markAll(H, false)).changed).toBe(REPROCESSABLE - 1);
    expect(await markedIds(H)).toEqual([]);
  });

  it('leaves an error that arrives after a mark-all unmarked, as a mark-all of every error did', async () => {
    const errors = Array.from({ length: ERRORS }, (_, n) => recordError(n));
    const { H, runId, solutionId } = await runWithErrors('Mark all while running', errors, false);
    await markAll(H, true);
    const late = recordError(13);
    expect(await ch.report({ kind: 'runErrors', runId, solutionId, errors: [late] })).toMatchObject({ ok: true });
    expect((await svc.request<RecordError>('GET', `${H}/errors/${late.id}`)).body).toMatchObject({
      canReprocess: true,
      marked: false,
    });
    expect(await markedIds(H)).toHaveLength(REPROCESSABLE);
    expect((await markAll(H, true)).changed).toBe(1);
  });

  it('keeps every mark across the migration: down to one flag per error and up again, with only the marks of their own left on the errors', async () => {
    const { store } = svc.service;
    const raw = store.db.withoutPlugins();
    const migration = historyMarkDefault(store.dialect);
    const a = await runWithErrors(
      'Migrated, marked one by one',
      Array.from({ length: ERRORS }, (_, n) => recordError(n)),
    );
    const b = await runWithErrors(
      'Migrated, marked all',
      Array.from({ length: ERRORS }, (_, n) => recordError(n)),
    );
    const firstOf = async (H: string): Promise<string> => (await listed(H)).find((e) => e.canReprocess)?.id ?? '';
    await markOne(a.H, await firstOf(a.H), true);
    await markAll(b.H, true);
    await markOne(b.H, await firstOf(b.H), false);
    const before = { a: await listed(a.H), b: await listed(b.H) };
    const ids = [a.H, b.H].map((H) => Number(H.split('/').pop()));

    await migration.down?.(raw);
    const flags = await sql<{
      n: number;
    }>`select count(*) as n from execution_errors where marked = 1 and execution_id in (${sql.join(ids)})`.execute(raw);
    expect(Number(flags.rows[0]?.n)).toBe(1 + REPROCESSABLE - 1);
    await migration.up(raw);

    expect({ a: await listed(a.H), b: await listed(b.H) }).toEqual(before);
    // Every error's own 0 went: only the 1s the down migration wrote are marks of their own.
    const own = await sql<{
      n: number;
    }>`select count(*) as n from execution_errors where marked is not null and execution_id in (${sql.join(ids)})`.execute(
      raw,
    );
    expect(Number(own.rows[0]?.n)).toBe(REPROCESSABLE);
    expect((await markAll(b.H, false)).changed).toBe(REPROCESSABLE - 1);
  });
});
