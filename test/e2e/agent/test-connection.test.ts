import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encryptProperty } from '../../../service/crypto/connection-crypto.js';
import { ROOT, ferry, install, killAll, serviceUnderTest, until, untilStatus, type ServiceUnderTest } from './harness.js';

const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';

/**
 * Installs the built-in CSV plugin into the instance's connectors folder: its SDK import pointed at
 * the source tree, its packages (zod) found through a node_modules link beside the folder.
 */
function installCsvPlugin(instanceDir: string): void {
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(instanceDir, 'node_modules'), 'dir');
  const target = path.join(instanceDir, 'connectors', 'csv');
  fs.mkdirSync(target, { recursive: true });
  for (const name of fs.readdirSync(path.join(ROOT, 'connectors', 'csv'))) {
    const text = fs.readFileSync(path.join(ROOT, 'connectors', 'csv', name), 'utf8');
    fs.writeFileSync(path.join(target, name), text.replaceAll("'../../src/", `'${ROOT}/src/`));
  }
}

describe('Connection test through a real Agent process', () => {
  let sut: ServiceUnderTest;
  let home: string;
  let agent: { agentId: string; dir: string };
  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    home = path.join(sut.dataDir, 'agents');
    agent = await install(sut, home);
    installCsvPlugin(agent.dir);
  }, 60_000);
  afterEach(() => killAll());
  afterAll(async () => {
    killAll();
    await sut.dispose();
  });

  it('answers SUCCESS for a good CSV folder and the plugin\'s error for a missing one', { timeout: 120_000 }, async () => {
    const run = ferry(['agent', 'run', '--home', home]);
    await untilStatus(sut, agent.agentId, 'Running');
    const token = (await sut.request<{ apiCryptoToken: string }>('GET', `/v1/orgs/${sut.orgId}/SecuritySettings`)).body.apiCryptoToken;
    const C = `/v1/orgs/${sut.orgId}/connections`;
    const created = await sut.request<{ id: string }>('POST', C, {
      body: { name: 'Local CSV', connectorId: CSV, color: '#FF112233', properties: [{ key: 'folder', value: encryptProperty(sut.dataDir, token) }] },
    });
    expect(created.status).toBe(201);

    const result = async (commandId: string) =>
      until('the test result', async () => {
        const res = await sut.request<{ status: string; reply: string; name: string }>('GET', `${C}/test/${commandId}`);
        return res.body.status === 'Completed' ? res.body : undefined;
      });

    const ok = await sut.request<{ commandId: string }>('POST', `${C}/${created.body.id}/test?agentId=${agent.agentId}`);
    expect(ok.status).toBe(200);
    expect(await result(ok.body.commandId)).toMatchObject({ name: 'Local CSV', reply: 'SUCCESS' });

    const bad = await sut.request<{ commandId: string }>('POST', `${C}/test?agentId=${agent.agentId}`, {
      body: { name: 'Missing', connectorId: CSV, color: '#FF112233', properties: [{ key: 'folder', value: encryptProperty(path.join(sut.dataDir, 'nope'), token) }] },
    });
    const failed = await result(bad.body.commandId);
    expect(failed.reply).not.toBe('SUCCESS');
    expect(failed.reply.length).toBeGreaterThan(0);
    expect(await run.stop()).toBe(0);
  });
});
