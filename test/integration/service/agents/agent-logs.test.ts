import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHousekeeping } from '../../../../service/jobs/agent-housekeeping.js';
import { DatabaseLogArchives } from '../../../../service/store/log-archive-chunks.js';
import { LogArchiveFiles } from '../../../../service/store/log-archives.js';
import { TestChannel, registerTestAgent, until, type Incoming, type TestAgent } from '../../../helpers/agent-client.js';
import { ADMIN_BASIC, LOGS_NOT_AVAILABLE, logZip, raw, type Problem } from '../../../helpers/log-archives.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

describe.each(STORE_TARGETS)('Agent logs on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  let L: string;
  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    agent = await registerTestAgent(svc);
    ch = await TestChannel.connect(svc, agent);
    await ch.hello(agent);
    ch.autoReply = (cmd) => (cmd['type'] === 'zipLogs' ? { re: cmd['id'], ok: true } : undefined);
    L = `/v1/orgs/${svc.orgId}/agents/${agent.agentId}/logs`;
  });
  afterAll(async () => {
    await ch?.close();
    await svc?.close();
  });

  const zipLogsFor = (logId: string): Promise<Incoming> =>
    ch.next((m) => m['type'] === 'zipLogs' && m['logId'] === logId);
  const upload = (
    url: string,
    body: Buffer,
    auth = `Bearer ${agent.agentId}.${agent.agentSecret}`,
    type = 'application/zip',
  ) => raw(url, { method: 'PUT', headers: { authorization: auth, 'content-type': type }, body });
  const download = (logId: string) =>
    raw(`${svc.url}${L}/${logId}`, { method: 'GET', headers: { authorization: ADMIN_BASIC } });
  /** An upload asked for and made: its logId. */
  const uploaded = async (zip: Buffer): Promise<string> => {
    const { logId } = (await svc.request<{ logId: string }>('POST', L)).body;
    expect((await upload(String((await zipLogsFor(logId))['uploadUrl']), zip)).status).toBe(204);
    return logId;
  };

  // Where the Service keeps archives: files on SQLite, chunks in the database on PostgreSQL.
  const archiveFile = (logId: string) => path.join(svc.dataDir, 'log-archives', `${logId}.zip`);
  const chunksOf = (logId: string) =>
    svc.service.store.db.selectFrom('logArchiveChunks').selectAll().where('logId', '=', logId).execute();
  /** Whether any of the archive of `logId` is stored. */
  const stored = async (logId: string): Promise<boolean> =>
    target.name === 'postgres' ? (await chunksOf(logId)).length > 0 : fs.existsSync(archiveFile(logId));
  /** The archives the Service keeps, as build-service.ts chooses them. */
  const archives = () =>
    target.name === 'postgres' ? new DatabaseLogArchives(svc.service.store) : new LogArchiveFiles(svc.dataDir);

  it('asks the Agent for its logs, answers "not available" until the zip arrives, then returns it once', async () => {
    const post = await svc.request<{ logId: string }>('POST', L);
    expect(post.status).toBe(201);
    const { logId } = post.body;
    expect(post.headers['location']).toBe(`${L}/${logId}`);
    const command = await zipLogsFor(logId);
    expect(command['uploadUrl']).toBe(`${svc.url}/v1/agent/logs/${logId}`);

    const early = await svc.request<Problem>('GET', `${L}/${logId}`);
    expect(early.status).toBe(404);
    expect(early.body.detail).toBe(LOGS_NOT_AVAILABLE);
    expect(early.body.code).toBe('AGT_LOGS_NOT_AVAILABLE');

    const zip = await logZip('2026-01-01 agent started\n'.repeat(1000));
    const put = await upload(String(command['uploadUrl']), zip);
    expect(put.status).toBe(204);
    const again = await upload(String(command['uploadUrl']), zip);
    expect(again.status).toBe(409);

    expect(await stored(logId)).toBe(true);
    // A HEAD does not use up the one download.
    expect(
      (await raw(`${svc.url}${L}/${logId}`, { method: 'HEAD', headers: { authorization: ADMIN_BASIC } })).status,
    ).toBe(404);
    const got = await raw(`${svc.url}${L}/${logId}`, { method: 'GET', headers: { authorization: ADMIN_BASIC } });
    expect(got.status).toBe(200);
    expect(got.type).toBe('application/zip');
    expect(got.body.equals(zip)).toBe(true);
    await until(async () => ((await stored(logId)) ? undefined : true), 'the downloaded zip to be removed');

    const second = await svc.request<Problem>('GET', `${L}/${logId}`);
    expect(second.status).toBe(410);
    expect(second.body.code).toBe('AGT_LOGS_USED');
  });

  it('takes an archive of several chunks and gives it back byte for byte, once', async () => {
    const zip = randomBytes(3.5 * 1024 * 1024);
    zip.write('PK\x03\x04', 'latin1');
    const logId = await uploaded(zip);
    if (target.name === 'postgres') expect((await chunksOf(logId)).map((c) => c.seq)).toEqual([0, 1, 2, 3]);
    const got = await download(logId);
    expect(got.status).toBe(200);
    expect(got.body.length).toBe(zip.length);
    expect(got.body.equals(zip)).toBe(true);
    await until(async () => ((await stored(logId)) ? undefined : true), 'the downloaded archive to be removed');
    expect((await download(logId)).status).toBe(410);
  });

  it('answers a clear 404 for an archive it cannot find, without using the download up', async () => {
    const zip = await logZip('2026-01-01 kept for later\n'.repeat(500));
    const logId = await uploaded(zip);
    // Taken away (a file deleted, chunks lost), then put back.
    const aside = path.join(svc.dataDir, `${logId}.aside`);
    const chunks = target.name === 'postgres' ? await chunksOf(logId) : [];
    if (target.name === 'postgres')
      await svc.service.store.db.deleteFrom('logArchiveChunks').where('logId', '=', logId).execute();
    else fs.renameSync(archiveFile(logId), aside);

    const missing = await svc.request<Problem>('GET', `${L}/${logId}`);
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('AGT_LOGS_NOT_AVAILABLE');
    expect(missing.body.detail).toContain('not on this Service replica');
    expect(missing.body.detail).toContain('not used up');
    expect(missing.body.detail).not.toBe(LOGS_NOT_AVAILABLE);

    if (target.name === 'postgres') await svc.service.store.db.insertInto('logArchiveChunks').values(chunks).execute();
    else fs.renameSync(aside, archiveFile(logId));
    const got = await download(logId);
    expect(got.status).toBe(200);
    expect(got.body.equals(zip)).toBe(true);
    expect((await download(logId)).status).toBe(410);
  });

  it('refuses a GET from another IP address than the POST, even one a Security Rule admits', async () => {
    const from = '127.0.0.2';
    const rule = await svc.request('POST', `/v1/orgs/${svc.orgId}/securityrules`, {
      body: {
        name: 'second loopback',
        allowedIpRangeStartAddress: from,
        allowedIpRangeEndAddress: from,
        apiAccessEnabled: true,
      },
    });
    expect(rule.status).toBe(201);
    const { logId } = (await svc.request<{ logId: string }>('POST', L)).body;
    const command = await zipLogsFor(logId);
    expect((await upload(String(command['uploadUrl']), await logZip('x'))).status).toBe(204);
    const elsewhere = await svc.request<Problem>('GET', `${L}/${logId}`, { from });
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.body.code).toBe('AGT_LOGS_OTHER_IP');
    // The refusal did not use the logId up.
    expect(
      (await raw(`${svc.url}${L}/${logId}`, { method: 'GET', headers: { authorization: ADMIN_BASIC } })).status,
    ).toBe(200);
    // And the other address can have its own.
    const own = await svc.request<{ logId: string }>('POST', L, { from });
    expect(own.status).toBe(201);
    expect((await svc.request<Problem>('GET', `${L}/${own.body.logId}`, { from })).body.detail).toBe(
      LOGS_NOT_AVAILABLE,
    );
  });

  it('takes uploads only from the Agent asked, as a zip, with its credentials', async () => {
    const { logId } = (await svc.request<{ logId: string }>('POST', L)).body;
    const url = String((await zipLogsFor(logId))['uploadUrl']);
    const zip = await logZip('y');
    expect((await raw(url, { method: 'PUT', headers: { 'content-type': 'application/zip' }, body: zip })).status).toBe(
      401,
    );
    expect((await upload(url, zip, `Bearer ${agent.agentId}.not-the-secret`)).status).toBe(401);
    expect((await upload(url, zip, ADMIN_BASIC)).status).toBe(401);
    const other = await registerTestAgent(svc);
    expect((await upload(url, zip, `Bearer ${other.agentId}.${other.agentSecret}`)).status).toBe(404);
    expect((await upload(url, Buffer.from('this is not a zip at all'))).status).toBe(415);
    // A refused upload leaves nothing, and the logId still waits for its archive.
    expect(await stored(logId)).toBe(false);
    expect((await upload(url, Buffer.from('{"a":1}'), undefined, 'application/json')).status).toBe(415);
    expect((await upload(`${svc.url}/v1/agent/logs/3f2504e0-4f89-41d3-9a0c-0305e82c3301`, zip)).status).toBe(404);
    expect((await svc.request<Problem>('GET', `${L}/${logId}`)).body.detail).toBe(LOGS_NOT_AVAILABLE);
    expect((await upload(url, zip)).status).toBe(204);
  });

  it('reports an archive the Agent could not make, and refuses Agents that are not connected', async () => {
    const { logId } = (await svc.request<{ logId: string }>('POST', L)).body;
    await zipLogsFor(logId);
    const ack = await ch.report({
      kind: 'logArchiveFailed',
      logId,
      error: { code: 'AGT_LOG_UPLOAD_FAILED', kind: 'transient', message: 'disk full' },
    });
    expect(ack).toMatchObject({ ok: true });
    const failed = await svc.request<Problem>('GET', `${L}/${logId}`);
    expect(failed.status).toBe(409);
    expect(failed.body.code).toBe('AGT_LOGS_FAILED');
    expect(failed.body.detail).toContain('disk full');

    const offline = await registerTestAgent(svc);
    const refused = await svc.request<Problem>('POST', `/v1/orgs/${svc.orgId}/agents/${offline.agentId}/logs`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('AGT_NOT_CONNECTED');
    expect(
      (
        await svc.request(
          'GET',
          `/v1/orgs/${svc.orgId}/agents/${offline.agentId}/logs/3f2504e0-4f89-41d3-9a0c-0305e82c3301`,
        )
      ).status,
    ).toBe(404);
  });

  it('passes on the Agent refusing to zip its logs', async () => {
    const stubborn = await registerTestAgent(svc);
    const sch = await TestChannel.connect(svc, stubborn);
    try {
      await sch.hello(stubborn);
      sch.autoReply = (cmd) => ({
        re: cmd['id'],
        ok: false,
        error: { code: 'AGT_DRAINING', kind: 'transient', message: 'restarting now' },
      });
      const res = await svc.request<Problem>('POST', `/v1/orgs/${svc.orgId}/agents/${stubborn.agentId}/logs`);
      expect(res.status).toBe(502);
      expect(res.body.code).toBe('AGT_COMMAND_FAILED');
    } finally {
      await sch.close();
    }
  });

  it('needs the User role to request and download', async () => {
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

  // Last: housekeeping removes every log request older than its retention, those of the tests above too.
  it('housekeeping removes an archive never downloaded, with its request', async () => {
    const logId = await uploaded(await logZip('never fetched'));
    expect(await stored(logId)).toBe(true);
    const housekeeping = new AgentHousekeeping({
      store: svc.service.store,
      log: pino({ level: 'silent' }),
      logArchives: archives(),
    });
    await housekeeping.run(Date.now() + 8 * 24 * 60 * 60 * 1000);
    expect(await stored(logId)).toBe(false);
    const gone = await svc.request<Problem>('GET', `${L}/${logId}`);
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe('API_NOT_FOUND');
  });
});
