/**
 * A Replication Solution that captures changes from PostgreSQL's log, through the API alone and run
 * by a real Agent process (docs/change-capture.md): replicationSettings.changeCapture Logical; the
 * first run copies, the second applies inserts, updates and deletes (a delete, which net change
 * cannot see); the capture's status through the API; deleting the Solution drops the slot and the
 * publication in the source.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_TARGETS } from '../../helpers/stores.js';
import { captureDb, makeOrders, pgSummary, type CaptureDb } from '../../integration/solutions/capture-helpers.js';
import { createTestDatabase } from '../../helpers/stores.js';
import { checkOutputs, docExamples } from '../../helpers/doc-examples.js';
import { ADMIN } from '../../helpers/service.js';
import { killAll, serviceUnderTest, until, type ServiceUnderTest } from '../agent/harness.js';
import { createConnection, finished, POSTGRES, runningAgent } from './harness.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');

describe.skipIf(!HAS_PG)('an RS Solution capturing changes from PostgreSQL on a real Agent', () => {
  let sut: ServiceUnderTest;
  let src: CaptureDb;
  let dst: { url: string; drop: () => Promise<void> };
  let agent: Awaited<ReturnType<typeof runningAgent>>;

  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    src = await captureDb();
    dst = await createTestDatabase();
    await makeOrders(src, 5000);
    agent = await runningAgent(sut);
  }, 180_000);

  afterAll(async () => {
    killAll();
    await sut?.dispose();
    await src?.drop();
    await dst?.drop();
  });

  it(
    'copies, applies deletes and updates, shows its slot, and drops it with the Solution',
    { timeout: 180_000 },
    async () => {
      const O = `/v1/orgs/${sut.orgId}`;
      const srcId = await createConnection(sut, `Orders db ${randomBytes(3).toString('hex')}`, POSTGRES, {
        connectionString: src.url,
        schemas: 'public',
      });
      const dstId = await createConnection(sut, 'Replica', POSTGRES, { connectionString: dst.url, schemas: 'public' });
      const body = {
        name: 'Orders by log',
        solutionType: 'Replication',
        agentId: agent.agentId,
        connectionIdForSource: srcId,
        connectionIdForTarget: dstId,
        replicationSettings: { selectionType: 'Selected', entities: ['orders'], changeCapture: { method: 'Logical' } },
        mapLinks: [],
        checkForBulk: true,
      };
      const bad = await sut.request('POST', `${O}/solutions`, {
        body: {
          ...body,
          name: 'Bad',
          replicationSettings: { ...body.replicationSettings, changeCapture: { method: 'Wal' } },
        },
      });
      expect(bad.status).toBe(400);
      expect(bad.headers['content-type']).toMatch(/application\/problem\+json/);

      const created = await sut.request<{ id: string; replicationSettings: unknown }>('POST', `${O}/solutions`, {
        body,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body.replicationSettings).toEqual({
        selectionType: 'Selected',
        entities: ['orders'],
        changeCapture: { method: 'Logical', continuous: false, retainedWalWarningMb: 1024 },
      });
      const S = `${O}/solutions/${created.body.id}`;
      await until(
        'the Solution prepared',
        async () => {
          const s = (await sut.request<{ status: string }>('GET', S)).body;
          return s.status === 'OnDemand' || s.status === 'ProvisionError' ? s : undefined;
        },
        120_000,
      );
      const first = await sut.request<{ runId: string }>('POST', `${S}/start`);
      const run1 = await finished(sut, created.body.id, first.body.runId);
      expect(run1, JSON.stringify(run1)).toMatchObject({ result: 'CompletedSuccessfully', recordsProcessed: 5000 });
      expect(await pgSummary(dst.url, 'orders')).toEqual(await pgSummary(src.url, 'orders'));

      await src.q('DELETE FROM orders WHERE id <= 100');
      await src.q("UPDATE orders SET name = 'changed' WHERE id BETWEEN 101 AND 150");
      const second = await sut.request<{ runId: string }>('POST', `${S}/start`);
      const run2 = await finished(sut, created.body.id, second.body.runId);
      expect(run2, JSON.stringify(run2)).toMatchObject({
        result: 'CompletedSuccessfully',
        recordsProcessed: 150,
        recordsFailed: 0,
      });
      expect(await pgSummary(dst.url, 'orders')).toEqual(await pgSummary(src.url, 'orders'));

      const status = await sut.request<{ slotName: string; exists: boolean; retainedBytes: number; lost: boolean }>(
        'GET',
        `${S}/changecapture`,
      );
      expect(status.status, JSON.stringify(status.body)).toBe(200);
      expect(status.body).toMatchObject({ exists: true, lost: false, warning: false });
      expect(status.body.slotName).toBe(`ferry_${created.body.id.replace(/-/g, '')}`);
      expect(status.body.retainedBytes).toBeLessThan(256 * 1024 * 1024);

      expect((await sut.request('DELETE', S)).status).toBe(204);
      await until(
        'the slot dropped with the Solution',
        async () =>
          (await src.q('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [status.body.slotName])).length === 0
            ? true
            : undefined,
        30_000,
      );
      expect(await src.q('SELECT 1 FROM pg_publication WHERE pubname = $1', [status.body.slotName])).toEqual([]);
    },
  );

  it('docs/change-capture.md: its curl examples run and print what it says', { timeout: 180_000 }, async () => {
    const blocks = docExamples(path.resolve(import.meta.dirname, '../../../docs/change-capture.md'), 'capture');
    expect(blocks.length).toBe(3);
    const script = blocks.join('\n\n');
    const srcId = await createConnection(sut, `Docs source ${randomBytes(3).toString('hex')}`, POSTGRES, {
      connectionString: src.url,
      schemas: 'public',
    });
    const dstId = await createConnection(sut, `Docs target ${randomBytes(3).toString('hex')}`, POSTGRES, {
      connectionString: dst.url,
      schemas: 'public',
    });
    const { stdout } = await promisify(execFile)('bash', ['-eo', 'pipefail', '-c', script], {
      cwd: sut.dataDir,
      timeout: 120_000,
      env: {
        ...process.env,
        FERRY_URL: sut.url,
        AUTH: `${ADMIN.email}:${ADMIN.password}`,
        ORG: String(sut.orgId),
        AGENT: agent.agentId,
        SRC: srcId,
        DST: dstId,
      },
    });
    checkOutputs(script, stdout, (message) => expect.fail(message));
    expect(await pgSummary(dst.url, 'orders')).toEqual(await pgSummary(src.url, 'orders'));
  });
});
