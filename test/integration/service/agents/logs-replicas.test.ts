/**
 * Agent log archives across two Service replicas on one PostgreSQL (service/store/log-archive-chunks.ts):
 * the Agent uploads to the replica that holds its channel, the user downloads through the other,
 * byte for byte and once — as through a load balancer, which sends the two calls wherever it likes.
 * Real Services on loopback ports, a real PostgreSQL database, a real WebSocket channel.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectPlayedAgent,
  OpenChannels,
  until,
  type Incoming,
  type TestAgent,
} from '../../../helpers/agent-client.js';
import { ADMIN_BASIC, raw, type Problem } from '../../../helpers/log-archives.js';
import type { TestService } from '../../../helpers/service.js';
import { serviceReplicas, type ServiceReplicas } from '../../../helpers/service-on-dir.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

/** `bytes` of zip-like data: the local file header's magic, then random bytes. */
function zipLike(bytes: number): Buffer {
  const body = randomBytes(bytes);
  body.write('PK\x03\x04', 'latin1');
  return body;
}

describe.skipIf(!STORE_TARGETS.some((t) => t.name === 'postgres'))('log archives across two replicas', () => {
  let replicas: ServiceReplicas;
  let a: TestService;
  let b: TestService;
  let agent: TestAgent;
  const channels = new OpenChannels();
  let zipLogs: (logId: string) => Promise<Incoming>;

  beforeAll(async () => {
    replicas = await serviceReplicas({ cloudAgents: 'off' });
    a = await replicas.start();
    b = await replicas.start();
    // The Agent's channel is on A, so its uploads go to A.
    const played = await connectPlayedAgent(a, channels, { name: 'Logs agent', results: { zipLogs: {} } });
    agent = played.agent;
    zipLogs = (logId) => played.ch.next((m) => m['type'] === 'zipLogs' && m['logId'] === logId);
  });
  afterAll(async () => {
    await channels.closeAll();
    await b?.close();
    await a?.close();
    await replicas?.dispose();
  });

  const upload = (url: string, body: Buffer) =>
    raw(url, {
      method: 'PUT',
      headers: { authorization: `Bearer ${agent.agentId}.${agent.agentSecret}`, 'content-type': 'application/zip' },
      body,
    });
  const download = (svc: TestService, path: string) =>
    raw(`${svc.url}${path}`, { method: 'GET', headers: { authorization: ADMIN_BASIC } });
  const chunks = async (logId: string): Promise<number> =>
    (await a.service.store.db.selectFrom('logArchiveChunks').select('seq').where('logId', '=', logId).execute()).length;
  /** Asks through `via` for an archive at `base`, which the Agent uploads to A: its logId. */
  const requested = async (via: TestService, base: string, zip: Buffer): Promise<string> => {
    const posted = await via.request<{ logId: string }>('POST', base);
    expect(posted.status, posted.text).toBe(201);
    const { logId } = posted.body;
    const uploadUrl = String((await zipLogs(logId))['uploadUrl']);
    expect(uploadUrl.startsWith(a.url)).toBe(true);
    expect((await upload(uploadUrl, zip)).status).toBe(204);
    return logId;
  };

  it("an Agent's archive uploaded to A is downloaded through B byte for byte, once", async () => {
    const base = `/v1/orgs/${b.orgId}/agents/${agent.agentId}/logs`;
    const zip = zipLike(3.5 * 1024 * 1024);
    const logId = await requested(b, base, zip);
    expect(await chunks(logId)).toBe(4);
    const got = await download(b, `${base}/${logId}`);
    expect(got.status).toBe(200);
    expect(got.type).toBe('application/zip');
    expect(got.body.equals(zip)).toBe(true);
    await until(async () => ((await chunks(logId)) === 0 ? true : undefined), 'the chunks to be deleted');
    for (const svc of [b, a]) {
      const again = await svc.request<Problem>('GET', `${base}/${logId}`);
      expect(again.status).toBe(410);
      expect(again.body.code).toBe('AGT_LOGS_USED');
    }
  });

  it("a Solution's archive uploaded to A is downloaded through B", async () => {
    const O = `/v1/orgs/${a.orgId}`;
    const made = await a.request<{ id: string }>('POST', `${O}/solutions`, {
      body: { name: 'Replicated logs', solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(made.status, made.text).toBe(201);
    const base = `${O}/solutions/${made.body.id}/logs`;
    const zip = zipLike(1.5 * 1024 * 1024);
    const logId = await requested(a, base, zip);
    const got = await download(b, `${base}/${logId}`);
    expect(got.status).toBe(200);
    expect(got.body.equals(zip)).toBe(true);
    expect((await download(a, `${base}/${logId}`)).status).toBe(410);
  });

  it('two downloads at once through A and B: one gets the archive, the other 410', async () => {
    const base = `/v1/orgs/${a.orgId}/agents/${agent.agentId}/logs`;
    const zip = zipLike(2.5 * 1024 * 1024);
    const logId = await requested(a, base, zip);
    const both = await Promise.all([download(a, `${base}/${logId}`), download(b, `${base}/${logId}`)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 410]);
    expect(both.find((r) => r.status === 200)?.body.equals(zip)).toBe(true);
  });
});
