/**
 * The chaos trials: real Solution runs on a real Service process and a real Agent process, faults
 * at seeded random moments, the runs continued until they complete, and the targets checked in
 * SQL against the source.
 *
 *   world (once)   Service process ─ Agent process ─ CSV folder, SQLite file, reference database
 *        │
 *   trial n        new target database, one Solution per scenario, prepared
 *        │         start every Solution ──▶ each one's driver: wait for the run's end; a run
 *        │                                  that ended FatalError is started again (at most
 *        │                                  MAX_RESTARTS times); any other end is the last
 *        │         at each moment (a seeded share of the rows written): strike a fault and
 *        │         bring everything back (faults.ts)
 *        │         every driver done ─▶ the Agent's outbox delivered ─▶ History read
 *        ▼
 *   outcome        per scenario and target table: rows lost, doubled, foreign, checksum; the
 *                  runs' results and what History counted
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { createTestDatabase } from '../../helpers/stores.js';
import { killAll, until } from '../agent/harness.js';
import {
  firstRecordError,
  historyOf,
  runAgents,
  solutionPath,
  untilDelivered,
  type AgentUnderTest,
  type Run,
} from '../solutions/faults-helpers.js';
import { FAULT_KINDS, strike, type FaultKind, type FaultRecord, type Random } from './faults.js';
import {
  compare,
  createIsTables,
  createScenario,
  createSources,
  createTarget,
  figures,
  rowsIn,
  SCENARIOS,
  writeCsvSource,
  writeReference,
  writeSqliteSource,
  type Comparison,
  type Figures,
  type PreparedSolution,
  type ScenarioName,
  type Sources,
} from './scenarios.js';
import { serviceProcess, type ServiceProcess } from './service-process.js';

/** How many times a driver starts a Solution again after runs that ended FatalError. */
export const MAX_RESTARTS = 8;

export interface ChaosConfig {
  rows: number;
  trials: number;
  /** Faults per trial: at least, at most. */
  faults: readonly [number, number];
  /** The fault kinds, and the scenarios, the trials use. */
  kinds: readonly FaultKind[];
  scenarios: readonly ScenarioName[];
  /** Rows per write batch of the IS Maps. */
  batchSize: number;
  /** How long target-refuse refuses, in ms: at least, at most. */
  refuseMs: readonly [number, number];
  /** The moments, as shares of all rows the trial writes: earliest, latest. */
  moments: readonly [number, number];
  /** How long one trial may take before it is abandoned, in ms. */
  trialTimeoutMs: number;
  /**
   * The Agent's retry budget for a write whose target went away (FERRY_AGENT_TARGET_RETRY_MS):
   * within the range of `refuseMs`, so that some outages are outlasted by the retries and others
   * end the run FatalError, for the next run to write the rest.
   */
  targetRetryMs: number;
  log: (line: string) => void;
}

/** What a trial's runs, faults and checks came to for one scenario. */
export interface ScenarioOutcome {
  trial: number;
  scenario: ScenarioName;
  /** Faults that struck while this scenario's runs were not all done. */
  faults: FaultKind[];
  /** The refusal of prepare, when prepare refused the Solution. */
  refused?: string;
  /** The runs in History, oldest first; with record errors, the first one's code and message. */
  runs: Array<
    Pick<Run, 'processExecutionId' | 'result' | 'recordsProcessed' | 'recordsFailed' | 'details'> & {
      firstError?: string;
    }
  >;
  /** The driver stopped starting runs again (MAX_RESTARTS), or the trial timed out. */
  gaveUp: boolean;
  tables: Array<{ table: string } & Comparison>;
}

/**
 * What History says the scenario's runs wrote — Σ (recordsProcessed − recordsFailed) over its runs
 * — beside what the target holds: its rows, or its keys in a keyed table (where a record written
 * again replaces its row). For Creates into keyless tables the two must be equal; with Upserts
 * History may count more (a batch written again after a kill, every record of each run without
 * net change), never less.
 */
export function historyAgainstTarget(o: ScenarioOutcome): { written: number; held: number } {
  const written = o.runs.reduce((a, r) => a + r.recordsProcessed - r.recordsFailed, 0);
  const held = SCENARIOS[o.scenario].tables.reduce((a, t) => {
    const got = o.tables.find((x) => x.table === t.table)?.target;
    return a + (got ? (t.keyed ? got.keys : got.rows) : 0);
  }, 0);
  return { written, held };
}

export interface TrialOutcome {
  trial: number;
  faults: FaultRecord[];
  scenarios: ScenarioOutcome[];
}

/** The processes, sources and reference a run of trials shares. */
export interface World {
  sut: ServiceProcess;
  home: string;
  agent: AgentUnderTest;
  agentEnv: Record<string, string>;
  sources: Sources;
  admin: pg.Client;
  reference: { db: { url: string; drop: () => Promise<void> }; client: pg.Client; figures: Figures };
  rows: number;
  dispose(): Promise<void>;
}

/** The Service and Agent processes, the sources (CSV, SQLite) and the reference database. */
export async function startWorld(
  cfg: Pick<ChaosConfig, 'rows' | 'targetRetryMs' | 'log'>,
  adminUrl: string,
): Promise<World> {
  const { rows, log } = cfg;
  const sut = serviceProcess();
  const cleanup: Array<() => Promise<unknown>> = [];
  try {
    await sut.start();
    cleanup.push(() => sut.dispose());
    const folder = path.join(sut.dataDir, 'csv');
    const file = path.join(sut.dataDir, 'source.db');
    const t0 = Date.now();
    writeCsvSource(folder, rows);
    writeSqliteSource(file, rows);
    const db = await createTestDatabase();
    cleanup.push(() => db.drop());
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    cleanup.push(() => client.end());
    await writeReference(client, rows);
    const ref = await figures(client, 'source', 'id', rows);
    log(`sources of ${rows} rows written in ${Date.now() - t0} ms (reference md5 ${ref.checksum})`);
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    cleanup.push(() => admin.end());
    // Every Solution of a trial runs at once, so that one fault strikes them all mid-run.
    const agentEnv = {
      FERRY_AGENT_RUN_CONCURRENCY: String(Object.keys(SCENARIOS).length + 1),
      FERRY_AGENT_TARGET_RETRY_MS: String(cfg.targetRetryMs),
    };
    const started = await runAgents(sut, 1, agentEnv);
    const agent = started.agents[0] as AgentUnderTest;
    const sources = await createSources(sut, folder, file);
    return {
      sut,
      home: started.home,
      agent,
      agentEnv,
      sources,
      admin,
      reference: { db, client, figures: ref },
      rows,
      async dispose() {
        killAll();
        for (const c of cleanup.reverse()) await c().catch(() => undefined);
      },
    };
  } catch (err) {
    killAll();
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
    throw err;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const FATAL = new Set(['FatalError', 'RecordErrorsAndFatalErrors']);

/** The execution of a run once it has ended, polled every 400 ms (requests fail while the Service is down: they are tried again). */
async function ended(w: World, solutionId: string, runId: string, deadline: number): Promise<Run> {
  for (;;) {
    try {
      const run = (await historyOf(w.sut, solutionId)).find((r) => r.processExecutionId === runId);
      if (run && run.result !== 'InProgress') return run;
    } catch {
      // The Service is down or restarting.
    }
    if (Date.now() > deadline) throw new Error(`run ${runId} of ${solutionId} has not ended`);
    await sleep(400);
  }
}

/** Starts the Solution, trying again while the Service or the Agent is away; answers the run's ID. */
async function startAccepted(w: World, solutionId: string, deadline: number): Promise<string> {
  for (;;) {
    try {
      const res = await w.sut.request<{ runId: string; started: boolean }>(
        'POST',
        `${solutionPath(w.sut, solutionId)}/start`,
      );
      if (res.status === 200 && res.body.runId) return res.body.runId;
    } catch {
      // The Service is down or restarting.
    }
    if (Date.now() > deadline) throw new Error(`the Solution ${solutionId} could not be started again`);
    await sleep(500);
  }
}

interface Driver {
  solution: PreparedSolution;
  done: boolean;
  gaveUp: boolean;
  faults: FaultKind[];
  finished: Promise<void>;
}

/**
 * Follows a Solution's runs until one ends other than FatalError, starting it again after each that
 * did — as an operator would: once the fault being struck is over (`calm`), not during the outage.
 */
function drive(
  w: World,
  solution: PreparedSolution,
  firstRunId: string,
  deadline: number,
  calm: () => Promise<void>,
  log: (line: string) => void,
): Driver {
  const d: Driver = { solution, done: false, gaveUp: false, faults: [], finished: Promise.resolve() };
  d.finished = (async () => {
    let runId = firstRunId;
    try {
      for (let restarts = 0; ; restarts++) {
        const run = await ended(w, solution.id, runId, deadline);
        log(
          `  ${solution.scenario.name}: run ${runId.slice(0, 8)} ${run.result} processed ${run.recordsProcessed} failed ${run.recordsFailed}${run.details ? ` — ${run.details.slice(0, 160)}` : ''}`,
        );
        if (!FATAL.has(run.result)) break;
        if (restarts >= MAX_RESTARTS) {
          d.gaveUp = true;
          break;
        }
        await calm();
        runId = await startAccepted(w, solution.id, deadline);
      }
    } catch (err) {
      log(`  ${solution.scenario.name}: ${(err as Error).message}`);
      d.gaveUp = true;
    } finally {
      d.done = true;
    }
  })();
  return d;
}

/** The seeded plan of a trial: which faults, at which shares of the rows, how long a refusal lasts. */
export function planTrial(
  cfg: ChaosConfig,
  rnd: Random,
  kinds: readonly FaultKind[],
): Array<{ kind: FaultKind; share: number; refuseMs: number }> {
  const shares = kinds.map(() => rnd.between(cfg.moments[0], cfg.moments[1])).sort((a, b) => a - b);
  return kinds.map((kind, i) => ({
    kind,
    share: shares[i] as number,
    refuseMs: Math.round(rnd.between(cfg.refuseMs[0], cfg.refuseMs[1])),
  }));
}

/** The fault kinds of every trial: each kind equally often when trials × faults allow, in a seeded order. */
export function faultSchedule(cfg: ChaosConfig, rnd: Random): FaultKind[][] {
  const counts = Array.from({ length: cfg.trials }, () => Math.floor(rnd.between(cfg.faults[0], cfg.faults[1] + 1)));
  const total = counts.reduce((a, b) => a + b, 0);
  let bag: FaultKind[] = [];
  while (bag.length < total) bag = bag.concat(rnd.shuffle(cfg.kinds));
  const out: FaultKind[][] = [];
  let at = 0;
  for (const n of counts) {
    out.push(bag.slice(at, at + n));
    at += n;
  }
  return out;
}

/** One trial: a new target database, the Solutions, the runs under the planned faults, the checks. */
export async function runTrial(
  w: World,
  cfg: ChaosConfig,
  trial: number,
  plan: Array<{ kind: FaultKind; share: number; refuseMs: number }>,
): Promise<TrialOutcome> {
  const log = cfg.log;
  const db = await createTestDatabase();
  const database = new URL(db.url).pathname.slice(1);
  const checker = new pg.Client({ connectionString: db.url });
  await checker.connect();
  // The checker's own session survives the target faults; its errors (none expected) must not be uncaught.
  checker.on('error', (err) => log(`  checker: ${err.message}`));
  const checkerPid = (await checker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid as number;
  try {
    await createIsTables(checker);
    const targetId = await createTarget(w.sut, trial, db.url);
    const solutions = await Promise.all(
      cfg.scenarios.map((name) =>
        createScenario(
          w.sut,
          { agentId: w.agent.agentId, sources: w.sources, targetId, trial, batchSize: cfg.batchSize },
          SCENARIOS[name],
        ),
      ),
    );
    for (const s of solutions)
      if (s.refused !== undefined) log(`  ${s.scenario.name}: prepare refused it — ${s.refused}`);
    const running = solutions.filter((s) => s.refused === undefined);
    const tables = running.flatMap((s) => s.scenario.tables.map((t) => t.table));
    const total = tables.length * w.rows;
    log(
      `trial ${trial}: ${running.map((s) => s.scenario.name).join(', ')}; faults ${plan.map((p) => `${p.kind}@${Math.round(p.share * 100)}%`).join(', ') || 'none'}`,
    );

    const deadline = Date.now() + cfg.trialTimeoutMs;
    const t0 = Date.now();
    // Settled while no fault is being struck: the drivers start runs again only then.
    let striking: Promise<unknown> = Promise.resolve();
    const calm = async (): Promise<void> => {
      for (let seen = striking; ; seen = striking) {
        await seen.catch(() => undefined);
        if (seen === striking) return;
      }
    };
    const drivers: Driver[] = [];
    for (const s of running) {
      const runId = await startAccepted(w, s.id, deadline);
      drivers.push(drive(w, s, runId, deadline, calm, log));
    }
    const faults: FaultRecord[] = [];
    for (const p of plan) {
      // The moment: the share of all rows written, or every run done (the fault then strikes nothing).
      const atRows = await until(
        `${Math.round(p.share * 100)}% of the rows written`,
        async () => {
          if (drivers.every((d) => d.done)) return -1;
          const n = await rowsIn(checker, tables);
          return n >= p.share * total ? n : undefined;
        },
        Math.max(1000, deadline - Date.now()),
      );
      if (atRows < 0) {
        log(`  ${p.kind}: every run had ended before ${Math.round(p.share * 100)}% of the rows — not struck`);
        continue;
      }
      const atMs = Date.now() - t0;
      for (const d of drivers) if (!d.done) d.faults.push(p.kind);
      const struck = strike(
        p.kind,
        {
          sut: w.sut,
          home: w.home,
          agent: w.agent,
          agentEnv: w.agentEnv,
          admin: w.admin,
          database,
          keepPids: () => [checkerPid],
        },
        { refuseMs: p.refuseMs },
      );
      striking = struck;
      const { detail, recoveryMs } = await struck;
      faults.push({ kind: p.kind, atMs, atRows, detail, recoveryMs });
      log(`  ${p.kind} at ${atMs} ms, ${atRows} of ${total} rows (${detail}); back after ${recoveryMs} ms`);
    }
    await Promise.all(drivers.map((d) => d.finished));
    await untilDelivered(w.agent.dir, 120_000);

    const outcomes: ScenarioOutcome[] = [];
    for (const s of solutions) {
      const d = drivers.find((x) => x.solution === s);
      const history = s.refused === undefined ? await historyOf(w.sut, s.id) : [];
      history.sort((a, b) => a.start.localeCompare(b.start));
      const runs: ScenarioOutcome['runs'] = [];
      for (const r of history) {
        const firstError = r.recordsFailed > 0 ? await firstRecordError(w.sut, s.id, r.id) : undefined;
        runs.push({
          processExecutionId: r.processExecutionId,
          result: r.result,
          recordsProcessed: r.recordsProcessed,
          recordsFailed: r.recordsFailed,
          details: r.details,
          ...(firstError ? { firstError } : {}),
        });
      }
      const checked = [];
      for (const t of s.scenario.tables)
        checked.push({
          table: t.table,
          ...compare(await figures(checker, t.table, t.key, w.rows), w.reference.figures),
        });
      outcomes.push({
        trial,
        scenario: s.scenario.name,
        faults: d?.faults ?? [],
        ...(s.refused !== undefined ? { refused: s.refused } : {}),
        runs,
        gaveUp: d?.gaveUp ?? false,
        tables: checked,
      });
    }
    for (const o of outcomes) log(`  ${describeOutcome(o)}`);
    return { trial, faults, scenarios: outcomes };
  } finally {
    await checker.end().catch(() => undefined);
    await db.drop().catch((err: unknown) => log(`  drop of ${database} failed: ${(err as Error).message}`));
  }
}

/** One line about a scenario's outcome in a trial. */
export function describeOutcome(o: ScenarioOutcome): string {
  if (o.refused !== undefined) return `${o.scenario}: refused at prepare (${o.refused})`;
  const t = o.tables
    .map(
      (x) =>
        `${x.table} rows ${x.target.rows} lost ${x.lost} doubled ${x.doubled}${x.foreign ? ` foreign ${x.foreign}` : ''} md5 ${x.checksumEqual ? 'equal' : 'DIFFERS'}`,
    )
    .join('; ');
  return `${o.scenario}: ${t}; runs ${o.runs.map((r) => (r.recordsFailed ? `${r.result} (${r.recordsFailed} record errors, the first ${r.firstError ?? '?'})` : r.result)).join(' → ')}; History Σ written ${historyAgainstTarget(o).written}, the target holds ${historyAgainstTarget(o).held}${o.gaveUp ? '; GAVE UP' : ''}`;
}

/** The ways an outcome falls short of what issue 29 demands: no row lost, doubled or changed, no record error, the last run complete. */
export function problemsOf(
  o: ScenarioOutcome,
  acceptRefusal: (scenario: ScenarioName, message: string) => boolean,
): string[] {
  if (o.refused !== undefined)
    return acceptRefusal(o.scenario, o.refused)
      ? []
      : [`${o.scenario}, trial ${o.trial}: prepare refused it: ${o.refused}`];
  const out: string[] = [];
  const at = `${o.scenario}, trial ${o.trial} (faults ${o.faults.join(', ') || 'none'})`;
  for (const t of o.tables) {
    if (t.lost) out.push(`${at}: ${t.table} lost ${t.lost} rows`);
    if (t.doubled) out.push(`${at}: ${t.table} has ${t.doubled} rows written twice`);
    if (t.foreign) out.push(`${at}: ${t.table} has ${t.foreign} keys the source does not have`);
    if (!t.checksumEqual && !t.lost && !t.doubled && !t.foreign)
      out.push(`${at}: ${t.table}'s values differ from the source (md5)`);
  }
  for (const r of o.runs) {
    if (r.recordsFailed > 0 || r.result === 'CompletedWithErrors') {
      out.push(
        `${at}: run ${r.processExecutionId} ended ${r.result} with ${r.recordsFailed} record errors (${r.firstError ?? ''}${r.details ? `; ${r.details.slice(0, 160)}` : ''})`,
      );
    }
  }
  // History counts what the target holds: never less (a batch committed and not counted), and for
  // Creates into a table without a key never more (nothing there is written over).
  const h = historyAgainstTarget(o);
  if (h.written < h.held) out.push(`${at}: History counts ${h.written} records written, the target holds ${h.held}`);
  if (
    h.written > h.held &&
    o.tables.every((t) => !SCENARIOS[o.scenario].tables.find((x) => x.table === t.table)?.keyed)
  )
    out.push(`${at}: History counts ${h.written} records written, more than the ${h.held} the target holds`);
  const last = o.runs.at(-1);
  if (o.gaveUp || !last || FATAL.has(last.result) || last.result === 'InProgress')
    out.push(`${at}: the runs did not complete (${o.runs.map((r) => r.result).join(' → ') || 'no run'})`);
  return out;
}

/** The figures table per scenario (and target table): trials, faults, rows lost, rows doubled, and History's count against the source. */
export function summarize(trials: readonly TrialOutcome[]): Array<{
  scenario: string;
  table: string;
  trials: number;
  faults: number;
  refused: number;
  lost: number;
  doubled: number;
  checksumDiffers: number;
  recordErrorRuns: number;
  historyOver: number;
  historyUnder: number;
}> {
  const rows = new Map<
    string,
    {
      scenario: string;
      table: string;
      trials: number;
      faults: number;
      refused: number;
      lost: number;
      doubled: number;
      checksumDiffers: number;
      recordErrorRuns: number;
      historyOver: number;
      historyUnder: number;
    }
  >();
  for (const t of trials) {
    for (const o of t.scenarios) {
      for (const tab of o.tables) {
        const k = `${o.scenario}/${tab.table}`;
        const r = rows.get(k) ?? {
          scenario: o.scenario,
          table: tab.table,
          trials: 0,
          faults: 0,
          refused: 0,
          lost: 0,
          doubled: 0,
          checksumDiffers: 0,
          recordErrorRuns: 0,
          historyOver: 0,
          historyUnder: 0,
        };
        r.trials += 1;
        r.faults += o.faults.length;
        if (o.refused !== undefined) {
          r.refused += 1;
        } else {
          r.lost += tab.lost;
          r.doubled += tab.doubled;
          r.checksumDiffers += tab.checksumEqual ? 0 : 1;
          r.recordErrorRuns += o.runs.filter((x) => x.recordsFailed > 0).length;
          if (tab === o.tables[0]) {
            const h = historyAgainstTarget(o);
            r.historyOver += Math.max(0, h.written - h.held);
            r.historyUnder += Math.max(0, h.held - h.written);
          }
        }
        rows.set(k, r);
      }
    }
  }
  return [...rows.values()];
}

/** The summary as a Markdown table. */
export function formatTable(trials: readonly TrialOutcome[]): string {
  const lines = [
    '| scenario | target table | trials | faults | refused | rows lost | rows doubled | md5 differs | runs with record errors | History: written over / under what the target holds |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of summarize(trials)) {
    const history =
      r.table === SCENARIOS[r.scenario as ScenarioName].tables[0]?.table
        ? `${r.historyOver} / ${r.historyUnder}`
        : '(above)';
    lines.push(
      `| ${r.scenario} | ${r.table} | ${r.trials} | ${r.faults} | ${r.refused} | ${r.lost} | ${r.doubled} | ${r.checksumDiffers} | ${r.recordErrorRuns} | ${history} |`,
    );
  }
  const byKind = new Map<string, number>();
  for (const t of trials) for (const f of t.faults) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
  lines.push('', `Faults struck: ${FAULT_KINDS.map((k) => `${k} ${byKind.get(k) ?? 0}`).join(', ')}.`);
  lines.push(
    '',
    'Trials with a single fault, by its kind (rows lost / doubled over every scenario):',
    '',
    '| fault | trials | rows lost | rows doubled | scenarios that lost or doubled rows |',
    '|---|---:|---:|---:|---|',
  );
  for (const k of FAULT_KINDS) {
    const alone = trials.filter((t) => t.faults.length === 1 && t.faults[0]?.kind === k);
    const outcomes = alone.flatMap((t) => t.scenarios.filter((o) => o.refused === undefined));
    const lost = outcomes.reduce((a, o) => a + o.tables.reduce((b, x) => b + x.lost, 0), 0);
    const doubled = outcomes.reduce((a, o) => a + o.tables.reduce((b, x) => b + x.doubled, 0), 0);
    const hit = [...new Set(outcomes.filter((o) => o.tables.some((x) => x.lost || x.doubled)).map((o) => o.scenario))];
    lines.push(`| ${k} | ${alone.length} | ${lost} | ${doubled} | ${hit.join(', ') || '—'} |`);
  }
  return lines.join('\n');
}

/** Appends the trials' outcomes (JSON, one a line) to `file`, when given. */
export function appendOutcome(file: string | undefined, outcome: TrialOutcome): void {
  if (!file) return;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.appendFileSync(file, JSON.stringify(outcome) + '\n');
}
