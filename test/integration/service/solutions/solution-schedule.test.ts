import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerTestAgent, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { nextDue } from '../../../../src/solutions/schedule.js';
import { ScheduleRule } from '../../../../src/protocol/schedule.js';

interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}
interface ScheduleModel {
  scheduleOption: string;
  solutionId: string;
  runOnceOptions?: { dateTime?: string | null } | null;
  recurringOptions?: {
    timeZone?: string | null;
    days?: Record<string, unknown> | null;
    times?: Record<string, unknown> | null;
  } | null;
}
interface SolutionModel {
  id: string;
  status: string;
  nextRunTime: string | null;
}

/** A Recurring schedule as clients send it: unpadded dates, nulls for the parts not used, a Windows zone. */
const everyDayAt = (timeOfDay: string, timeZone: string) => ({
  scheduleOption: 'recurring',
  solutionId: null,
  runOnceOptions: null,
  recurringOptions: {
    days: {
      daysOption: 'DaysInterval',
      daysIntervalStartDate: '2024-1-1',
      daysInterval: 1,
      daysOfMonth: null,
      daysOfWeek: null,
      lastDayOfMonth: null,
    },
    times: {
      timeOption: 'TimeOfDay',
      hourlyMinutes: null,
      timeOfDay: timeOfDay,
      timeInterval: null,
      timeIntervalUnit: null,
    },
    timeZone,
  },
});

describe.each(STORE_TARGETS)('a Solution schedule on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let S: string;

  const solution = async (name: string): Promise<string> => {
    const res = await svc.request<SolutionModel>('POST', S, {
      body: { name, solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  };

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    agent = await registerTestAgent(svc, { name: 'Schedule agent' });
  });
  afterAll(async () => svc?.close());

  it('is OnDemand until set, with no next run time', async () => {
    const id = await solution('Never scheduled');
    const res = await svc.request<ScheduleModel>('GET', `${S}/${id}/schedule`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ scheduleOption: 'OnDemand', solutionId: id });
    expect((await svc.request<SolutionModel>('GET', `${S}/${id}`)).body.nextRunTime).toBeNull();
  });

  it('stores a Recurring schedule as sent (canonical spelling) and derives the next run time in its time zone', async () => {
    const id = await solution('Every morning');
    const put = await svc.request<ScheduleModel>('PUT', `${S}/${id}/schedule`, {
      body: everyDayAt('6:30', 'Eastern Standard Time'),
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({
      scheduleOption: 'Recurring',
      solutionId: id,
      recurringOptions: { timeZone: 'Eastern Standard Time', times: { timeOption: 'TimeOfDay', timeOfDay: '6:30' } },
    });
    const got = await svc.request<ScheduleModel>('GET', `${S}/${id}/schedule`);
    expect(got.body).toEqual(put.body);

    const row = await svc.service.store.db
      .selectFrom('solutions')
      .select(['scheduleRule'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    const rule = ScheduleRule.parse(JSON.parse(row.scheduleRule ?? 'null'));
    expect(rule).toMatchObject({ kind: 'Recurring', timeZone: 'America/New_York' });
    const model = (await svc.request<SolutionModel>('GET', `${S}/${id}`)).body;
    // 6:30 in New York is 10:30 or 11:30 UTC, depending on daylight-saving time.
    expect(model.nextRunTime).toMatch(/T1[01]:30:00\.000Z$/);
    const expected = nextDue(rule, new Date(Date.now() - 60_000));
    expect(model.nextRunTime).toBe(expected?.toISOString());
    expect(Date.parse(model.nextRunTime ?? '')).toBeGreaterThan(Date.now() - 60_000);
  });

  it('shows no next run time once a RunOnce time has passed, and back to OnDemand clears it', async () => {
    const id = await solution('Once');
    const future = {
      scheduleOption: 'RunOnce',
      solutionId: id,
      runOnceOptions: { dateTime: '2099-1-31T10:00Z' },
      recurringOptions: null,
    };
    expect((await svc.request('PUT', `${S}/${id}/schedule`, { body: future })).status).toBe(200);
    expect((await svc.request<SolutionModel>('GET', `${S}/${id}`)).body.nextRunTime).toBe('2099-01-31T10:00:00.000Z');
    const past = { ...future, runOnceOptions: { dateTime: '2020-1-31T10:00Z' } };
    expect((await svc.request('PUT', `${S}/${id}/schedule`, { body: past })).status).toBe(200);
    expect((await svc.request<SolutionModel>('GET', `${S}/${id}`)).body.nextRunTime).toBeNull();
    expect((await svc.request('PUT', `${S}/${id}/schedule`, { body: { scheduleOption: 'OnDemand' } })).status).toBe(
      200,
    );
    expect((await svc.request<ScheduleModel>('GET', `${S}/${id}/schedule`)).body.scheduleOption).toBe('OnDemand');
  });

  it('sorts by the derived next run time, Solutions never due last', async () => {
    const late = await solution('Sort late');
    const early = await solution('Sort early');
    const at = (dateTime: string) => ({
      scheduleOption: 'RunOnce',
      runOnceOptions: { dateTime },
      recurringOptions: null,
    });
    expect((await svc.request('PUT', `${S}/${late}/schedule`, { body: at('2099-6-1T00:00Z') })).status).toBe(200);
    expect((await svc.request('PUT', `${S}/${early}/schedule`, { body: at('2098-6-1T00:00Z') })).status).toBe(200);
    const list = await svc.request<SolutionModel[]>(
      'GET',
      `${S}?sortName=NextRunTime&sortOrder=asc&solutionNameFilter=Sort`,
    );
    expect(list.body.map((s) => s.id)).toEqual([early, late]);
    const desc = await svc.request<SolutionModel[]>(
      'GET',
      `${S}?sortName=NextRunTime&sortOrder=desc&solutionNameFilter=Sort`,
    );
    expect(desc.body.map((s) => s.id)).toEqual([late, early]);
  });

  it('refuses a schedule that is not valid with the paths named, and changes nothing', async () => {
    const id = await solution('Refused');
    expect((await svc.request('PUT', `${S}/${id}/schedule`, { body: everyDayAt('7:00', 'UTC') })).status).toBe(200);
    const before = (await svc.request<ScheduleModel>('GET', `${S}/${id}/schedule`)).body;

    const badZone = await svc.request<Problem>('PUT', `${S}/${id}/schedule`, {
      body: everyDayAt('7:00', 'Atlantis Standard Time'),
    });
    expect(badZone.status).toBe(400);
    expect(badZone.body.code).toBe('API_VALIDATION');
    expect(badZone.body.errors?.map((e) => e.path)).toContain('body.recurringOptions.timeZone');

    const badTime = await svc.request<Problem>('PUT', `${S}/${id}/schedule`, { body: everyDayAt('25:00', 'UTC') });
    expect(badTime.status).toBe(400);
    expect(badTime.body.errors?.some((e) => e.path.startsWith('body.recurringOptions.times'))).toBe(true);

    const unknownField = await svc.request<Problem>('PUT', `${S}/${id}/schedule`, {
      body: { ...everyDayAt('7:00', 'UTC'), every: 'day' },
    });
    expect(unknownField.status).toBe(400);

    expect((await svc.request<ScheduleModel>('GET', `${S}/${id}/schedule`)).body).toEqual(before);
  });

  it('answers 404 for a Solution of another Organization or none', async () => {
    const res = await svc.request<Problem>('GET', `${S}/3f2504e0-4f89-41d3-9a0c-0305e82c3301/schedule`);
    expect(res.status).toBe(404);
  });
});
