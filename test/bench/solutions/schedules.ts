/**
 * Scenario schedules: SCHED.solutions Solutions on SCHED.agents Agent processes, every minute for
 * SCHED.minutes minutes, with a Service restart and an Agent restart in the middle: every due time
 * fired exactly once? With SCHED.replicas (BENCH_SCHEDULE_REPLICAS=3) the Service is that many
 * replica processes on PostgreSQL behind HAProxy (test/e2e/replicas/cluster.ts) and the middle is
 * a rolling restart of every replica, then a kill -9 of the one holding the first Agent's channel,
 * then the Agent restart.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ServiceUnderTest } from '../../e2e/agent/harness.js';
import { clusterUnderTest, holderOf, replicaIndexOf, startCluster, type Cluster } from '../../e2e/replicas/cluster.js';
import { killAgents } from '../proc.js';
import { type Agent, installAgent, runAgent } from './agents.js';
import { block } from './context.js';
import { pgExec, pgRows } from './postgres.js';
import { api, benchService, createConnection, type Execution, harness, prepare } from './service.js';
import { CSV_CONNECTOR, loadavg, log, median, POSTGRES_CONNECTOR, quantile, SCHED, sleep } from './settings.js';

type Skip = { dueAt: string; reason: string };

/** One due time's outcome over every Solution. */
interface DueTally {
  dueAt: string;
  fired: number;
  doubles: number;
  skipped: number;
  missedUnreported: number;
  lateMs: number[];
  endMs: number[];
}

/** The due times counted: every minute from the first one at least 20 s after the last schedule was set. */
interface DueTimes {
  firstDue: number;
  lastDue: number;
  dues: number[];
}

const SCHEDULE = {
  scheduleOption: 'Recurring',
  runOnceOptions: null,
  recurringOptions: {
    days: { daysOption: 'DaysInterval', daysInterval: 1 },
    times: { timeOption: 'TimeInterval', timeInterval: 1, timeIntervalUnit: 'minutes' },
    timeZone: null,
  },
};

/** The Map of Solution `name`: the one CSV row → a row of sched_runs naming the Solution. */
function runsMap(name: string, csvConn: string, pgConn: string): Record<string, unknown> {
  return {
    version: '3.0',
    name: `${name} map`,
    blocks: [
      { blockId: block(1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: csvConn, entity: 'one' },
      {
        blockId: block(2),
        name: 'W',
        blockType: 'Create',
        action: 'Create',
        connectionId: pgConn,
        entity: 'sched_runs',
        fieldMappings: [
          { targetField: 'sol', targetFormula: `"${name}"` },
          { targetField: 'id', targetFormula: 'Q.id' },
        ],
      },
    ],
  };
}

/** Runs `work(i)` for i in 0…n-1, eight at a time. */
async function eightAtATime(n: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      await work(i);
    }
  };
  await Promise.all(Array.from({ length: 8 }, () => worker()));
}

/** Creates, prepares and schedules SCHED.solutions Solutions, spread over the Agents; answers their ids. */
async function scheduleSolutions(
  sut: ServiceUnderTest,
  agents: readonly Agent[],
  csvConn: string,
  pgConn: string,
): Promise<string[]> {
  const O = `/v1/orgs/${sut.orgId}`;
  const ids: string[] = Array.from({ length: SCHED.solutions }, () => '');
  const names: string[] = ids.map((_, i) => `S${String(i).padStart(5, '0')}`);
  await eightAtATime(SCHED.solutions, async (i) => {
    const name = names[i] as string;
    const agent = agents[i % agents.length] as Agent;
    const id = (
      await api<{ id: string }>(sut, 'POST', `${O}/solutions`, {
        name,
        solutionType: 'Integration',
        agentId: agent.agentId,
        mapLinks: [],
      })
    ).body.id;
    ids[i] = id;
    await api(sut, 'POST', `${O}/solutions/${id}/maps/advanced`, runsMap(name, csvConn, pgConn));
    await prepare(sut, id);
    await api(sut, 'PUT', `${O}/solutions/${id}/schedule`, SCHEDULE);
    if ((i + 1) % 100 === 0) log(`schedules: ${i + 1} Solutions prepared and scheduled`);
  });
  return ids;
}

/**
 * The middle: the Service down across one due time, then one Agent down across the next (it
 * notices that due time late, at its start, and must run it once). Replaces the Agent in `agents`.
 */
async function restartInTheMiddle(
  sut: ServiceUnderTest,
  cluster: Cluster | undefined,
  agents: Agent[],
  { dues, lastDue }: DueTimes,
): Promise<Array<{ at: string; event: string }>> {
  const mid = dues[Math.floor(SCHED.minutes / 2)] as number;
  const events: Array<{ at: string; event: string }> = [];
  const note = (event: string): void => {
    events.push({ at: new Date().toISOString(), event });
    log(`schedules: ${event}`);
  };
  await sleep(Math.max(0, mid - 15_000 - Date.now()));
  let agentDue = mid + 60_000 <= lastDue ? mid + 60_000 : mid;
  if (cluster) {
    await replicasInTheMiddle(cluster, agents, mid, note);
    agentDue = mid + 120_000 <= lastDue ? mid + 120_000 : agentDue;
  } else {
    note('Service stopping');
    await sut.stop();
    await sleep(Math.max(0, mid + 15_000 - Date.now()));
    await sut.start();
    note('Service started again');
  }
  const victim = agents[0] as Agent;
  await sleep(Math.max(0, agentDue - 5_000 - Date.now()));
  note(`Agent ${victim.instance} stopping (SIGTERM)`);
  await victim.proc.stop();
  // Down across the due time: the Agent notices it late, at its start, and must run it once.
  await sleep(Math.max(0, agentDue + 10_000 - Date.now()));
  const again = await runAgent(sut, victim.home, victim.instance, victim.agentId);
  agents[0] = again;
  note(`Agent ${victim.instance} running again`);
  return events;
}

/**
 * The replicas' part of the middle: a rolling restart of every replica (SIGTERM: a drain) across
 * due time `mid`, then the replica holding the first Agent's channel killed (SIGKILL) 5 s before
 * the next due time and started again 15 s after it.
 */
async function replicasInTheMiddle(
  cluster: Cluster,
  agents: readonly Agent[],
  mid: number,
  note: (event: string) => void,
): Promise<void> {
  for (let i = 0; i < cluster.replicas.length; i++) {
    note(`replica ${i + 1} draining (SIGTERM)`);
    const code = await cluster.stop(i);
    if (code !== 0) throw new Error(`replica ${i + 1} exited ${code} on SIGTERM`);
    await cluster.start(i);
    await cluster.inRotation(i);
    note(`replica ${i + 1} back in rotation`);
  }
  await sleep(Math.max(0, mid + 55_000 - Date.now()));
  const holder = await holderOf(cluster, (agents[0] as Agent).agentId);
  const victim = holder === undefined ? 0 : replicaIndexOf(cluster, holder);
  note(`replica ${victim + 1} killed (SIGKILL)`);
  await cluster.kill(victim);
  await sleep(Math.max(0, mid + 75_000 - Date.now()));
  await cluster.start(victim);
  await cluster.inRotation(victim);
  note(`replica ${victim + 1} back in rotation`);
}

/** Every Solution's History once the last due time's runs are in it (or after 3 minutes of waiting). */
async function settledHistory(
  sut: ServiceUnderTest,
  ids: readonly string[],
  { firstDue, lastDue }: DueTimes,
): Promise<Map<string, Execution[]>> {
  const O = `/v1/orgs/${sut.orgId}`;
  const history = async (id: string): Promise<Execution[]> =>
    (
      await api<Execution[]>(
        sut,
        'GET',
        `${O}/solutions/${id}/history?limit=1000&laterThanDate=${encodeURIComponent(new Date(firstDue - 3_600_000).toISOString())}`,
      )
    ).body;
  const settled = async (): Promise<Map<string, Execution[]>> => {
    const all = new Map<string, Execution[]>();
    await eightAtATime(ids.length, async (i) => {
      all.set(ids[i] as string, await history(ids[i] as string));
    });
    return all;
  };
  await sleep(Math.max(0, lastDue + 5_000 - Date.now()));
  let byId = await settled();
  const deadline = Date.now() + 180_000;
  for (;;) {
    const open = [...byId.values()].flat().filter((e) => e.trigger === 'schedule' && e.result === 'InProgress').length;
    const atLast = [...byId.values()].filter((ex) =>
      ex.some((e) => e.trigger === 'schedule' && Date.parse(e.dueAt ?? '') === lastDue),
    ).length;
    if ((open === 0 && atLast === ids.length) || Date.now() > deadline) break;
    log(
      `schedules: waiting for History (${open} runs in progress, ${atLast}/${ids.length} Solutions with the last due time)`,
    );
    await sleep(10_000);
    byId = await settled();
  }
  return byId;
}

/** Each due time's runs and reported skips over every Solution, and the totals. */
function tally(
  ids: readonly string[],
  byId: Map<string, Execution[]>,
  skips: Map<string, Skip[]>,
  { firstDue, lastDue, dues }: DueTimes,
) {
  const perDue: DueTally[] = dues.map((d) => ({
    dueAt: new Date(d).toISOString(),
    fired: 0,
    doubles: 0,
    skipped: 0,
    missedUnreported: 0,
    lateMs: [],
    endMs: [],
  }));
  let doubles = 0;
  let missing = 0;
  let skippedReported = 0;
  let failedRuns = 0;
  const skipReasons: Record<string, number> = {};
  for (const id of ids) {
    const ex = (byId.get(id) ?? []).filter((e) => e.trigger === 'schedule');
    const sk = skips.get(id) ?? [];
    for (const e of ex)
      if (
        e.result !== 'CompletedSuccessfully' &&
        Date.parse(e.dueAt ?? '') >= firstDue &&
        Date.parse(e.dueAt ?? '') <= lastDue
      )
        failedRuns++;
    dues.forEach((d, k) => {
      const at = perDue[k] as DueTally;
      const fired = ex.filter((e) => Date.parse(e.dueAt ?? '') === d);
      const skipped = sk.filter((s) => Date.parse(s.dueAt) === d);
      if (fired.length > 0) at.fired++;
      if (fired.length > 1) {
        at.doubles++;
        doubles++;
      }
      for (const f of fired) {
        at.lateMs.push(Date.parse(f.start) - d);
        if (f.stop) at.endMs.push(Date.parse(f.stop) - d);
      }
      if (skipped.length > 0) {
        at.skipped++;
        skippedReported++;
        for (const s of skipped) skipReasons[s.reason] = (skipReasons[s.reason] ?? 0) + 1;
      }
      if (fired.length === 0 && skipped.length === 0) {
        at.missedUnreported++;
        missing++;
      }
    });
  }
  return { perDue, doubles, missing, skippedReported, failedRuns, skipReasons };
}

/** What the Solutions' History and skips say about the due times, against the target's own count. */
async function outcome(
  sut: ServiceUnderTest,
  pgUrl: string,
  ids: readonly string[],
  byId: Map<string, Execution[]>,
  due: DueTimes,
) {
  const O = `/v1/orgs/${sut.orgId}`;
  // Skipped due times as reported, per Solution.
  const skips = new Map<string, Skip[]>();
  for (const id of ids)
    skips.set(id, (await api<Skip[]>(sut, 'GET', `${O}/solutions/${id}/history/skipped?limit=1000`)).body);
  const { perDue, doubles, missing, skippedReported, failedRuns, skipReasons } = tally(ids, byId, skips, due);
  // The target's own count: one row per run that wrote.
  const rowsPerSol = await pgRows<{ n: string }>(
    pgUrl,
    `SELECT count(*) AS n FROM sched_runs WHERE inserted_at >= to_timestamp($1 / 1000.0) AND inserted_at < to_timestamp($2 / 1000.0)`,
    [due.firstDue, due.lastDue + 60_000],
  );
  const late = perDue.flatMap((p) => p.lateMs);
  const ends = perDue.flatMap((p) => p.endMs);
  return {
    fired: perDue.reduce((n, p) => n + p.fired, 0),
    doubles,
    skippedReported,
    skipReasons,
    missedUnreported: missing,
    runsNotSuccessful: failedRuns,
    targetRowsInWindow: Number(rowsPerSol[0]?.n ?? 0),
    startAfterDueMs: { median: median(late), p99: quantile(late, 0.99), max: Math.max(0, ...late) },
    endAfterDueMs: { median: median(ends), p99: quantile(ends, 0.99), max: Math.max(0, ...ends) },
    perDueTime: perDue.map((p) => ({
      dueAt: p.dueAt,
      fired: p.fired,
      doubles: p.doubles,
      skipped: p.skipped,
      missedUnreported: p.missedUnreported,
      startAfterDueMsMedian: median(p.lateMs),
      startAfterDueMsMax: Math.max(0, ...p.lateMs),
      endAfterDueMsMax: Math.max(0, ...p.endMs),
    })),
  };
}

export async function scenarioSchedules(pgUrl: string, dir: string): Promise<Record<string, unknown>> {
  const h = await harness();
  const cluster = SCHED.replicas > 0 ? await startCluster(SCHED.replicas, { FERRY_LOG_LEVEL: 'error' }) : undefined;
  const sut = cluster ? clusterUnderTest(cluster) : await benchService();
  if (!cluster) await sut.start();
  const agents: Agent[] = [];
  const home = path.join(sut.dataDir, 'agents');
  const folder = path.join(dir, 'one');
  fs.mkdirSync(folder);
  fs.writeFileSync(path.join(folder, 'one.csv'), 'id\n1\n');
  fs.writeFileSync(
    path.join(folder, 'schema.json'),
    JSON.stringify({ entities: { 'one.csv': { fields: [{ name: 'id', type: 'integer' }] } } }),
  );
  await pgExec(
    pgUrl,
    'DROP TABLE IF EXISTS sched_runs; CREATE TABLE sched_runs (sol text NOT NULL, id integer, inserted_at timestamptz NOT NULL DEFAULT clock_timestamp())',
  );
  const loads: number[] = [];
  const loadTimer = setInterval(() => loads.push(loadavg()[0] ?? 0), 10_000);
  try {
    log(`schedules: installing ${SCHED.agents} Agent instances`);
    const installed: Array<{ agentId: string; instance: number }> = [];
    for (let i = 0; i < SCHED.agents; i++) installed.push(await installAgent(sut, home));
    agents.push(...(await Promise.all(installed.map((inst) => runAgent(sut, home, inst.instance, inst.agentId)))));
    const csvConn = await createConnection(sut, 'One row', CSV_CONNECTOR, { folder });
    const pgConn = await createConnection(sut, 'Runs table', POSTGRES_CONNECTOR, {
      connectionString: pgUrl,
      schemas: 'public',
      poolSize: '2',
    });
    log(`schedules: creating and preparing ${SCHED.solutions} Solutions`);
    const tPrep = performance.now();
    const ids = await scheduleSolutions(sut, agents, csvConn, pgConn);
    const prepMs = performance.now() - tPrep;
    const firstDue = Math.ceil((Date.now() + 20_000) / 60_000) * 60_000;
    const dues = Array.from({ length: SCHED.minutes }, (_, k) => firstDue + k * 60_000);
    const due: DueTimes = { firstDue, lastDue: dues.at(-1) as number, dues };
    log(
      `schedules: ${SCHED.solutions} Solutions ready in ${Math.round(prepMs / 1000)} s; counting due times ${new Date(firstDue).toISOString()} … ${new Date(due.lastDue).toISOString()}`,
    );
    const events = await restartInTheMiddle(sut, cluster, agents, due);
    const byId = await settledHistory(sut, ids, due);
    const seen = await outcome(sut, pgUrl, ids, byId, due);
    const result = {
      solutions: SCHED.solutions,
      agents: SCHED.agents,
      replicas: SCHED.replicas,
      minutes: SCHED.minutes,
      prepareSeconds: Math.round(prepMs / 1000),
      dueTimesExpected: SCHED.solutions * SCHED.minutes,
      ...seen,
      events,
      load1: { min: Math.min(...loads), max: Math.max(...loads) },
      goal: { everyDueTimeOnce: seen.doubles === 0 && seen.missedUnreported === 0 && seen.skippedReported === 0 },
    };
    log(
      `schedules: ${result.fired}/${result.dueTimesExpected} due times fired, ${seen.doubles} doubles, ${seen.skippedReported} skipped (reported), ${seen.missedUnreported} missing without a report`,
    );
    return result;
  } finally {
    clearInterval(loadTimer);
    await Promise.all(agents.map((a) => a.proc.stop().catch(() => undefined)));
    killAgents();
    h.killAll();
    await (cluster ? cluster.dispose() : sut.dispose());
    await pgExec(pgUrl, 'DROP TABLE IF EXISTS sched_runs').catch(() => undefined);
  }
}
