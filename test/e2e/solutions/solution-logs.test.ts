import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOGS_NOT_AVAILABLE } from '../../helpers/log-archives.js';
import { unzip } from '../../helpers/unzip.js';
import { until, type ServiceUnderTest } from '../agent/harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  PEOPLE_CSV,
  runToEnd,
  SQLITE,
  sqliteTarget,
  startWithAgent,
  stopAll,
  type Execution,
  type RunningAgent,
} from './harness.js';

type Line = Record<string, unknown> & { msg: string };

/**
 * Solution logs from a real Agent process: two Solutions run on one Agent, and the zip of one
 * holds its own lines only (its runner's, and its Connections' through the Connector host), every
 * one naming the Solution; narrowed to one execution, only that run's lines.
 */
describe("a Solution's logs from a real Agent: two Solutions, CSV → SQLite", () => {
  let sut: ServiceUnderTest;
  let agent: RunningAgent;
  const solutions: Record<'alpha' | 'beta', { id: string; runs: Execution[] }> = {
    alpha: { id: '', runs: [] },
    beta: { id: '', runs: [] },
  };

  const S = (id: string): string => `/v1/orgs/${sut.orgId}/solutions/${id}`;
  const run = async (id: string): Promise<Execution> => {
    const done = await runToEnd(sut, id);
    expect(done, JSON.stringify(done)).toMatchObject({ result: 'CompletedSuccessfully', recordsProcessed: 3 });
    return done;
  };
  /** Asks for the Solution's logs, waits for the Agent's upload, downloads the zip once: its lines. */
  const logsOf = async (id: string, query = ''): Promise<Line[]> => {
    const post = await sut.request<{ logId: string }>('POST', `${S(id)}/logs${query}`);
    expect(post.status, JSON.stringify(post.body)).toBe(201);
    const url = `${S(id)}/logs/${post.body.logId}`;
    const zip = await until(
      'the log archive',
      async () => {
        const res = await sut.request<{ detail?: string }>('GET', url);
        if (res.status === 404 && typeof res.body === 'object' && res.body.detail === LOGS_NOT_AVAILABLE)
          return undefined;
        expect(res.status, res.raw.toString('utf8')).toBe(200);
        return res.raw;
      },
      60_000,
    );
    expect((await sut.request<{ code: string }>('GET', url)).body.code).toBe('AGT_LOGS_USED');
    const entries = unzip(zip);
    expect(entries.size).toBeGreaterThan(0);
    const text = [...entries.values()].map((b) => b.toString('utf8')).join('');
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Line);
  };

  beforeAll(async () => {
    const bed = await startWithAgent({ csv: { people: PEOPLE_CSV } });
    ({ sut, agent } = bed);
    const target = sqliteTarget(path.join(sut.dataDir, 'target.db'), ['alpha', 'beta']);
    const csvId = await createConnection(sut, 'Files', CSV, { folder: bed.folder });
    const dbId = await createConnection(sut, 'Target', SQLITE, { file: target.file });
    for (const [n, name] of (['alpha', 'beta'] as const).entries()) {
      const map = copyMap({ n: n + 1, csvId, entity: 'people', targetId: dbId, table: name });
      solutions[name].id = (await createSolution(sut, agent.agentId, `Solution ${name}`, [map], { prepare: true })).id;
    }
    // Interleaved, so that the two Solutions' lines share the log files.
    solutions.alpha.runs.push(await run(solutions.alpha.id));
    solutions.beta.runs.push(await run(solutions.beta.id));
    solutions.alpha.runs.push(await run(solutions.alpha.id));
  }, 300_000);

  afterAll(() => stopAll(sut));

  it("writes the Solution and run IDs on every line of a run, its Connections' lines included", () => {
    const logs = path.join(agent.dir, 'logs');
    const lines = fs
      .readdirSync(logs)
      .filter((n) => n.endsWith('.log'))
      .flatMap((n) => fs.readFileSync(path.join(logs, n), 'utf8').split('\n'))
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Line);
    // Only runs read and write records here (prepare reads metadata, outside any run).
    const recordCalls = lines.filter((l) => l['verb'] === 'query' || l['verb'] === 'write');
    expect(recordCalls.length).toBeGreaterThanOrEqual(3);
    const runIds = new Set([...solutions.alpha.runs, ...solutions.beta.runs].map((r) => r.processExecutionId));
    for (const l of recordCalls) {
      expect([solutions.alpha.id, solutions.beta.id], JSON.stringify(l)).toContain(l['solutionId']);
      expect(runIds.has(String(l['runId'])), JSON.stringify(l)).toBe(true);
    }
  });

  it(
    "zips only the Solution's own lines: its runner's and its Connectors', from every run",
    { timeout: 120_000 },
    async () => {
      const { alpha, beta } = solutions;
      const lines = await logsOf(alpha.id);
      for (const l of lines) expect(l['solutionId'], JSON.stringify(l)).toBe(alpha.id);
      expect(JSON.stringify(lines)).not.toContain(beta.id);
      expect(JSON.stringify(lines)).not.toContain(beta.runs[0]?.processExecutionId);
      for (const r of alpha.runs) {
        const own = lines.filter((l) => l['runId'] === r.processExecutionId);
        expect(own.map((l) => l.msg)).toEqual(
          expect.arrayContaining(['solution run started', 'solution run finished']),
        );
        // The Map's reads and writes, logged by the Connector host under the run's logger.
        expect(
          own.some((l) => l['connector'] === 'CSV' && l['verb'] === 'query' && l['records'] === 3),
          JSON.stringify(own),
        ).toBe(true);
      }
      // Oldest first.
      const times = lines.map((l) => Date.parse(String(l['time'])));
      expect([...times].sort((a, b) => a - b)).toEqual(times);
    },
  );

  it('narrows to one execution by its History id, and to lines since an instant', { timeout: 120_000 }, async () => {
    const { alpha } = solutions;
    const [first, second] = alpha.runs as [Execution, Execution];
    const one = await logsOf(alpha.id, `?historyId=${first.id}`);
    expect(one.length).toBeGreaterThan(0);
    for (const l of one)
      expect(l, JSON.stringify(l)).toMatchObject({ solutionId: alpha.id, runId: first.processExecutionId });
    expect(one.some((l) => l['connector'] === 'CSV')).toBe(true);

    const history = (await sut.request<Array<{ id: number; start: string }>>('GET', `${S(alpha.id)}/history`)).body;
    const secondStart = history.find((h) => h.id === second.id)?.start ?? '';
    const later = await logsOf(alpha.id, `?since=${encodeURIComponent(secondStart)}`);
    expect(later.length).toBeGreaterThan(0);
    expect(later.some((l) => l['runId'] === second.processExecutionId)).toBe(true);
    expect(
      later.some((l) => l['runId'] === first.processExecutionId),
      secondStart,
    ).toBe(false);
  });
});
