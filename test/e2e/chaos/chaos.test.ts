import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_TARGETS } from '../../helpers/stores.js';
import { chaosSeed, FAULT_KINDS, seededRandom } from './faults.js';
import { refusalAccepted, SCENARIO_NAMES } from './scenarios.js';
import {
  faultSchedule,
  formatTable,
  planTrial,
  problemsOf,
  runTrial,
  startWorld,
  type ChaosConfig,
  type TrialOutcome,
  type World,
} from './trials.js';

const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];
const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');
const VERBOSE = process.env['FERRY_CHAOS_VERBOSE'] === '1';

/**
 * The chaos suite, small: every scenario of scenarios.ts at once in each trial, one fault a trial
 * at a seeded random moment, each fault kind twice. The full sizes are test/bench/chaos.bench.ts
 * (docs/reliability.md). Replay a failure with the seed it prints: FERRY_CHAOS_SEED=<seed>.
 */
describe.skipIf(!HAS_PG)(
  'chaos: kill -9 of the Agent and of the Service, target outages — no row lost or doubled (needs FERRY_TEST_DATABASE_URL)',
  () => {
    const seed = chaosSeed();
    const lines: string[] = [];
    const log = (line: string): void => {
      lines.push(line);
      if (VERBOSE) process.stderr.write(`[chaos] ${line}\n`);
    };
    const cfg: ChaosConfig = {
      rows: 20_000,
      trials: 2 * FAULT_KINDS.length,
      faults: [1, 1],
      kinds: FAULT_KINDS,
      scenarios: SCENARIO_NAMES,
      batchSize: 500,
      refuseMs: [2_000, 5_000],
      moments: [0.05, 0.6],
      trialTimeoutMs: 150_000,
      targetRetryMs: 3_000,
      log,
    };
    const outcomes: TrialOutcome[] = [];
    let world: World | undefined;

    beforeAll(async () => {
      process.stderr.write(
        `chaos seed ${seed} (replay: FERRY_CHAOS_SEED=${seed} npx vitest run test/e2e/chaos/chaos.test.ts)\n`,
      );
      world = await startWorld(cfg, PG_URL as string);
      const rnd = seededRandom(seed);
      const schedule = faultSchedule(cfg, rnd);
      for (let i = 0; i < cfg.trials; i++)
        outcomes.push(await runTrial(world, cfg, i + 1, planTrial(cfg, rnd, schedule[i] ?? [])));
      process.stderr.write(`chaos seed ${seed}, ${cfg.rows} rows, ${cfg.trials} trials\n${formatTable(outcomes)}\n`);
    }, 600_000);

    afterAll(async () => {
      await world?.dispose();
    });

    it.each(SCENARIO_NAMES)(
      '%s: after the faults and the runs that follow, the target equals the source and no run recorded a record error',
      (scenario) => {
        const mine = outcomes.flatMap((t) => t.scenarios.filter((o) => o.scenario === scenario));
        expect(mine, 'the trials ran').toHaveLength(cfg.trials);
        const problems = mine.flatMap((o) => problemsOf(o, refusalAccepted));
        expect(problems, `seed ${seed}; the trials:\n${lines.join('\n')}`).toEqual([]);
      },
    );
  },
);
