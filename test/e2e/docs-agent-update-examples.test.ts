import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenChannels, registerTestAgent, type Incoming, type TestChannel } from '../helpers/agent-client.js';
import { writeAgentPackage } from '../helpers/agent-packages.js';
import { checkOutputs, docExamples } from '../helpers/doc-examples.js';
import { ADMIN, startService, type TestService } from '../helpers/service.js';

const exec = promisify(execFile);
const DOC = path.resolve(import.meta.dirname, '../../docs/agent.md');

/**
 * The curl example of docs/agent.md "Updates" (`<!-- example: agent-update -->`) runs against a
 * real Service offering one Agent package, with a connected Agent the test plays: it lists the
 * versions, holds the Agent, and updates it by name; the Agent receives the command.
 */
describe('docs/agent.md: the update example runs against a Service', () => {
  let svc: TestService;
  let agentId: string;
  let ch: TestChannel;
  const channels = new OpenChannels();
  const packages = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-agent-packages-'));

  beforeAll(async () => {
    writeAgentPackage(packages, '2.0.0');
    svc = await startService({ name: 'sqlite' }, { cloudAgents: 'off', agentPackagesDir: packages });
    const agent = await registerTestAgent(svc, { name: 'Plant floor' });
    agentId = agent.agentId;
    // Held before it connects, so that only the example's own request updates it.
    expect(
      (await svc.request('PUT', `/v1/orgs/${svc.orgId}/agents/${agentId}`, { body: { versionHold: true } })).status,
    ).toBe(200);
    ch = await channels.connect(svc, agent);
    ch.autoReply = (cmd: Incoming) => ({ re: cmd['id'], ok: true, result: { accepted: true, need: [] } });
    expect(await ch.hello(agent)).toMatchObject({ ok: true });
  }, 120_000);
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
    fs.rmSync(packages, { recursive: true, force: true });
  });

  it('prints what the document says, and the Agent is sent the update', { timeout: 60_000 }, async () => {
    const blocks = docExamples(DOC, 'agent-update');
    expect(blocks.length).toBe(1);
    const script = blocks.join('\n\n');
    const { stdout } = await exec('bash', ['-eo', 'pipefail', '-c', script], {
      timeout: 30_000,
      env: {
        ...process.env,
        FERRY_URL: svc.url,
        AUTH: `${ADMIN.email}:${ADMIN.password}`,
        ORG: String(svc.orgId),
        AGENT: agentId,
      },
    });
    checkOutputs(script, stdout, (message) => expect.fail(message));
    expect(await ch.next((m) => m['type'] === 'updateAgent')).toMatchObject({ version: '2.0.0' });
  });
});
