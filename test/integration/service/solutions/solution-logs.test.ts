import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectPlayedAgent,
  OpenChannels,
  registerTestAgent,
  type Incoming,
  type TestAgent,
  type TestChannel,
} from '../../../helpers/agent-client.js';
import { ADMIN_BASIC, LOGS_NOT_AVAILABLE, logZip, raw, type Problem } from '../../../helpers/log-archives.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { unzip } from '../../../helpers/unzip.js';
import { addUser } from '../../../helpers/users.js';

/** A log file's name as the Agent's rotation names it. */
const LOG_FILE = 'agent.2026-01-01.1.log';

describe.each(STORE_TARGETS)('Solution logs on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let O: string;
  const channels = new OpenChannels();

  const solution = async (name: string, agentId = agent.agentId): Promise<string> => {
    const res = await svc.request<{ id: string }>('POST', `${O}/solutions`, {
      body: { name, solutionType: 'Integration', agentId },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  };
  const zipLogsFor = (logId: string): Promise<Incoming> =>
    ch.next((m) => m['type'] === 'zipLogs' && m['logId'] === logId);
  const upload = (url: string, body: Buffer) =>
    raw(url, {
      method: 'PUT',
      headers: { authorization: `Bearer ${agent.agentId}.${agent.agentSecret}`, 'content-type': 'application/zip' },
      body,
    });
  const download = (pathAndQuery: string, from?: string) =>
    raw(`${svc.url}${pathAndQuery}`, {
      method: 'GET',
      headers: { authorization: ADMIN_BASIC },
      ...(from ? { from } : {}),
    });
  const logRows = async (): Promise<number> =>
    (await svc.service.store.db.selectFrom('agentLogs').select('id').execute()).length;
  const zipCommands = (): number => ch.received.filter((m) => m['type'] === 'zipLogs').length;

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    O = `/v1/orgs/${svc.orgId}`;
    // The Agent holds every Solution it is given and accepts every zip it is asked for.
    ({ agent, ch } = await connectPlayedAgent(svc, channels, {
      name: 'Logs agent',
      results: { zipLogs: { accepted: true } },
    }));
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it('asks the Solution\'s Agent for the Solution\'s lines, answers "not available" until the zip arrives, then returns it once', async () => {
    const id = await solution('Accounts nightly');
    const L = `${O}/solutions/${id}/logs`;
    const post = await svc.request<{ logId: string }>('POST', L);
    expect(post.status, post.text).toBe(201);
    const { logId } = post.body;
    expect(post.headers['location']).toBe(`${L}/${logId}`);
    const command = await zipLogsFor(logId);
    expect(command).toMatchObject({ solutionId: id, uploadUrl: `${svc.url}/v1/agent/logs/${logId}` });
    expect(command).not.toHaveProperty('runId');
    expect(command).not.toHaveProperty('since');

    const early = await svc.request<Problem>('GET', `${L}/${logId}`);
    expect(early.status).toBe(404);
    expect(early.body).toMatchObject({ code: 'AGT_LOGS_NOT_AVAILABLE', detail: LOGS_NOT_AVAILABLE });

    const line = `${JSON.stringify({ level: 30, time: '2026-01-01T10:00:00.000Z', solutionId: id, runId: randomUUID(), msg: 'solution run started' })}\n`;
    const zip = await logZip(line, LOG_FILE);
    expect((await upload(String(command['uploadUrl']), zip)).status).toBe(204);
    // A HEAD does not use up the one download.
    expect(
      (await raw(`${svc.url}${L}/${logId}`, { method: 'HEAD', headers: { authorization: ADMIN_BASIC } })).status,
    ).toBe(404);
    const got = await download(`${L}/${logId}`);
    expect(got.status).toBe(200);
    expect(got.type).toBe('application/zip');
    expect(got.disposition).toContain(`solution-logs-${logId}.zip`);
    expect(got.body.equals(zip)).toBe(true);
    expect(unzip(got.body).get(LOG_FILE)?.toString()).toBe(line);

    const second = await svc.request<Problem>('GET', `${L}/${logId}`);
    expect(second.status).toBe(410);
    expect(second.body.code).toBe('AGT_LOGS_USED');
  });

  it('narrows the archive to one execution (its History id or processExecutionId) and to lines since an instant', async () => {
    const id = await solution('Narrowed');
    const L = `${O}/solutions/${id}/logs`;
    const runId = randomUUID();
    expect(
      await ch.report({ kind: 'runStarted', runId, solutionId: id, trigger: 'start', at: new Date().toISOString() }),
    ).toMatchObject({ ok: true });
    const [execution] = (
      await svc.request<Array<{ id: number; processExecutionId: string }>>('GET', `${O}/solutions/${id}/history`)
    ).body;
    expect(execution?.processExecutionId).toBe(runId);

    const byId = await svc.request<{ logId: string }>('POST', `${L}?historyId=${execution?.id}`);
    expect(byId.status, byId.text).toBe(201);
    expect(await zipLogsFor(byId.body.logId)).toMatchObject({ solutionId: id, runId });
    const byRun = await svc.request<{ logId: string }>('POST', `${L}?historyId=${runId.toUpperCase()}`);
    expect(byRun.status, byRun.text).toBe(201);
    expect(await zipLogsFor(byRun.body.logId)).toMatchObject({ solutionId: id, runId });
    const since = await svc.request<{ logId: string }>(
      'POST',
      `${L}?since=${encodeURIComponent('2026-01-01T10:00:00+02:00')}`,
    );
    expect(since.status, since.text).toBe(201);
    const sinceCommand = await zipLogsFor(since.body.logId);
    expect(sinceCommand).toMatchObject({ solutionId: id, since: '2026-01-01T08:00:00.000Z' });
    expect(sinceCommand).not.toHaveProperty('runId');
    // To the millisecond: a run's lines often all fall within one second.
    const fine = await svc.request<{ logId: string }>('POST', `${L}?since=2026-01-01T10:00:00.250Z`);
    expect(fine.status, fine.text).toBe(201);
    expect(await zipLogsFor(fine.body.logId)).toMatchObject({ since: '2026-01-01T10:00:00.250Z' });
    const day = await svc.request<{ logId: string }>('POST', `${L}?since=2026-1-2`);
    expect(day.status, day.text).toBe(201);
    expect(await zipLogsFor(day.body.logId)).toMatchObject({ since: '2026-01-02T00:00:00.000Z' });
  });

  it('refuses bad or unknown filters with no request recorded and nothing asked of the Agent', async () => {
    const id = await solution('Filters');
    const other = await solution('Another');
    const otherRun = randomUUID();
    expect(
      await ch.report({
        kind: 'runStarted',
        runId: otherRun,
        solutionId: other,
        trigger: 'start',
        at: new Date().toISOString(),
      }),
    ).toMatchObject({ ok: true });
    const L = `${O}/solutions/${id}/logs`;
    const rows = await logRows();
    const commands = zipCommands();
    for (const query of ['since=yesterday', 'since=2026-13-45', 'historyId=abc', 'historyId=0', 'historyId=-3']) {
      const res = await svc.request<Problem>('POST', `${L}?${query}`);
      expect(res.status, `${query}: ${res.text}`).toBe(400);
      expect(res.body.code).toBe('API_VALIDATION');
    }
    // Another Solution's execution, and one that does not exist.
    for (const query of [`historyId=${otherRun}`, 'historyId=2147483647']) {
      const res = await svc.request<Problem>('POST', `${L}?${query}`);
      expect(res.status, `${query}: ${res.text}`).toBe(404);
      expect(res.body.code).toBe('API_NOT_FOUND');
    }
    expect((await svc.request<Problem>('POST', `${O}/solutions/${randomUUID()}/logs`)).status).toBe(404);
    expect((await svc.request<Problem>('POST', `${O}/solutions/not-a-guid/logs`)).status).toBe(400);
    expect(await logRows()).toBe(rows);
    expect(zipCommands()).toBe(commands);
  });

  it('refuses a GET from another IP address than the POST, even one a Security Rule admits', async () => {
    const from = '127.0.0.2';
    const rule = await svc.request('POST', `${O}/securityrules`, {
      body: {
        name: 'second loopback',
        allowedIpRangeStartAddress: from,
        allowedIpRangeEndAddress: from,
        apiAccessEnabled: true,
      },
    });
    expect(rule.status).toBe(201);
    const id = await solution('Same address');
    const L = `${O}/solutions/${id}/logs`;
    const { logId } = (await svc.request<{ logId: string }>('POST', L)).body;
    expect((await upload(String((await zipLogsFor(logId))['uploadUrl']), await logZip('x', LOG_FILE))).status).toBe(
      204,
    );
    const elsewhere = await svc.request<Problem>('GET', `${L}/${logId}`, { from });
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.body.code).toBe('AGT_LOGS_OTHER_IP');
    // The refusal did not use the logId up.
    expect((await download(`${L}/${logId}`)).status).toBe(200);
  });

  it("keeps a Solution's archive to that Solution: not through its Agent's logs, nor another Solution's, and the reverse", async () => {
    const id = await solution('Own archive');
    const other = await solution('Not its archive');
    const { logId } = (await svc.request<{ logId: string }>('POST', `${O}/solutions/${id}/logs`)).body;
    expect((await upload(String((await zipLogsFor(logId))['uploadUrl']), await logZip('y', LOG_FILE))).status).toBe(
      204,
    );
    expect((await svc.request<Problem>('GET', `${O}/solutions/${other}/logs/${logId}`)).status).toBe(404);
    expect((await svc.request<Problem>('GET', `${O}/agents/${agent.agentId}/logs/${logId}`)).status).toBe(404);
    expect((await download(`${O}/solutions/${id}/logs/${logId}`)).status).toBe(200);

    const agentLog = (await svc.request<{ logId: string }>('POST', `${O}/agents/${agent.agentId}/logs`)).body.logId;
    expect(await zipLogsFor(agentLog)).not.toHaveProperty('solutionId');
    expect((await upload(`${svc.url}/v1/agent/logs/${agentLog}`, await logZip('z', LOG_FILE))).status).toBe(204);
    expect((await svc.request<Problem>('GET', `${O}/solutions/${id}/logs/${agentLog}`)).status).toBe(404);
    expect((await download(`${O}/agents/${agent.agentId}/logs/${agentLog}`)).status).toBe(200);
  });

  it('reports an archive the Agent could not make, and refuses when the Agent is not connected', async () => {
    const id = await solution('Failing zip');
    const { logId } = (await svc.request<{ logId: string }>('POST', `${O}/solutions/${id}/logs`)).body;
    await zipLogsFor(logId);
    expect(
      await ch.report({
        kind: 'logArchiveFailed',
        logId,
        error: { code: 'AGT_LOG_UPLOAD_FAILED', kind: 'transient', message: 'disk full' },
      }),
    ).toMatchObject({ ok: true });
    const failed = await svc.request<Problem>('GET', `${O}/solutions/${id}/logs/${logId}`);
    expect(failed.status).toBe(409);
    expect(failed.body.code).toBe('AGT_LOGS_FAILED');
    expect(failed.body.detail).toContain('disk full');

    const offline = await registerTestAgent(svc, { name: 'Offline agent' });
    const away = await solution('On an offline Agent', offline.agentId);
    const refused = await svc.request<Problem>('POST', `${O}/solutions/${away}/logs`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('AGT_NOT_CONNECTED');
    expect((await svc.request('GET', `${O}/solutions/${away}/logs/${randomUUID()}`)).status).toBe(404);
  });

  it('needs the User role to request and download', async () => {
    const id = await solution('Roles');
    const L = `${O}/solutions/${id}/logs`;
    const reader = await addUser(svc, svc.orgId, 'ReadOnly');
    expect((await svc.request('POST', L, { auth: reader })).status).toBe(403);
    const user = await addUser(svc, svc.orgId, 'User');
    const post = await svc.request<{ logId: string }>('POST', L, { auth: user });
    expect(post.status).toBe(201);
    expect((await svc.request('GET', `${L}/${post.body.logId}`, { auth: reader })).status).toBe(403);
    expect((await svc.request<Problem>('GET', `${L}/${post.body.logId}`, { auth: user })).body.detail).toBe(
      LOGS_NOT_AVAILABLE,
    );
  });
});
