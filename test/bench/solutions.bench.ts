/**
 * Solutions through the API, end to end — a real Service, a real Agent process, Connections with
 * encrypted properties, prepare, start and History — against anchors measured in the same run on
 * the same machine and data (docs/benchmarks.md "Solutions"):
 *
 *   rs         a Replication Solution, SQLite → PostgreSQL, BENCH_ROWS rows (`updated_at` is its
 *              net-change stamp), into a database without the table; timed from POST …/start
 *              until the poll of History sees the execution's end. Anchors: the Connector-level
 *              transfer() of the same rows into the same (truncated) table, in a child process as
 *              replicate.bench.ts does, and psql \copy of the same rows from CSV; beside them
 *              replicate() in a child process (what the Agent's run does, without the Agent),
 *              so that the control plane's cost shows apart from the replication engine's. Then
              the same Replication without checkForBulk (SPEC.md's default, what public clients
              send): rsDefaultVsRs, goal ≥ 0.25.
 *   is         an Integration Solution, one Map: CSV (the same rows) → PostgreSQL, Query → Create
 *              with 10 plain field copies (Q.id … Q.note), timed the same way. Anchors: psql
 *              \copy of the same CSV, and the engine in a child process (openRun + runMap, what
 *              `ferry map run` does), so that the control plane's cost shows.
 *   failing    the same Map into a table whose CHECK refuses 1 record in 10; its errors through
 *              GET …/history/{id}/errors (Total-Count, a page at a deep offset, timed).
 *   latency    POST …/start → the first row in the target (a clock_timestamp() default column
 *              against the client's clock: one machine), BENCH_STARTS starts of a Map over a
 *              10-row CSV; also the execution's own start and end.
 *   schedules  (BENCH_SCHEDULES=1, or BENCH_SCENARIOS=schedules) BENCH_SCHEDULE_SOLUTIONS
 *              Solutions (default 1000) on BENCH_SCHEDULE_AGENTS Agent processes (10, instances of
 *              one home), every minute for BENCH_SCHEDULE_MINUTES minutes (10), with a Service
 *              restart and an Agent restart in the middle: every due time fired exactly once?
 *
 * Each scenario is a file of test/bench/solutions/ (rs.ts; is.ts, which runs failing too;
 * latency.ts; schedules.ts) on the helpers beside them; this file runs them and the anchors' child
 * processes (anchors.ts).
 *
 *   npx tsx test/bench/solutions.bench.ts      → JSON on stdout, progress on stderr
 *
 * BENCH_ROWS (default 1000000), BENCH_ROUNDS (3: rounds of anchor(s) then the Solution, the
 * median reported), BENCH_FAILING_ROWS and BENCH_FAILING_ROUNDS (default the same), BENCH_STARTS
 * (20), BENCH_SCENARIOS (default rs,is,failing,latency),
 * BENCH_NODE_FLAGS (default `--max-semi-space-size=128`, the flag docs/connectors.md recommends
 * for the Agent: on the Node command line of the Agent, which its worker inherits, and of the
 * anchors' child processes),
 * BENCH_AGENT_CPU_PROF=DIR (the Agent worker writes a --cpu-prof profile there when it stops),
 * BENCH_RS_SOURCE_INDEX=1 (an index on julianday(updated_at) at the RS source: its first copy
 * reads in stamp order without a sort),
 * FERRY_BENCH_DATABASE_URL (else FERRY_TEST_DATABASE_URL, else
 * postgres://postgres@127.0.0.1:5432/test): a server where it may create and drop a database.
 * The Service runs in this process (test/e2e/agent/harness.ts, SQLite store, production settings
 * but the rate limits lifted); the Agents are real `ferry agent run` processes with their
 * production settings. Needs `psql` on the PATH.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServiceUnderTest } from '../e2e/agent/harness.js';
import { killAgents, procRssMiB } from './proc.js';
import { type Agent, installAgent, runAgent } from './solutions/agents.js';
import { child } from './solutions/anchors.js';
import type { Ctx } from './solutions/context.js';
import { generate } from './solutions/data.js';
import { scenarioIs } from './solutions/is.js';
import { scenarioLatency } from './solutions/latency.js';
import { watchPgCpu } from './solutions/measure.js';
import { pgExec } from './solutions/postgres.js';
import { scenarioRs } from './solutions/rs.js';
import { scenarioSchedules } from './solutions/schedules.js';
import { benchService, createConnection, harness } from './solutions/service.js';
import {
  ADMIN_URL,
  BATCH,
  CSV_CONNECTOR,
  loadavg,
  log,
  NODE_FLAGS,
  PG_COLUMNS,
  POSTGRES_CONNECTOR,
  r3,
  ROUNDS,
  ROWS,
  RS_SOURCE_INDEX,
  SCENARIOS,
} from './solutions/settings.js';

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-solutions-bench-'));
  const dbName = `ferry_sol_bench_${randomBytes(4).toString('hex')}`;
  const url = new URL(ADMIN_URL);
  url.pathname = `/${dbName}`;
  const pgUrl = url.toString();
  const out: Record<string, unknown> = {
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadAtStart: loadavg() },
    rows: ROWS,
    rounds: ROUNDS,
    batch: BATCH,
    nodeFlags: NODE_FLAGS.join(' '),
    ...(RS_SOURCE_INDEX ? { rsSourceIndex: true } : {}),
  };
  const loads: number[] = [];
  const loadTimer = setInterval(() => loads.push(loadavg()[0] ?? 0), 10_000);
  await pgExec(ADMIN_URL, `CREATE DATABASE ${dbName}`);
  const pgCpu = watchPgCpu(dbName);
  const h = await harness();
  let sut: ServiceUnderTest | undefined;
  let agent: Agent | undefined;
  try {
    const main4 = ['rs', 'is', 'failing', 'latency'].some((s) => SCENARIOS.has(s));
    if (main4) {
      log(`generating ${ROWS} rows in ${dir}`);
      const data = generate(dir);
      // The targets exist before the Connection's metadata is first loaded (prepare reads it from the cache).
      // is_fail: 1 record in 10 (id a multiple of 10) breaks its CHECK, so the target refuses it.
      await pgExec(
        pgUrl,
        `CREATE TABLE is_rows (${PG_COLUMNS}); CREATE TABLE is_fail (${PG_COLUMNS}, CHECK (id % 10 <> 0));
         CREATE TABLE lat_rows (id integer, inserted_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
      );
      sut = await benchService();
      await sut.start();
      const inst = await installAgent(sut, path.join(sut.dataDir, 'agents'));
      agent = await runAgent(sut, path.join(sut.dataDir, 'agents'), inst.instance, inst.agentId);
      log(`Service at ${sut.url}, Agent worker pid ${agent.workerPid}`);
      const ctx: Ctx = {
        sut,
        agent,
        data,
        pgUrl,
        csvConn: await createConnection(sut, 'Rows CSV', CSV_CONNECTOR, { folder: data.csvFolder }),
        pgConn: await createConnection(sut, 'Bench DB', POSTGRES_CONNECTOR, {
          connectionString: pgUrl,
          schemas: 'public',
        }),
      };
      if (SCENARIOS.has('rs')) out['rs'] = await scenarioRs(ctx);
      if (SCENARIOS.has('is')) out['is'] = await scenarioIs(ctx, false);
      if (SCENARIOS.has('failing')) {
        const f = await scenarioIs(ctx, true);
        const clean = (out['is'] as { medians?: { isRowsPerSec?: number } } | undefined)?.medians?.isRowsPerSec;
        const failingRate = (f['medians'] as { isRowsPerSec: number }).isRowsPerSec;
        if (clean)
          f['goals'] = { vsCleanRun: { goal: 0.5, value: r3(failingRate / clean), met: failingRate / clean >= 0.5 } };
        out['failing'] = f;
      }
      if (SCENARIOS.has('latency')) out['latency'] = await scenarioLatency(ctx);
      out['agentRssAtEndMiB'] = procRssMiB(agent.workerPid, 'VmRSS');
      // A graceful stop, so that a --cpu-prof profile is written.
      await agent.proc.stop();
      agent = undefined;
      killAgents();
      await sut.dispose();
      sut = undefined;
    }
    if (SCENARIOS.has('schedules')) out['schedules'] = await scenarioSchedules(pgUrl, dir);
  } finally {
    clearInterval(loadTimer);
    pgCpu.close();
    if (agent) await agent.proc.stop().catch(() => undefined);
    killAgents();
    h.killAll();
    await sut?.dispose().catch(() => undefined);
    await pgExec(ADMIN_URL, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((err: unknown) =>
      log(`could not drop ${dbName}: ${String(err)}`),
    );
    fs.rmSync(dir, { recursive: true, force: true });
  }
  out['load1'] = {
    min: Math.min(...loads, loadavg()[0] ?? 0),
    max: Math.max(...loads, loadavg()[0] ?? 0),
    atEnd: loadavg(),
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

const childIndex = process.argv.indexOf('--child');
if (childIndex >= 0) await child(process.argv[childIndex + 1] ?? '');
else await main();
