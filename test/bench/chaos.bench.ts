/**
 * The chaos suite at full size (docs/reliability.md): test/e2e/chaos/ with BENCH_CHAOS_ROWS rows
 * (default 300,000) and BENCH_CHAOS_TRIALS trials (default 24), one to three faults a trial at
 * seeded random moments — kill -9 of the Agent, kill -9 of the Service, the target's sessions
 * terminated, the target refusing connections for 2–15 s — every scenario's runs continued until
 * they complete and its target checked in SQL against the source.
 *
 *   npx tsx test/bench/chaos.bench.ts      → the figures as JSON on stdout, then the table;
 *                                            each trial's progress on stderr
 *
 * FERRY_CHAOS_SEED replays a run (the seed is printed first); BENCH_CHAOS_SCENARIOS and
 * BENCH_CHAOS_FAULTS (comma-separated) narrow it; BENCH_CHAOS_TARGET_RETRY_MS (default 8000) is
 * the Agent's retry budget for a target that went away (FERRY_AGENT_TARGET_RETRY_MS: refusals
 * shorter than it are outlasted, longer ones end the run FatalError); BENCH_CHAOS_OUT=FILE
 * appends each trial's outcome there as a JSON line. FERRY_BENCH_DATABASE_URL (else FERRY_TEST_DATABASE_URL, else
 * postgres://postgres@127.0.0.1:5432/test): a server where it may create and drop databases.
 * Exits 1 when a figure is not 0 (a row lost, doubled or changed, a record error, a run that did
 * not complete).
 */
import os from 'node:os';
import type { ChaosConfig, TrialOutcome } from '../e2e/chaos/trials.js';

const ENV = process.env;
// The test helpers read the server from FERRY_TEST_DATABASE_URL when they are loaded.
ENV['FERRY_TEST_DATABASE_URL'] =
  ENV['FERRY_BENCH_DATABASE_URL'] ?? ENV['FERRY_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const ADMIN_URL = ENV['FERRY_TEST_DATABASE_URL'];

const [{ chaosSeed, FAULT_KINDS, seededRandom }, { refusalAccepted, SCENARIO_NAMES }, trials] = await Promise.all([
  import('../e2e/chaos/faults.js'),
  import('../e2e/chaos/scenarios.js'),
  import('../e2e/chaos/trials.js'),
]);
type FaultKind = (typeof FAULT_KINDS)[number];
type ScenarioName = (typeof SCENARIO_NAMES)[number];

const list = <T extends string>(value: string | undefined, all: readonly T[]): T[] => {
  if (!value) return [...all];
  const picked = value.split(',').filter(Boolean);
  for (const p of picked) if (!all.includes(p as T)) throw new Error(`unknown name ${p}: one of ${all.join(', ')}`);
  return picked as T[];
};

const log = (line: string): void =>
  void process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const cfg: ChaosConfig = {
  rows: Number(ENV['BENCH_CHAOS_ROWS'] ?? 300_000),
  trials: Number(ENV['BENCH_CHAOS_TRIALS'] ?? 24),
  faults: [1, 3],
  kinds: list<FaultKind>(ENV['BENCH_CHAOS_FAULTS'], FAULT_KINDS),
  scenarios: list<ScenarioName>(ENV['BENCH_CHAOS_SCENARIOS'], SCENARIO_NAMES),
  batchSize: 2_000,
  refuseMs: [2_000, 15_000],
  moments: [0.02, 0.9],
  trialTimeoutMs: 20 * 60_000,
  targetRetryMs: Number(ENV['BENCH_CHAOS_TARGET_RETRY_MS'] ?? 8_000),
  log,
};

const seed = chaosSeed();
log(
  `seed ${seed} (replay: FERRY_CHAOS_SEED=${seed} npx tsx test/bench/chaos.bench.ts); ${cfg.rows} rows, ${cfg.trials} trials`,
);
const t0 = Date.now();
const world = await trials.startWorld(cfg, ADMIN_URL);
const outcomes: TrialOutcome[] = [];
try {
  const rnd = seededRandom(seed);
  const schedule = trials.faultSchedule(cfg, rnd);
  for (let i = 0; i < cfg.trials; i++) {
    const outcome = await trials.runTrial(world, cfg, i + 1, trials.planTrial(cfg, rnd, schedule[i] ?? []));
    outcomes.push(outcome);
    trials.appendOutcome(ENV['BENCH_CHAOS_OUT'], outcome);
  }
} finally {
  await world.dispose();
}

const problems = outcomes.flatMap((t) => t.scenarios.flatMap((o) => trials.problemsOf(o, refusalAccepted)));
process.stdout.write(
  `${JSON.stringify({ seed, rows: cfg.rows, trials: cfg.trials, minutes: Math.round((Date.now() - t0) / 6000) / 10, figures: trials.summarize(outcomes), problems: problems.length, load: os.loadavg() }, null, 2)}\n`,
);
process.stdout.write(`\nseed ${seed}, ${cfg.rows} rows, ${cfg.trials} trials\n${trials.formatTable(outcomes)}\n`);
if (problems.length) {
  process.stdout.write(`\n${problems.length} problems:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  process.exitCode = 1;
}
