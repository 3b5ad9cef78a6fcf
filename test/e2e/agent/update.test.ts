import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeAgentPackage } from '../../helpers/agent-packages.js';
import { reportsOf, until, untilStatus, workerPids } from './harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  finished,
  idNameCsv,
  runToEnd,
  SQLITE,
  sqliteTarget,
  startRun,
  startWithAgent,
  stopAll,
  type RunningAgent,
  type SqliteTarget,
} from '../solutions/harness.js';
import type { ServiceUnderTest } from './harness.js';

interface AgentModel {
  status: string;
  version: string | null;
  isUpdating: boolean;
  versionHold: boolean;
  updateVersion: string | null;
  updateError: string | null;
}

const ROWS = 300_000;

/**
 * A real `ferry agent run` updates itself from packages the Service offers (docs/agents.md
 * "Updates"): in the middle of a Solution run, the run finishes first and loses nothing, and the
 * worker comes back on the new version; a version whose worker cannot start is rolled back by the
 * supervisor, and the Agent goes on with the one it ran.
 */
describe('Agents update themselves', () => {
  let sut: ServiceUnderTest;
  let agent: RunningAgent;
  let target: SqliteTarget;
  let solutionId: string;
  let A: string;
  const packages = () => path.join(sut.dataDir, 'agent-packages');
  const view = async () => (await sut.request<AgentModel>('GET', A)).body;

  beforeAll(async () => {
    ({ sut, agent } = await startWithAgent({ csv: { people: idNameCsv(ROWS) } }));
    A = `/v1/orgs/${sut.orgId}/agents/${agent.agentId}`;
    target = sqliteTarget(path.join(sut.dataDir, 'target.db'), ['people'], { primaryKey: true });
    const csvId = await createConnection(sut, 'People files', CSV, { folder: path.join(sut.dataDir, 'csv') });
    const dbId = await createConnection(sut, 'Target', SQLITE, { file: target.file });
    const sol = await createSolution(
      sut,
      agent.agentId,
      'People',
      [copyMap({ n: 1, csvId, entity: 'people', targetId: dbId, table: 'people' })],
      { prepare: true },
    );
    solutionId = sol.id;
  }, 240_000);

  afterAll(async () => {
    await stopAll(sut);
  });

  it(
    'an update asked for during a run waits for it, loses nothing, and the Agent comes back on the new version',
    {
      timeout: 300_000,
    },
    async () => {
      const before = await view();
      expect(before).toMatchObject({ isUpdating: false, versionHold: false, updateVersion: null });
      const next = bump(before.version ?? '0.0.0', 1);
      writeAgentPackage(packages(), next);
      const offered = await sut.request<{ versions: Array<{ version: string }> }>(
        'GET',
        `/v1/orgs/${sut.orgId}/agentversions`,
      );
      expect(offered.body.versions.map((v) => v.version)).toEqual([next]);

      const workersBefore = workerPids(agent.proc).length;
      const runId = await startRun(sut, solutionId);
      await until('the run to have written rows', () => (target.count('people') > 0 ? true : undefined), 60_000);
      const asked = await sut.request<AgentModel>('POST', `${A}/update`, { body: {} });
      expect(asked.status, JSON.stringify(asked.body)).toBe(200);
      expect(asked.body).toMatchObject({ isUpdating: true, updateVersion: next });
      const runningWhenAsked = target.count('people') < ROWS;

      const execution = await finished(sut, solutionId, runId);
      expect(execution.result).toBe('CompletedSuccessfully');
      expect(execution.recordsProcessed).toBe(ROWS);
      expect(checksum(target.file)).toEqual({ n: ROWS, keys: ROWS, sum: (ROWS * (ROWS + 1)) / 2 });

      const updated = await until(
        `the Agent on ${next}`,
        async () => {
          const v = await view();
          return v.version === next && v.status === 'Running' && !v.isUpdating ? v : undefined;
        },
        180_000,
      );
      expect(updated).toMatchObject({ updateVersion: null, updateError: null });
      expect(workerPids(agent.proc).length).toBeGreaterThan(workersBefore);
      // The supervisor made it the Agent's version once its worker said it connected.
      await agent.proc.waitFor(new RegExp(`version ${escape(next)} connected`), 30_000);
      // The Service heard the whole story in order: waiting for the run (when one ran), installing, restarting.
      const statuses = reportsOf(sut, agent.agentId)
        .filter((r) => r.kind === 'status')
        .map((r) => r.status);
      const story = statuses.slice(statuses.lastIndexOf(runningWhenAsked ? 'WaitingToUpdateAgent' : 'UpdatingAgent'));
      expect(story.slice(0, runningWhenAsked ? 3 : 2)).toEqual(
        runningWhenAsked
          ? ['WaitingToUpdateAgent', 'UpdatingAgent', 'AgentUpdating']
          : ['UpdatingAgent', 'AgentUpdating'],
      );
      expect(runningWhenAsked, 'the update was asked for while the run still wrote').toBe(true);

      // The new version runs Solutions.
      target.clear();
      const again = await runToEnd(sut, solutionId);
      expect(again).toMatchObject({ result: 'CompletedSuccessfully', recordsProcessed: ROWS });
      expect(checksum(target.file).keys).toBe(ROWS);
    },
  );

  it(
    'a version whose worker does not start is rolled back by the supervisor, and not offered again',
    {
      timeout: 240_000,
    },
    async () => {
      const current = (await view()).version ?? '';
      const broken = bump(current, 1);
      writeAgentPackage(packages(), broken, { broken: true });
      const asked = await sut.request<AgentModel>('POST', `${A}/update`, { body: { version: broken } });
      expect(asked.status, JSON.stringify(asked.body)).toBe(200);
      const after = await until(
        'the rollback reported',
        async () => {
          const v = await view();
          return v.updateError?.startsWith('Rolled back') && !v.isUpdating ? v : undefined;
        },
        180_000,
      );
      expect(after.updateError).toMatch(/^Rolled back: .*exit 1.*before it connected/);
      expect(after).toMatchObject({ version: current, updateVersion: null });
      await untilStatus(sut, agent.agentId, 'Running', 60_000);
      expect(agent.proc.output()).toMatch(new RegExp(`version ${escape(broken)} did not come up`));
      // The failed version is the newest offered, yet the Agent is not sent it again on its next hello.
      const res = await sut.request<{ code: string }>('POST', `${A}/restart`, { body: { restartNow: true } });
      expect(res.status).toBe(200);
      await until('the restart', async () => ((await view()).status === 'Running' ? true : undefined), 60_000);
      await new Promise((r) => setTimeout(r, 1500));
      expect(await view()).toMatchObject({ version: current, isUpdating: false, updateVersion: null });
      // The Agent's folder keeps only the version it runs.
      const dirs = fs.readdirSync(path.join(agent.dir, 'versions')).filter((n) => n !== 'state.json');
      expect(dirs).toHaveLength(1);
      expect(dirs[0]).toMatch(new RegExp(`^${escape(current)}-`));
    },
  );

  it('an Agent held at its version is offered nothing until released, and a named version still reaches it', async () => {
    const held = await sut.request<AgentModel>('PUT', A, { body: { versionHold: true } });
    expect(held.status).toBe(200);
    expect(held.body.versionHold).toBe(true);
    const refused = await sut.request<{ code: string }>('POST', `${A}/update`, { body: {} });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('AGT_VERSION_HELD');
    const unknown = await sut.request<{ code: string }>('POST', `${A}/update`, { body: { version: '99.0.0' } });
    expect(unknown.status).toBe(409);
    expect(unknown.body.code).toBe('AGT_UPDATE_UNAVAILABLE');
    const bad = await sut.request<{ code: string }>('POST', `${A}/update`, { body: { version: 7 } });
    expect(bad.status).toBe(400);
    const released = await sut.request<AgentModel>('PUT', A, { body: { versionHold: false } });
    expect(released.body.versionHold).toBe(false);
  });
});

/** `x.y.z` with its patch number raised by `by`. */
function bump(version: string, by: number): string {
  const [major, minor, patch] = version.split(/[.-]/).map(Number);
  return `${major ?? 0}.${minor ?? 0}.${(patch ?? 0) + by}`;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Count, distinct keys and the sum of the keys of the target table, in SQL. */
function checksum(file: string): { n: number; keys: number; sum: number } {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT count(*) AS n, count(DISTINCT id) AS keys, sum(id) AS sum FROM people').get() as {
      n: number;
      keys: number;
      sum: number;
    };
  } finally {
    db.close();
  }
}
