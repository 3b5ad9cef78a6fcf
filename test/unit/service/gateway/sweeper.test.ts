import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HeartbeatSweeper, sweepIntervalMs } from '../../../../service/gateway/sweeper.js';
import { getAgentById, insertAgent, updateAgent } from '../../../../service/store/repos/agents.repo.js';
import { preinstalledConnectors } from '../../../../service/marketplace/catalogue.js';
import { openStore, type Store } from '../../../../service/store/store.js';

const MIN = 60_000;

describe('the heartbeat sweeper', () => {
  let dir: string;
  let store: Store;
  let orgId: number;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-sweeper-'));
    store = await openStore({ dataDir: dir, preinstalledConnectors: preinstalledConnectors() });
    const now = new Date().toISOString();
    const org = await store.db
      .insertInto('orgs')
      .values({
        name: 'o',
        parentId: null,
        tenantId: 't',
        city: null,
        country: null,
        dataCenterId: 1,
        isSvcOrg: 0,
        apiCryptoToken: 'x',
        eventSolutionAccessToken: 'x',
        captureOnFailedRecordsForReprocessing: 1,
        captureDuringCloudAppRuns: 1,
        captureDuringLocalAgentAppRuns: 1,
        isSourceDataLocal: 1,
        isAgentLogDownloadAllowed: 0,
        createdAt: now,
        modifiedAt: now,
        modificationBy: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    orgId = org.id;
  });
  afterEach(async () => {
    vi.useRealTimers();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const agent = async (name: string, status: string, lastContactTime: string | null) => {
    const now = new Date().toISOString();
    const row = await insertAgent(store.db, {
      id: `00000000-0000-4000-8000-${String(Math.floor(Math.random() * 1e12)).padStart(12, '0')}`,
      orgId,
      name,
      nameKey: name,
      machineName: 'm',
      serviceName: 's',
      isCloudAgent: 0,
      isUpdating: 0,
      status,
      lastContactTime,
      lastShutdownTime: null,
      lastStartTime: null,
      version: null,
      installedConnectors: '[]',
      secretHash: null,
      fingerprint: null,
      createdAt: now,
      modifiedAt: now,
    });
    return row.id;
  };
  const status = async (id: string) => (await getAgentById(store.db, id))?.status;

  it('looks every quarter of the late threshold, at most every 30 seconds', () => {
    expect(sweepIntervalMs(15 * MIN)).toBe(30_000);
    expect(sweepIntervalMs(1000)).toBe(250);
    expect(sweepIntervalMs(10)).toBe(50);
  });

  it('moves silent Agents to HeartbeatLate after 15 minutes and HeartbeatFailed after 60, on its timer', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    const start = Date.now();
    const silent = await agent('silent', 'Running', new Date(start).toISOString());
    const stopped = await agent('stopped', 'Shutdown', new Date(start).toISOString());
    const never = await agent('never', 'Unknown', null);
    const sweeper = new HeartbeatSweeper({
      store,
      log: pino({ level: 'silent' }),
      lateAfterMs: 15 * MIN,
      failedAfterMs: 60 * MIN,
    });
    sweeper.start();
    try {
      await vi.advanceTimersByTimeAsync(14 * MIN);
      expect(await status(silent)).toBe('Running');
      await vi.advanceTimersByTimeAsync(1 * MIN + 30_000);
      expect(await status(silent)).toBe('HeartbeatLate');
      await vi.advanceTimersByTimeAsync(45 * MIN);
      expect(await status(silent)).toBe('HeartbeatFailed');
      expect(await status(stopped)).toBe('Shutdown');
      expect(await status(never)).toBe('Unknown');
    } finally {
      await sweeper.stop();
    }
  });

  it('does not overwrite a heartbeat that landed after it read the Agent', async () => {
    const start = Date.now();
    const id = await agent('racing', 'Running', new Date(start - 20 * MIN).toISOString());
    const sweeper = new HeartbeatSweeper({
      store,
      log: pino({ level: 'silent' }),
      lateAfterMs: 15 * MIN,
      failedAfterMs: 60 * MIN,
    });
    await updateAgent(store.db, id, { lastContactTime: new Date(start).toISOString() });
    expect(await sweeper.sweep(start)).toBe(0);
    expect(await status(id)).toBe('Running');
    expect(await sweeper.sweep(start + 16 * MIN)).toBe(1);
    expect(await status(id)).toBe('HeartbeatLate');
  });
});
