/**
 * Exactly once with Service replicas restarting (docs/deploy.md, docs/reliability.md): three
 * replicas as real processes on one PostgreSQL behind HAProxy with the shipped configuration, real
 * Agent processes (`ferry agent run`) installed with the load balancer's URL, and copies of a CSV
 * file into PostgreSQL during which replicas die. The Agents write straight into the target; what
 * crosses the replicas is the start, the channel, the progress and end reports and History.
 *
 *   world (once)   3 replicas + HAProxy ─ FERRY_BENCH_AGENTS Agents ─ CSV file, reference table
 *        │
 *   trial 0        no fault: the baseline of a copy's time
 *   trial n        a fresh table per Agent (with a primary key, or without one: alternating by
 *        │         trial and Agent), a prepared Solution per Agent, started through HAProxy
 *        │         at a seeded share of the first Agent's rows, one fault, the kinds in turn:
 *        │           holder-kill   kill -9 of the replica holding the first Agent's channel
 *        │           other-kill    kill -9 of a replica not holding it
 *        │           holder-drain  SIGTERM of that holder (a drain: a rolling restart's step)
 *        │           two-kill      kill -9 of the holder and of one more replica at once
 *        │         then what was struck is started again and back in HAProxy's rotation; a run
 *        │         that ended FatalError is started again after that (as the chaos trials do)
 *        ▼         every Agent's outbox delivered ──▶ History read
 *   checks         each table against the source in SQL: ids lost, rows doubled, ids the source
 *                  lacks, md5; History: Σ recordsProcessed against what the table holds, no run
 *                  left InProgress; how long after the fault each Agent's channel was held by a
 *                  live replica again; the copy's time against the baseline
 *
 *   FERRY_TEST_DATABASE_URL=postgres://… node --import tsx test/bench/replicas-faults.bench.ts
 *
 * Needs PostgreSQL (FERRY_TEST_DATABASE_URL: a server where it may create and drop databases) and
 * HAProxy. FERRY_BENCH_ROWS (default 200,000), FERRY_BENCH_TRIALS (6, after trial 0),
 * FERRY_BENCH_AGENTS (2), FERRY_BENCH_BATCH (rows per write, 1,000), FERRY_BENCH_WRITE_DELAY_MS
 * (a statement trigger on each target table waits this long per write, so that a copy outlasts a
 * reconnect; 20), FERRY_BENCH_SEED (replays the moments and the choice of the other replica; which
 * replica holds a channel is HAProxy's), FERRY_BENCH_LOG_LEVEL (the replicas', default info),
 * FERRY_BENCH_LOG_DIR (where the processes' logs are written at the end). The JSON goes to stdout,
 * progress to stderr; exits 1 when a row is lost, doubled or changed, a run has record errors, does
 * not complete or stays InProgress, History counts less than the target holds, or an Agent did not
 * connect again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createTestDatabase } from '../helpers/stores.js';
import { killAll, until, type Proc, type ServiceUnderTest } from '../e2e/agent/harness.js';
import { copyMap, createConnection, createSolution, CSV, POSTGRES } from '../e2e/solutions/harness.js';
import {
  firstRecordError,
  historyOf,
  runAgents,
  solutionPath,
  untilDelivered,
  untilReady,
  type AgentUnderTest,
  type Run,
} from '../e2e/solutions/faults-helpers.js';
import { chaosSeed, seededRandom } from '../e2e/chaos/faults.js';
import { compare, figures, writeCsvSource, writeReference, type Comparison } from '../e2e/chaos/scenarios.js';
import { MAX_RESTARTS } from '../e2e/chaos/trials.js';
import { clusterUnderTest, HAS_HAPROXY, startCluster, type Cluster } from '../e2e/replicas/cluster.js';

const ENV = process.env;
const ROWS = Number(ENV['FERRY_BENCH_ROWS'] ?? 200_000);
const TRIALS = Number(ENV['FERRY_BENCH_TRIALS'] ?? 6);
const AGENTS = Number(ENV['FERRY_BENCH_AGENTS'] ?? 2);
const BATCH = Number(ENV['FERRY_BENCH_BATCH'] ?? 1_000);
const WRITE_DELAY_MS = Number(ENV['FERRY_BENCH_WRITE_DELAY_MS'] ?? 20);
const LOG_LEVEL = ENV['FERRY_BENCH_LOG_LEVEL'] ?? 'info';
/** The moment of a fault, as a share of the first Agent's rows in its table: earliest, latest. */
const MOMENTS = [0.02, 0.95] as const;
const TRIAL_TIMEOUT_MS = 15 * 60_000;
/** How long after a fault an Agent may take to hold a channel on a live replica before it counts as not back. */
const RECONNECT_LIMIT_MS = 120_000;
const REPLICAS = 3;

const FAULTS = ['holder-kill', 'other-kill', 'holder-drain', 'two-kill'] as const;
type Fault = (typeof FAULTS)[number];
const FATAL = new Set(['FatalError', 'RecordErrorsAndFatalErrors']);

const log = (line: string): void =>
  void process.stderr.write(`[replicas-faults ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The processes, the target database and the Connections every trial shares. */
interface World {
  cluster: Cluster;
  lb: ServiceUnderTest;
  agents: AgentUnderTest[];
  target: { url: string; drop: () => Promise<void> };
  /** The target database: the reference table `source`, the trials' tables. */
  client: pg.Client;
  /** The cluster's database: agent_channels. */
  bus: pg.Client;
  csvId: string;
  pgId: string;
  reference: Awaited<ReturnType<typeof figures>>;
  /** The output of replica processes that were killed or stopped, kept past their restart. */
  gone: Array<{ name: string; text: string }>;
}

/** A seeded fault of a trial: its kind, its moment, and which of the other replicas it strikes. */
interface Plan {
  kind: Fault;
  share: number;
  otherPick: number;
}

interface FaultRecord {
  kind: Fault;
  /** When it struck, in ms after the trial's first start, and how many rows the first Agent's table held. */
  atMs: number;
  atRows: number;
  /** The replicas struck (1-based), and the Agents whose channel one of them held. */
  struck: number[];
  channelsStruck: number[];
  /** Per Agent: ms from the fault until agent_channels named a live replica (null: not within the limit). */
  reconnectMs: Array<number | null>;
  /** ms from the fault until the struck replicas were back in HAProxy's rotation. */
  backInRotationMs: number;
  /** The drained replica's exit code (holder-drain). */
  drainExit?: number | string;
}

/** One Agent's copy in a trial: the Solution, its table, and how its runs were followed. */
interface Copy {
  agent: number;
  solutionId: string;
  table: string;
  keyed: boolean;
  runIds: string[];
  restarts: number;
  gaveUp?: string;
  startedAt: number;
  endedAt?: number;
  done: boolean;
  finished: Promise<void>;
}

interface CopyOutcome extends Comparison {
  agent: number;
  table: string;
  keyed: boolean;
  runs: Array<Pick<Run, 'result' | 'recordsProcessed' | 'recordsFailed' | 'details'> & { firstError?: string }>;
  restarts: number;
  gaveUp?: string;
  /** Σ recordsProcessed and Σ recordsFailed over the runs. */
  historyProcessed: number;
  historyFailed: number;
  /** Runs History still shows InProgress once every outbox was delivered. */
  inProgress: number;
  /** ms from the first start to the last run's end as seen through the API, and as History times it. */
  totalMs: number | null;
  historyMs: number | null;
}

interface TrialOutcome {
  trial: number;
  fault?: FaultRecord;
  faultSkipped?: string;
  copies: CopyOutcome[];
}

// ── the world ──────────────────────────────────────────────────────────────────

async function startWorld(): Promise<World> {
  const t0 = Date.now();
  const cluster = await startCluster(REPLICAS, { FERRY_LOG_LEVEL: LOG_LEVEL });
  const undo: Array<() => Promise<unknown>> = [() => cluster.dispose()];
  try {
    log(`${REPLICAS} replicas and HAProxy up in ${Date.now() - t0} ms (${cluster.url})`);
    const lb = clusterUnderTest(cluster);
    const target = await createTestDatabase();
    undo.push(() => target.drop());
    const client = new pg.Client({ connectionString: target.url });
    await client.connect();
    undo.push(() => client.end());
    client.on('error', (err) => log(`target client: ${err.message}`));
    const bus = new pg.Client({ connectionString: cluster.databaseUrl });
    await bus.connect();
    undo.push(() => bus.end());
    bus.on('error', (err) => log(`cluster database client: ${err.message}`));
    const folder = path.join(cluster.dir, 'csv');
    writeCsvSource(folder, ROWS);
    await writeReference(client, ROWS);
    const reference = await figures(client, 'source', 'id', ROWS);
    await client.query(`CREATE FUNCTION slow_write() RETURNS trigger LANGUAGE plpgsql
      AS $$ BEGIN PERFORM pg_sleep(${WRITE_DELAY_MS / 1000}); RETURN NULL; END $$`);
    await createTables(client);
    log(`source of ${ROWS} rows written (md5 ${reference.checksum})`);
    const { agents } = await runAgents(lb, AGENTS);
    const csvId = await createConnection(lb, 'Bench CSV', CSV, { folder });
    const pgId = await createConnection(lb, 'Bench target', POSTGRES, {
      connectionString: target.url,
      schemas: 'public',
    });
    log(`${AGENTS} Agents running through HAProxy, ${Math.round((Date.now() - t0) / 1000)} s after the start`);
    return { cluster, lb, agents, target, client, bus, csvId, pgId, reference, gone: [] };
  } catch (err) {
    killAll();
    for (const u of undo.reverse()) await u().catch(() => undefined);
    throw err;
  }
}

async function disposeWorld(w: World): Promise<void> {
  killAll();
  await w.client.end().catch(() => undefined);
  await w.bus.end().catch(() => undefined);
  await w.cluster.dispose().catch((err: unknown) => log(`cluster dispose: ${(err as Error).message}`));
  await w.target.drop().catch((err: unknown) => log(`target drop: ${(err as Error).message}`));
}

/** Every process's output and the Agents' log files, into `dir`. */
function saveLogs(w: World, agentProcs: Proc[], dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  for (const g of w.gone) fs.writeFileSync(path.join(dir, `${g.name}.log`), g.text);
  w.cluster.replicas.forEach((r, i) => {
    if (r.proc) fs.writeFileSync(path.join(dir, `replica-${i + 1}-last.log`), r.proc.output());
  });
  agentProcs.forEach((p, k) => fs.writeFileSync(path.join(dir, `agent-${k + 1}-proc.log`), p.output()));
  w.agents.forEach((a, k) => {
    const logs = path.join(a.dir, 'logs');
    if (fs.existsSync(logs)) fs.cpSync(logs, path.join(dir, `agent-${k + 1}-files`), { recursive: true });
  });
}

// ── channels and faults ────────────────────────────────────────────────────────

/** The ID a running replica printed in its banner. */
function replicaIdOf(c: Cluster, i: number): string | undefined {
  return /Replica: (\S+)/.exec(c.replicas[i]?.proc?.output() ?? '')?.[1];
}

/** The index of the running replica agent_channels names for the Agent, if one does. */
async function liveHolder(w: World, agentId: string): Promise<number | undefined> {
  const { rows } = await w.bus.query<{ replica_id: string }>(
    'SELECT replica_id FROM agent_channels WHERE agent_id = $1',
    [agentId],
  );
  const id = rows[0]?.replica_id;
  if (id === undefined) return undefined;
  const i = w.cluster.replicas.findIndex((_, k) => replicaIdOf(w.cluster, k) === id);
  return i < 0 ? undefined : i;
}

/** ms from `since` until the Agent's channel is held by a running replica (the struck ones no longer count as running). */
async function reconnected(w: World, agentId: string, since: number): Promise<number | null> {
  for (;;) {
    const holder = await liveHolder(w, agentId).catch(() => undefined);
    if (holder !== undefined) return Date.now() - since;
    if (Date.now() - since > RECONNECT_LIMIT_MS) return null;
    await sleep(100);
  }
}

/** Strikes the fault, waits until the struck replicas are back in rotation and every Agent holds a channel. */
async function strike(w: World, plan: Plan): Promise<Omit<FaultRecord, 'atMs' | 'atRows'>> {
  const { cluster } = w;
  const holders = await Promise.all(
    w.agents.map((a) => until(`agent ${a.instance}'s channel on a live replica`, () => liveHolder(w, a.agentId))),
  );
  const holder = holders[0] as number;
  const others = [...Array(REPLICAS).keys()].filter((i) => i !== holder);
  const other = others[Math.floor(plan.otherPick * others.length)] as number;
  const struck = plan.kind === 'other-kill' ? [other] : plan.kind === 'two-kill' ? [holder, other] : [holder];
  const procs = struck.map((i) => cluster.replicas[i]?.proc);
  const t0 = Date.now();
  // kill and stop take the replica out of `replicas[i].proc` at once: from here it no longer counts as live.
  const action: Promise<number | string | undefined> =
    plan.kind === 'holder-drain'
      ? cluster.stop(holder)
      : Promise.all(struck.map((i) => cluster.kill(i))).then(() => undefined);
  const back = Promise.all(w.agents.map((a) => reconnected(w, a.agentId, t0)));
  const drainExit = await action;
  procs.forEach((p, k) =>
    w.gone.push({ name: `replica-${(struck[k] as number) + 1}-until-${plan.kind}-${t0}`, text: p?.output() ?? '' }),
  );
  for (const i of struck) await cluster.start(i);
  for (const i of struck) await cluster.inRotation(i);
  const backInRotationMs = Date.now() - t0;
  const reconnectMs = await back;
  return {
    kind: plan.kind,
    struck: struck.map((i) => i + 1),
    channelsStruck: holders.flatMap((h, k) => (struck.includes(h) ? [k + 1] : [])),
    reconnectMs,
    backInRotationMs,
    ...(drainExit === undefined ? {} : { drainExit }),
  };
}

// ── runs ───────────────────────────────────────────────────────────────────────

/** The run once it has ended in History (requests that fail while a replica goes are tried again). */
async function ended(w: World, solutionId: string, runId: string, deadline: number): Promise<Run> {
  for (;;) {
    try {
      const run = (await historyOf(w.lb, solutionId)).find((r) => r.processExecutionId === runId);
      if (run && run.result !== 'InProgress') return run;
    } catch {
      // The replica HAProxy picked went away under the request.
    }
    if (Date.now() > deadline) throw new Error(`run ${runId} has not ended in History`);
    await sleep(250);
  }
}

/** Starts the Solution, trying again while it is refused or a replica goes; the run started, or the one in progress. */
async function startAccepted(w: World, solutionId: string, deadline: number): Promise<string> {
  let last = '';
  for (;;) {
    try {
      const res = await w.lb.request<{ runId: string | null }>('POST', `${solutionPath(w.lb, solutionId)}/start`);
      if (res.status === 200 && res.body.runId) return res.body.runId;
      last = `${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`the Solution could not be started: ${last}`);
    await sleep(500);
  }
}

/** Follows a copy's runs until one ends other than FatalError, starting it again (after `calm`) when one did. */
function drive(w: World, c: Copy, deadline: number, calm: () => Promise<void>): void {
  c.finished = (async () => {
    try {
      let runId = await startAccepted(w, c.solutionId, deadline);
      for (;;) {
        c.runIds.push(runId);
        const run = await ended(w, c.solutionId, runId, deadline);
        log(
          `  agent ${c.agent}: run ${runId.slice(0, 8)} ${run.result} processed ${run.recordsProcessed} failed ${run.recordsFailed}${run.details ? ` — ${run.details.slice(0, 200)}` : ''}`,
        );
        if (!FATAL.has(run.result)) break;
        if (c.restarts >= MAX_RESTARTS) {
          c.gaveUp = `still FatalError after ${MAX_RESTARTS} restarts`;
          break;
        }
        await calm();
        c.restarts += 1;
        runId = await startAccepted(w, c.solutionId, deadline);
      }
      c.endedAt = Date.now();
    } catch (err) {
      c.gaveUp = (err as Error).message;
      log(`  agent ${c.agent}: ${c.gaveUp}`);
    } finally {
      c.done = true;
    }
  })();
}

async function rowsOf(w: World, table: string): Promise<number> {
  const { rows } = await w.client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
  return Number(rows[0]?.n);
}

/** A copy's table against the source, and its runs as History has them. */
async function outcomeOf(w: World, c: Copy): Promise<CopyOutcome> {
  const history = (await historyOf(w.lb, c.solutionId)).sort((a, b) => a.start.localeCompare(b.start));
  const runs: CopyOutcome['runs'] = [];
  for (const r of history) {
    const firstError = r.recordsFailed > 0 ? await firstRecordError(w.lb, c.solutionId, r.id) : undefined;
    runs.push({
      result: r.result,
      recordsProcessed: r.recordsProcessed,
      recordsFailed: r.recordsFailed,
      details: r.details,
      ...(firstError ? { firstError } : {}),
    });
  }
  const first = history[0];
  const last = history.at(-1);
  return {
    agent: c.agent,
    table: c.table,
    keyed: c.keyed,
    ...compare(await figures(w.client, c.table, 'id', ROWS), w.reference),
    runs,
    restarts: c.restarts,
    ...(c.gaveUp ? { gaveUp: c.gaveUp } : {}),
    historyProcessed: history.reduce((a, r) => a + r.recordsProcessed, 0),
    historyFailed: history.reduce((a, r) => a + r.recordsFailed, 0),
    inProgress: history.filter((r) => r.result === 'InProgress').length,
    totalMs: c.endedAt === undefined ? null : c.endedAt - c.startedAt,
    historyMs: first && last?.stop ? Date.parse(last.stop) - Date.parse(first.start) : null,
  };
}

// ── a trial ────────────────────────────────────────────────────────────────────

/** Agent k's table of a trial (k from 1): keyed when trial + k is odd, so that both kinds meet every fault. */
function tableOf(trial: number, k: number): { table: string; keyed: boolean } {
  return { table: `t${trial}_a${k}`, keyed: (trial + k) % 2 === 1 };
}

/**
 * Every trial's tables, made before the target's Connection: the Service keeps the entities it read
 * from a Connection, so prepare would not find a table made after that.
 */
async function createTables(client: pg.Client): Promise<void> {
  for (let trial = 0; trial <= TRIALS; trial++) {
    for (let k = 1; k <= AGENTS; k++) {
      const { table, keyed } = tableOf(trial, k);
      await client.query(`CREATE TABLE ${table} (id integer ${keyed ? 'PRIMARY KEY' : 'NOT NULL'}, name text, amount integer);
        CREATE TRIGGER slow_write AFTER INSERT ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION slow_write()`);
    }
  }
}

/** The prepared Solutions of a trial, one per Agent, each into its own table. */
async function createCopies(w: World, trial: number): Promise<Copy[]> {
  const copies: Copy[] = [];
  for (const [k, a] of w.agents.entries()) {
    const { table, keyed } = tableOf(trial, k + 1);
    const map = copyMap({
      n: 1,
      csvId: w.csvId,
      entity: 'rows',
      targetId: w.pgId,
      table,
      fields: { amount: 'Q.amount' },
      batchSize: BATCH,
    });
    const sol = await createSolution(w.lb, a.agentId, `Trial ${trial} agent ${k + 1}`, [map], { prepare: true });
    copies.push({
      agent: k + 1,
      solutionId: sol.id,
      table,
      keyed,
      runIds: [],
      restarts: 0,
      startedAt: 0,
      done: false,
      finished: Promise.resolve(),
    });
  }
  return copies;
}

async function runTrial(w: World, trial: number, plan: Plan | undefined): Promise<TrialOutcome> {
  for (const a of w.agents) {
    await untilReady(w.lb, a.agentId);
    await until(`agent ${a.instance}'s channel on a live replica`, () => liveHolder(w, a.agentId), 60_000);
  }
  const copies = await createCopies(w, trial);
  log(
    `trial ${trial}: ${copies.map((c) => `${c.table} ${c.keyed ? 'keyed' : 'keyless'}`).join(', ')}; ${plan ? `${plan.kind} at ${Math.round(plan.share * 100)}% of agent 1's rows` : 'no fault'}`,
  );
  const deadline = Date.now() + TRIAL_TIMEOUT_MS;
  let striking: Promise<unknown> = Promise.resolve();
  const calm = async (): Promise<void> => void (await striking.catch(() => undefined));
  const t0 = Date.now();
  for (const c of copies) {
    c.startedAt = Date.now();
    drive(w, c, deadline, calm);
  }
  const out: TrialOutcome = { trial, copies: [] };
  if (plan) {
    const first = copies[0] as Copy;
    const atRows = await until(
      `${Math.round(plan.share * 100)}% of agent 1's rows`,
      async () => {
        if (first.done) return -1;
        const n = await rowsOf(w, first.table);
        return n >= plan.share * ROWS ? n : undefined;
      },
      Math.max(1_000, deadline - Date.now()),
    );
    if (atRows < 0 || atRows >= ROWS) {
      out.faultSkipped = `agent 1's copy had ${atRows < 0 ? 'ended' : 'written every row'} before the moment`;
      log(`  ${plan.kind}: not struck (${out.faultSkipped})`);
    } else {
      const atMs = Date.now() - t0;
      const struck = strike(w, plan);
      striking = struck;
      const f = await struck;
      out.fault = { ...f, atMs, atRows };
      log(
        `  ${plan.kind} at ${atMs} ms, ${atRows} rows: replicas ${f.struck.join('+')} (channels of agents ${f.channelsStruck.join(', ') || 'none'}); channels on live replicas after ${f.reconnectMs.map((m) => (m === null ? 'NEVER' : `${m} ms`)).join(', ')}; back in rotation after ${f.backInRotationMs} ms`,
      );
    }
  }
  await Promise.all(copies.map((c) => c.finished));
  for (const a of w.agents)
    await untilDelivered(a.dir, 120_000).catch((err: unknown) => log(`  ${(err as Error).message}`));
  for (const c of copies) {
    const o = await outcomeOf(w, c);
    out.copies.push(o);
    log(
      `  agent ${o.agent} ${o.table}: rows ${o.target.rows} lost ${o.lost} doubled ${o.doubled} foreign ${o.foreign} md5 ${o.checksumEqual ? 'equal' : 'DIFFERS'}; runs ${o.runs.map((r) => r.result).join(' → ')}; History Σ processed ${o.historyProcessed} failed ${o.historyFailed}${o.inProgress ? `; ${o.inProgress} InProgress` : ''}; ${o.totalMs ?? '?'} ms`,
    );
  }
  return out;
}

// ── figures ────────────────────────────────────────────────────────────────────

/** What falls short of exactly once in a trial. */
function problemsOf(t: TrialOutcome): string[] {
  const at = `trial ${t.trial} (${t.fault?.kind ?? 'no fault'})`;
  const out: string[] = [];
  t.fault?.reconnectMs.forEach((m, k) => {
    if (m === null) out.push(`${at}: agent ${k + 1} held no channel on a live replica ${RECONNECT_LIMIT_MS} ms after`);
  });
  for (const c of t.copies) {
    const of = `${at}, agent ${c.agent}, ${c.table} (${c.keyed ? 'keyed' : 'keyless'})`;
    if (c.lost) out.push(`${of}: ${c.lost} source ids missing`);
    if (c.doubled) out.push(`${of}: ${c.doubled} rows written twice`);
    if (c.foreign) out.push(`${of}: ${c.foreign} ids the source does not have`);
    if (!c.checksumEqual && !c.lost && !c.doubled && !c.foreign) out.push(`${of}: values differ from the source (md5)`);
    for (const r of c.runs)
      if (r.recordsFailed > 0 || r.result === 'CompletedWithErrors')
        out.push(`${of}: a run ended ${r.result} with ${r.recordsFailed} record errors (${r.firstError ?? ''})`);
    if (c.inProgress) out.push(`${of}: ${c.inProgress} runs still InProgress in History`);
    const written = c.historyProcessed - c.historyFailed;
    const held = c.keyed ? c.target.keys : c.target.rows;
    if (written < held) out.push(`${of}: History counts ${written} records written, the table holds ${held}`);
    if (!c.keyed && written > held)
      out.push(`${of}: History counts ${written} records written, more than the ${held} the table holds`);
    const last = c.runs.at(-1);
    if (c.gaveUp || !last || last.result !== 'CompletedSuccessfully')
      out.push(
        `${of}: did not complete (${c.runs.map((r) => r.result).join(' → ') || 'no run'}${c.gaveUp ? `; ${c.gaveUp}` : ''})`,
      );
  }
  return out;
}

const median = (xs: number[]): number | null => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)] ?? null;
};

/** Per fault kind: trials, rows lost and doubled, restarts, History, reconnects and time against the baseline. */
function summarize(trials: readonly TrialOutcome[], baseline: Record<'keyed' | 'keyless', number | null>) {
  return FAULTS.map((kind) => {
    const mine = trials.filter((t) => t.fault?.kind === kind);
    const copies = mine.flatMap((t) => t.copies);
    const reconnects = mine.flatMap((t) =>
      t.fault ? t.fault.channelsStruck.map((k) => t.fault?.reconnectMs[k - 1] ?? null) : [],
    );
    const ratios = copies.flatMap((c) => {
      const base = baseline[c.keyed ? 'keyed' : 'keyless'];
      return c.totalMs !== null && base ? [c.totalMs / base] : [];
    });
    return {
      fault: kind,
      trials: mine.length,
      copies: copies.length,
      rowsLost: copies.reduce((a, c) => a + c.lost, 0),
      rowsDoubled: copies.reduce((a, c) => a + c.doubled, 0),
      foreign: copies.reduce((a, c) => a + c.foreign, 0),
      checksumDiffers: copies.filter((c) => !c.checksumEqual).length,
      restarts: copies.reduce((a, c) => a + c.restarts, 0),
      runsWithRecordErrors: copies.reduce((a, c) => a + c.runs.filter((r) => r.recordsFailed > 0).length, 0),
      runsLeftInProgress: copies.reduce((a, c) => a + c.inProgress, 0),
      copiesWhereHistoryProcessedIsNotRows: copies.filter((c) => c.historyProcessed !== ROWS).length,
      historyOverTarget: copies.reduce(
        (a, c) => a + Math.max(0, c.historyProcessed - c.historyFailed - (c.keyed ? c.target.keys : c.target.rows)),
        0,
      ),
      historyUnderTarget: copies.reduce(
        (a, c) => a + Math.max(0, (c.keyed ? c.target.keys : c.target.rows) - (c.historyProcessed - c.historyFailed)),
        0,
      ),
      reconnectMsOfStruckChannels: reconnects,
      backInRotationMs: mine.map((t) => t.fault?.backInRotationMs ?? null),
      timeVsBaselineMedian: ratios.length ? Math.round((median(ratios) as number) * 100) / 100 : null,
    };
  });
}

// ── main ───────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  if (!ENV['FERRY_TEST_DATABASE_URL'] || !HAS_HAPROXY)
    throw new Error(
      'replicas-faults.bench needs FERRY_TEST_DATABASE_URL (PostgreSQL) and HAProxy (apt-get install haproxy)',
    );
  const seed = chaosSeed({ FERRY_CHAOS_SEED: ENV['FERRY_BENCH_SEED'] });
  const rnd = seededRandom(seed);
  log(
    `seed ${seed} (replay: FERRY_BENCH_SEED=${seed}); ${ROWS} rows, ${TRIALS} trials after the baseline, ${AGENTS} Agents, batches of ${BATCH}, ${WRITE_DELAY_MS} ms a write`,
  );
  const plans: Plan[] = Array.from({ length: TRIALS }, (_, i) => ({
    kind: FAULTS[i % FAULTS.length] as Fault,
    share: rnd.between(MOMENTS[0], MOMENTS[1]),
    otherPick: rnd.next(),
  }));
  const t0 = Date.now();
  const loads: number[] = [];
  const w = await startWorld();
  const agentProcs = w.agents.map((a) => a.proc);
  const logDir = ENV['FERRY_BENCH_LOG_DIR'] ?? path.join(os.tmpdir(), `ferry-replicas-faults-${seed}-${Date.now()}`);
  const trials: TrialOutcome[] = [];
  try {
    for (let i = 0; i <= TRIALS; i++) {
      loads.push(os.loadavg()[0] as number);
      trials.push(await runTrial(w, i, i === 0 ? undefined : plans[i - 1]));
    }
  } finally {
    try {
      saveLogs(w, agentProcs, logDir);
      log(`process logs in ${logDir}`);
    } catch (err) {
      log(`logs not saved: ${(err as Error).message}`);
    }
    await disposeWorld(w);
  }
  const base = trials[0]?.copies ?? [];
  const baseline = {
    keyed: base.find((c) => c.keyed)?.totalMs ?? null,
    keyless: base.find((c) => !c.keyed)?.totalMs ?? null,
  };
  const problems = trials.flatMap(problemsOf);
  const result = {
    bench: 'replicas-faults',
    seed,
    rows: ROWS,
    faultTrials: TRIALS,
    agents: AGENTS,
    replicas: REPLICAS,
    batchSize: BATCH,
    writeDelayMs: WRITE_DELAY_MS,
    cores: os.cpus().length,
    load: { atTrialStarts: loads.map((l) => Math.round(l * 10) / 10), atEnd: os.loadavg() },
    minutes: Math.round((Date.now() - t0) / 6000) / 10,
    baselineMs: baseline,
    figures: summarize(trials, baseline),
    problems,
    trials: trials.map((t) => ({
      ...t,
      copies: t.copies.map(({ target, ...c }) => ({ ...c, targetRows: target.rows, targetIds: target.keys })),
    })),
    logs: logDir,
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  if (problems.length) {
    log(`${problems.length} problems:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    process.exitCode = 1;
  }
}

await main();
