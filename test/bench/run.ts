/**
 * `npm run bench`: runs every `test/bench/*.bench.ts` one after another, each in its own process
 * (so one benchmark's memory never counts against the next), and prints their JSON results.
 * `npm run bench -- lookup` runs only the benchmarks whose file name contains "lookup".
 * Scenarios that take long are off unless asked for: solutions.bench.ts' schedules at scale run
 * with BENCH_SCHEDULES=1 (docs/benchmarks.md "Solutions").
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const dir = import.meta.dirname;
const filter = process.argv[2];
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts') && (!filter || f.includes(filter)))
  .sort();

let failed = 0;
for (const file of files) {
  process.stderr.write(`\n── ${file} ──\n`);
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(dir, file)], { stdio: 'inherit' });
    child.on('exit', (c) => resolve(c ?? 1));
  });
  if (code !== 0) {
    failed += 1;
    process.stderr.write(`${file} exited with ${code}\n`);
  }
}
process.exitCode = failed ? 1 : 0;
