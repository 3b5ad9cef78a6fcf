/**
 * Formula throughput, on one core:
 *
 *   npx tsx test/bench/formulas.bench.ts              # all scenarios
 *   BENCH_RECORDS=1000000 npx tsx test/bench/formulas.bench.ts
 *
 * The formula is CONCATENATE(UPPER(Query_Contact.FirstName), " ", Query_Contact.LastName): two
 * functions over records of eight fields. Scenarios, each in a fresh child process so that its
 * peak RSS is its own:
 *
 *   plain-js            the same computation written by hand in JavaScript, in the host
 *   isolate-sync-call   the compiled program in an isolate, one synchronous call per record
 *   isolate-async-call  the engine, one evaluate() (one asynchronous call) per record
 *   engine-batch-N      the engine, evaluate() per batch of N records (N = 100, 1000, 2000)
 *   engine-flat-memory  batches of 1000 over 5× the records, to show memory does not grow
 *
 * Records are generated as they are consumed, as a Map run reads them, so memory reflects the
 * engine and not the data set. Prints one JSON document.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import ivm from 'isolated-vm';
import { compileFormulas, FormulaEngine, type FormulaRecord } from '../../src/maps/formula/evaluator.js';
import { librarySource } from '../../src/maps/formula/library/index.js';
import { packColumns, wireColumns } from '../../src/maps/formula/wire.js';

const RECORDS = Number(process.env['BENCH_RECORDS'] ?? 200_000);
const FORMULA = 'CONCATENATE(UPPER(Query_Contact.FirstName), " ", Query_Contact.LastName)';
const SCENARIOS = [
  'plain-js',
  'isolate-sync-call',
  'isolate-async-call',
  'engine-batch-100',
  'engine-batch-1000',
  'engine-batch-2000',
  'engine-flat-memory',
] as const;
type Scenario = (typeof SCENARIOS)[number];

interface Result {
  scenario: Scenario;
  records: number;
  seconds: number;
  recordsPerSecond: number;
  peakRssMiB: number;
  /** RSS after the first tenth and at the end of the run, to show whether memory grows. */
  rssAtTenthMiB: number;
  rssAtEndMiB: number;
  check: string;
}

function record(i: number): FormulaRecord {
  return {
    Query_Contact: {
      Id: i,
      FirstName: `first${i % 1000}`,
      LastName: `Last ${i}`,
      Email: `contact${i}@example.com`,
      City: i % 2 ? 'Oslo' : 'Bergen',
      Amount: `${i}.50`,
      Active: i % 3 === 0,
      Created: '2024-03-05T14:07:09Z',
    },
  };
}

function* batches(total: number, size: number): Generator<FormulaRecord[]> {
  for (let start = 0; start < total; start += size) {
    const n = Math.min(size, total - start);
    const batch = new Array<FormulaRecord>(n);
    for (let k = 0; k < n; k++) batch[k] = record(start + k);
    yield batch;
  }
}

const mib = (bytes: number): number => Math.round((bytes / 1024 / 1024) * 10) / 10;

/** Runs one scenario in this process; `step(done)` is called as records complete. */
async function runScenario(scenario: Scenario): Promise<Result> {
  const total =
    scenario === 'isolate-async-call'
      ? Math.min(RECORDS, 20_000)
      : scenario === 'engine-flat-memory'
        ? RECORDS * 5
        : RECORDS;
  const compiled = compileFormulas([FORMULA]);
  let rssAtTenth = 0;
  let check = '';
  const tenth = Math.floor(total / 10);
  const progress = (done: number, last: unknown): void => {
    if (rssAtTenth === 0 && done >= tenth) rssAtTenth = process.memoryUsage.rss();
    check = String(last);
  };

  let started = 0;
  if (scenario === 'plain-js') {
    const f = (r: FormulaRecord): string => {
      const c = r['Query_Contact'] as { FirstName: string | null; LastName: string | null };
      return `${(c.FirstName ?? '').toUpperCase()} ${c.LastName ?? ''}`;
    };
    started = performance.now();
    let done = 0;
    for (const batch of batches(total, 1000)) {
      let last = '';
      for (const r of batch) last = f(r);
      done += batch.length;
      progress(done, last);
    }
  } else if (scenario === 'isolate-sync-call') {
    // The engine's own program and library, called synchronously once per record.
    const isolate = new ivm.Isolate({ memoryLimit: 128 });
    const context = isolate.createContextSync();
    context.evalSync('globalThis.__name = (f) => f;');
    context.evalSync(librarySource());
    const run = await (await isolate.compileScript(compiled.source)).run(context, { reference: true });
    started = performance.now();
    let done = 0;
    for (const batch of batches(total, 1000)) {
      let last: unknown;
      for (const r of batch) {
        last = run.applySync(undefined, [wireColumns(packColumns([r], compiled.fields)), Date.now(), 1, 2, 3, 4, -1], {
          arguments: { copy: true },
          result: { copy: true },
        });
      }
      done += batch.length;
      progress(done, last);
    }
    isolate.dispose();
  } else {
    const engine = await FormulaEngine.create();
    const size =
      scenario === 'isolate-async-call'
        ? 1
        : scenario === 'engine-flat-memory'
          ? 1000
          : Number(scenario.split('-').pop());
    await engine.evaluate(compiled, [record(0)]);
    started = performance.now();
    let done = 0;
    for (const batch of batches(total, size)) {
      const out = await engine.evaluate(compiled, batch);
      if (out.errors.length > 0) throw new Error(out.errors[0]?.error.message);
      done += batch.length;
      progress(done, out.values[out.values.length - 1]?.[0]);
    }
    engine.dispose();
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    scenario,
    records: total,
    seconds: Math.round(seconds * 1000) / 1000,
    recordsPerSecond: Math.round(total / seconds),
    peakRssMiB: Math.round((process.resourceUsage().maxRSS / 1024) * 10) / 10,
    rssAtTenthMiB: mib(rssAtTenth),
    rssAtEndMiB: mib(process.memoryUsage.rss()),
    check,
  };
}

async function main(): Promise<void> {
  const only = process.argv[2] as Scenario | undefined;
  if (only) {
    process.stdout.write(JSON.stringify(await runScenario(only)));
    return;
  }
  const self = fileURLToPath(import.meta.url);
  const results: Result[] = [];
  for (const scenario of SCENARIOS) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', self, scenario], {
      encoding: 'utf8',
      env: process.env,
      maxBuffer: 1 << 20,
    });
    const result = JSON.parse(out) as Result;
    results.push(result);
    process.stderr.write(`${scenario}: ${result.recordsPerSecond} records/s, peak RSS ${result.peakRssMiB} MiB\n`);
  }
  const report = {
    benchmark: 'formulas',
    formula: FORMULA,
    recordsPerScenario: RECORDS,
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100),
    results,
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
