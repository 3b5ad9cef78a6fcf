import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { testConnectionCommand } from '../../../src/agent/commands/test-connection.command.js';
import { WorkRegistry } from '../../../src/agent/work.js';
import { ConnectorHost } from '../../../src/connectors/host.js';

const CONNECTORS = path.resolve(import.meta.dirname, '../../../connectors');
const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';

describe('the testConnection command', () => {
  const log = pino({ level: 'silent' });
  const host = new ConnectorHost({ dir: CONNECTORS, log });
  const loaded = host.loadAll().then(() => host);
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-test-conn-'));
  afterAll(async () => {
    await host.close();
    fs.rmSync(folder, { recursive: true, force: true });
  });

  it('loads the plugin with the host, tests, and answers ok', async () => {
    const work = new WorkRegistry();
    const handle = testConnectionCommand({ work, log, host: () => loaded });
    await expect(
      handle({ id: 'c1', type: 'testConnection', connectorId: CSV, properties: { folder } }),
    ).resolves.toEqual({ ok: true });
    expect(work.count).toBe(0);
  });

  it("fails with the plugin's error for a bad Connection, and CON_NOT_FOUND for an unknown Connector", async () => {
    const handle = testConnectionCommand({ work: new WorkRegistry(), log, host: () => loaded });
    await expect(
      handle({
        id: 'c2',
        type: 'testConnection',
        connectorId: CSV,
        properties: { folder: path.join(folder, 'missing') },
      }),
    ).rejects.toMatchObject({ code: expect.stringMatching(/^CON_/) as string });
    await expect(
      handle({ id: 'c3', type: 'testConnection', connectorId: '3f2504e0-4f89-41d3-9a0c-0305e82c3301', properties: {} }),
    ).rejects.toMatchObject({ code: 'CON_NOT_FOUND' });
  });

  it('refuses while the Agent drains for a restart', async () => {
    const work = new WorkRegistry();
    work.drain('restart');
    const handle = testConnectionCommand({ work, log, host: () => loaded });
    await expect(
      handle({ id: 'c4', type: 'testConnection', connectorId: CSV, properties: { folder } }),
    ).rejects.toMatchObject({ code: 'AGT_DRAINING' });
  });
});
