/**
 * `ferry solutions create|schedule|delete` run as real processes against a real Service, with an
 * Agent the test plays. Prepare against a real Agent: solutions/cli-start-watch.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlayedAgent, OpenChannels, type TestAgent } from '../helpers/agent-client.js';
import { CLI_SUITE_TIMEOUT_MS, ferry, parse } from '../helpers/cli.js';
import { startService, type TestService } from '../helpers/service.js';
import { STORE_TARGETS } from '../helpers/stores.js';

const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';

interface Solution {
  id: string;
  name: string;
  solutionType: string;
  agentId: string;
  description: string | null;
  connectionIdForSource: string | null;
  connectionIdForTarget: string | null;
  replicationSettings: { selectionType: string; entities: string[] };
  checkForBulk: boolean;
  nextRunTime: string | null;
}

interface Schedule {
  scheduleOption: string;
  recurringOptions: { days: Record<string, unknown>; times: Record<string, unknown>; timeZone: string | null } | null;
}

describe('ferry solutions create|schedule|delete against a real Service', { timeout: CLI_SUITE_TIMEOUT_MS }, () => {
  let svc: TestService;
  let agent: TestAgent;
  const channels = new OpenChannels();
  const connections: Record<string, string> = {};

  beforeAll(async () => {
    svc = await startService(STORE_TARGETS[0] ?? { name: 'sqlite' }, { cloudAgents: 'off' });
    ({ agent } = await connectPlayedAgent(svc, channels, { name: 'Plant 7' }));
    for (const name of ['Shop files', 'Archive files']) {
      const res = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/connections`, {
        body: { name, connectorId: CSV, color: '#FF112233', properties: [] },
      });
      expect(res.status, res.text).toBe(201);
      connections[name] = res.body.id;
    }
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it('creates an Integration Solution on the only Agent, and a Replication naming its Agent and Connections by name', async () => {
    const is = await ferry(svc, [
      'solutions',
      'create',
      '--name',
      'Sync accounts',
      '--type',
      'Integration',
      '--description',
      'hourly',
    ]);
    expect(is.code, is.stderr).toBe(0);
    expect(parse<Solution>(is.stdout)).toMatchObject({
      name: 'Sync accounts',
      solutionType: 'Integration',
      agentId: agent.agentId,
      description: 'hourly',
    });

    const rs = await ferry(svc, [
      'solutions',
      'create',
      '--name',
      'Archive shop',
      '--type',
      'replication',
      '--agent',
      'Plant 7',
      '--source',
      'Shop files',
      '--target',
      connections['Archive files'] as string,
      '--entities',
      'customers, orders',
      '--bulk',
    ]);
    expect(rs.code, rs.stderr).toBe(0);
    expect(parse<Solution>(rs.stdout)).toMatchObject({
      solutionType: 'Replication',
      connectionIdForSource: connections['Shop files'],
      connectionIdForTarget: connections['Archive files'],
      replicationSettings: { selectionType: 'Selected', entities: ['customers', 'orders'] },
      checkForBulk: true,
    });
  });

  it('creates from a model on stdin, the flags winning over it', async () => {
    const model = JSON.stringify({ name: 'From a file', solutionType: 'Migration', description: 'as given' });
    const run = await ferry(svc, ['solutions', 'create', '--data', '-', '--description', 'from the flag'], {
      input: model,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(parse<Solution>(run.stdout)).toMatchObject({
      name: 'From a file',
      solutionType: 'Migration',
      description: 'from the flag',
      agentId: agent.agentId,
    });
  });

  it("refuses bad usage with exit 2, and the API's refusal with its code and exit 1", async () => {
    const noName = await ferry(svc, ['solutions', 'create', '--type', 'Integration']);
    expect(noName.code).toBe(2);
    expect(noName.stderr).toMatch(/^ferry: give --name NAME and --type/);
    const duplicate = await ferry(svc, ['solutions', 'create', '--name', 'SYNC ACCOUNTS', '--type', 'Integration']);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toMatch(/^ferry: 409 .*\(API_DUPLICATE_NAME\)/);
    const noAgent = await ferry(svc, [
      'solutions',
      'create',
      '--name',
      'X',
      '--type',
      'Integration',
      '--agent',
      'Plant 9',
    ]);
    expect(noAgent.code).toBe(1);
    expect(noAgent.stderr).toContain('No Agent "Plant 9"');
  });

  it('shows and sets the schedule: recurring from flags, on demand again; a wrong one is refused by the Service', async () => {
    const initial = await ferry(svc, ['solutions', 'schedule', 'Sync accounts']);
    expect(initial.code, initial.stderr).toBe(0);
    expect(parse<Schedule>(initial.stdout).scheduleOption).toBe('OnDemand');

    const weekdays = await ferry(svc, [
      'solutions',
      'schedule',
      'Sync accounts',
      '--weekdays',
      'mon,FRI',
      '--at',
      '6:30',
      '--time-zone',
      'Eastern Standard Time',
    ]);
    expect(weekdays.code, weekdays.stderr).toBe(0);
    expect(parse<Schedule>(weekdays.stdout)).toMatchObject({
      scheduleOption: 'Recurring',
      recurringOptions: {
        days: { daysOption: 'DaysOfWeek', daysOfWeek: ['Monday', 'Friday'] },
        times: { timeOption: 'TimeOfDay', timeOfDay: '6:30' },
        timeZone: 'Eastern Standard Time',
      },
    });
    const shown = await ferry(svc, ['solutions', 'show', 'Sync accounts']);
    expect(parse<Solution>(shown.stdout).nextRunTime).not.toBeNull();

    const monthly = await ferry(svc, [
      'solutions',
      'schedule',
      'Sync accounts',
      '--month-days',
      '1,15,last',
      '--every',
      '2h',
    ]);
    expect(parse<Schedule>(monthly.stdout).recurringOptions).toMatchObject({
      days: { daysOption: 'DaysOfMonth', daysOfMonth: [1, 15], lastDayOfMonth: true },
      times: { timeOption: 'TimeInterval', timeInterval: 2, timeIntervalUnit: 'hours' },
    });

    const wrong = await ferry(svc, ['solutions', 'schedule', 'Sync accounts', '--at', '25:00']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^ferry: 400 .*timeOfDay.*\(API_VALIDATION\)/);
    expect((await ferry(svc, ['solutions', 'schedule', 'Sync accounts', '--at', '1:00', '--every', '2h'])).code).toBe(
      2,
    );

    const off = await ferry(svc, ['solutions', 'schedule', 'Sync accounts', '--on-demand']);
    expect(parse<Schedule>(off.stdout).scheduleOption).toBe('OnDemand');
  });

  it('deletes with --yes; without it, and without a terminal to ask on, deletes nothing (exit 2)', async () => {
    const refused = await ferry(svc, ['solutions', 'delete', 'From a file']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--yes');
    const run = await ferry(svc, ['solutions', 'delete', 'from a file', '--yes']);
    expect(run.code, run.stderr).toBe(0);
    expect(parse<{ deleted: boolean }>(run.stdout).deleted).toBe(true);
    const gone = await ferry(svc, ['solutions', 'show', 'From a file']);
    expect(gone.code).toBe(1);
  });
});
