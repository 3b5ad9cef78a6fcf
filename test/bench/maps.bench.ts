/**
 * Map throughput against the drivers alone (docs/benchmarks.md "Maps"):
 *
 *   a  map-formulas     Query → Create with 3 formula mappings (+ the id copied), through compilePlan
 *                       and runMap, formulas in the sandbox (isolated-vm), bulk Create into SQLite
 *   b  map-copies       the same plan with plain field copies (the engine evaluates them in the
 *                       host: no sandbox call)
 *   c  loop             the limit: the csv plugin's query + the sqlite plugin's write, called
 *                       directly, the same three values computed in plain JS
 *   d  map-unsandboxed  plan (a) with its formulas run unsandboxed (RunOptions.engine): the same
 *                       function library and compiled programs, in the host's context, no isolate
 *   e  map-plain-js     plan (a) with hand-written plain-JS equivalents of the three formulas in
 *                       the host (less work than the formulas: no conversions, no exact decimals)
 *
 *   npx tsx test/bench/maps.bench.ts     → JSON on stdout, progress on stderr
 *
 * BENCH_RECORDS (default 1,000,000) records of 9 columns in a temporary folder. Each case runs in
 * its own child process, which samples process.memoryUsage().rss every 20 ms (peak RSS per case)
 * and, at the end, the heap in use after a full garbage collection. The cases run
 * BENCH_ROUNDS times (default 3), in a rotated order each round, so that ratios are taken between
 * runs side by side; the median of the rounds' ratios is reported. Then memory by row count: (a)
 * and (c) over BENCH_MEMORY_RECORDS (default "200000,1000000") records.
 * Batch 10,000 (the sqlite connector's bulkLimit); the target uses WAL, synchronous NORMAL.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import Database from 'better-sqlite3';
import pino from 'pino';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { ConnectorRecord } from '../../src/connectors/sdk.js';
import { compilePlan } from '../../src/maps/compiler/plan.js';
import type {
  CompiledFormulas,
  FormulaBatchResult,
  FormulaRecord,
  FormulaValue,
} from '../../src/maps/formula/evaluator.js';
import { LIBRARY_GLOBAL, librarySource } from '../../src/maps/formula/library/index.js';
import type { ErrorTuple } from '../../src/maps/formula/library/types.js';
import { packColumns, recordError, type FormulaInfo, type WireValue } from '../../src/maps/formula/wire.js';
import type { FormulaEvaluator } from '../../src/maps/runtime/context.js';
import { runMap } from '../../src/maps/runtime/run.js';

const SELF = fileURLToPath(import.meta.url);
const CONNECTORS_DIR = path.resolve(path.dirname(SELF), '../../connectors');
const RECORDS = Number(process.env['BENCH_RECORDS'] ?? 1_000_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const MEMORY_RECORDS = (process.env['BENCH_MEMORY_RECORDS'] ?? '200000,1000000')
  .split(',')
  .map(Number)
  .filter((x) => x > 0);
const ALL_CASES = ['loop', 'map-formulas', 'map-copies', 'map-unsandboxed', 'map-plain-js'];
/** BENCH_CASES=map-formulas,map-unsandboxed runs only those (the memory runs are unaffected). */
const CASES = process.env['BENCH_CASES']
  ? ALL_CASES.filter((c) => process.env['BENCH_CASES']?.split(',').includes(c))
  : ALL_CASES;
const BATCH = 10_000;
const FIELDS: Array<[string, string]> = [
  ['id', 'integer'],
  ['name', 'string'],
  ['email', 'string'],
  ['price', 'double'],
  ['qty', 'integer'],
  ['score', 'double'],
  ['active', 'boolean'],
  ['created', 'date'],
  ['updated', 'datetime'],
];
const DDL = 'CREATE TABLE items (id INTEGER PRIMARY KEY, name_upper TEXT, total REAL, label TEXT)';
/** The three computed targets: formulas for (a), their plain-JS equivalents for (c) and (d). */
const FORMULAS: Record<string, string> = {
  name_upper: 'UPPER(Q.name)',
  total: 'Q.price * Q.qty',
  label: 'Q.email & "/" & Q.qty',
};
const COPIES: Record<string, string> = { name_upper: 'Q.name', total: 'Q.price', label: 'Q.email' };
const JS: Record<string, (r: ConnectorRecord) => FormulaValue> = {
  id: (r) => r['id'] ?? null,
  name_upper: (r) => String(r['name']).toUpperCase(),
  total: (r) => Number(r['price']) * Number(r['qty']),
  label: (r) => `${String(r['email'])}/${String(r['qty'])}`,
};

interface Cfg {
  csvFolder: string;
  dbFile: string;
  records: number;
}
interface CaseResult {
  case: string;
  records: number;
  failed: number;
  ms: number;
  recordsPerSec: number;
  /** CPU time of the process (every thread: the sandbox's too) per record, in µs. */
  cpuUsPerRecord: number;
  peakRssMB: number;
  /** RSS when a tenth of the records were written, and at the end. */
  rssAtTenthMB: number;
  /** RSS after each tenth of the records. */
  rssByTenthMB: number[];
  rssAtEndMB: number;
  /** The heap in use after a full garbage collection at the end. */
  heapAfterGcMB: number;
}

const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

async function writeCsv(folder: string, n: number): Promise<void> {
  await fsp.mkdir(folder, { recursive: true });
  const ws = fs.createWriteStream(path.join(folder, 'rows.csv'));
  ws.write(`${FIELDS.map((f) => f[0]).join(',')}\n`);
  const day0 = Date.UTC(2020, 0, 1);
  let buf = '';
  for (let i = 1; i <= n; i++) {
    const created = new Date(day0 + (i % 3650) * 86_400_000).toISOString().slice(0, 10);
    const updated = new Date(day0 + i * 37_000).toISOString();
    buf += `${i},name_${i},user${i}@example.com,${(i % 100_000) / 100},${i % 1000},${((i * 0.37) % 1000).toFixed(3)},${i % 2 === 0},${created},${updated}\n`;
    if (buf.length > 1 << 20) {
      if (!ws.write(buf)) await once(ws, 'drain');
      buf = '';
    }
  }
  ws.end(buf);
  await once(ws, 'finish');
  const schema = {
    entities: { 'rows.csv': { fields: FIELDS.map(([name, type]) => ({ name, type, primaryKey: name === 'id' })) } },
  };
  await fsp.writeFile(path.join(folder, 'schema.json'), JSON.stringify(schema));
}

function freshDb(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) fs.rmSync(f, { force: true });
  const db = new Database(file);
  db.exec(DDL);
  db.close();
}

function mapModel(mappings: Record<string, string>): unknown {
  return {
    version: '3.0',
    name: 'bench',
    batchSize: BATCH,
    blocks: [
      {
        blockId: '22222222-2222-4222-8222-000000000001',
        name: 'Q',
        blockType: 'Query',
        action: 'Query',
        connectionId: 'src',
        entity: 'rows',
      },
      {
        blockId: '22222222-2222-4222-8222-000000000002',
        name: 'W',
        blockType: 'Create',
        action: 'Create',
        connectionId: 'db',
        entity: 'items',
        fieldMappings: [
          { targetField: 'id', targetFormula: 'Q.id' },
          ...Object.entries(mappings).map(([targetField, targetFormula]) => ({ targetField, targetFormula })),
        ],
      },
    ],
  };
}

/** Hand-written plain JavaScript in the host in place of the formulas: each by its target field. */
const plainJsEvaluator: FormulaEvaluator = {
  evaluate(compiled: CompiledFormulas, records: readonly FormulaRecord[]): Promise<FormulaBatchResult> {
    const fns = compiled.formulas.map((f) => JS[f.key] ?? (() => null));
    const values = records.map((ctx) => {
      const r = ctx['Q'] as ConnectorRecord;
      return fns.map((fn) => fn(r));
    });
    return Promise.resolve({ values, errors: [] });
  },
};

type RunFn = (
  data: [number, ...WireValue[][]],
  now: number,
  s0: number,
  s1: number,
  s2: number,
  s3: number,
  only: number,
) => [FormulaValue[][], ErrorTuple[]];

/**
 * The formulas unsandboxed: the same function library and the same compiled programs as the
 * sandbox runs, evaluated in the host's own context, the rows handed over as arrays (no isolate,
 * no JSON across).
 */
function unsandboxedEvaluator(): FormulaEvaluator {
  const make = vm.runInThisContext(`(function (__name) {\n${librarySource()}\nreturn ${LIBRARY_GLOBAL};\n})`) as (
    name: (f: unknown) => unknown,
  ) => { maxText: number; loadLookupTables(json: string): void };
  const L = make((f) => f);
  L.maxText = 10_000_000;
  L.loadLookupTables('[]');
  const programs = new WeakMap<CompiledFormulas, RunFn>();
  const program = (compiled: CompiledFormulas): RunFn => {
    let run = programs.get(compiled);
    if (run) return run;
    const input = 'const data = JSON.parse(input.join(""));';
    const output = /const json = JSON\.stringify\(result\);[\s\S]*?return parts;/;
    if (!compiled.source.includes(input) || !output.test(compiled.source))
      throw new Error('the generated program changed: update unsandboxedEvaluator');
    const direct = compiled.source.replace(input, 'const data = input;').replace(output, 'return result;');
    run = (vm.runInThisContext(`(function (${LIBRARY_GLOBAL}) { return ${direct}; })`) as (lib: unknown) => RunFn)(L);
    programs.set(compiled, run);
    return run;
  };
  return {
    evaluate(compiled: CompiledFormulas, records: readonly FormulaRecord[]): Promise<FormulaBatchResult> {
      const { n, cols } = packColumns(records, compiled.fields);
      const [out, tuples] = program(compiled)([n, ...cols], Date.now(), 1, 2, 3, 4, -1);
      const values = Array.from({ length: n }, (_, i) => out.map((col) => col[i] ?? null));
      return Promise.resolve({ values, errors: tuples.map((t) => recordError(compiled.info[t[1]] as FormulaInfo, t)) });
    },
  };
}

function runChild(name: string, cfg: Cfg): Promise<CaseResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(
      process.execPath,
      [
        '--expose-gc',
        ...(process.env['BENCH_CPU_PROF'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_CPU_PROF']}`] : []),
        '--import',
        'tsx',
        SELF,
        '--child',
        name,
      ],
      { env: { ...process.env, FERRY_BENCH_CFG: JSON.stringify(cfg) }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as CaseResult)
        : reject(new Error(`case ${name} failed (${code})`)),
    );
  });
}

async function child(name: string): Promise<void> {
  const cfg = JSON.parse(process.env['FERRY_BENCH_CFG'] ?? '{}') as Cfg;
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'warn' }) });
  await host.loadAll();
  const src = await host.open({ connectorId: 'CSV', connectionId: 'bench-csv', properties: { folder: cfg.csvFolder } });
  const dst = await host.open({
    connectorId: 'SQLite',
    connectionId: 'bench-sqlite',
    properties: { file: cfg.dbFile, journalMode: 'WAL', synchronous: 'NORMAL' },
  });
  const metadata = { src: await src.metadata(), db: await dst.metadata() };
  let records = 0;
  let failed = 0;
  const byTenth: number[] = [];
  const progress = (done: number): void => {
    while (byTenth.length < 10 && done >= ((byTenth.length + 1) * cfg.records) / 10)
      byTenth.push(process.memoryUsage().rss);
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  if (name === 'loop') {
    for await (const batch of src.query('rows', undefined, { batchSize: BATCH })) {
      const out = batch.map((r): ConnectorRecord => ({
        id: r['id'] ?? null,
        name_upper: JS['name_upper']?.(r) ?? null,
        total: JS['total']?.(r) ?? null,
        label: JS['label']?.(r) ?? null,
      }));
      const res = await dst.write('Create', 'items', out);
      records += res.length;
      failed += res.filter((x) => !x.ok).length;
      progress(records);
    }
  } else {
    const plan = compilePlan(mapModel(name === 'map-copies' ? COPIES : FORMULAS), metadata);
    const { stats } = await runMap(plan, {
      connections: new Map([
        ['src', src],
        ['db', dst],
      ]),
      ...(name === 'map-unsandboxed'
        ? { engine: unsandboxedEvaluator() }
        : name === 'map-plain-js'
          ? { engine: plainJsEvaluator }
          : {}),
      onProgress: (p) => progress(p.processed),
    });
    records = stats.processed;
    failed = stats.failed;
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const rssAtEnd = process.memoryUsage().rss;
  peak = Math.max(peak, rssAtEnd);
  clearInterval(sampler);
  await src.close();
  await dst.close();
  await host.close();
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const mb = (b: number): number => Math.round(b / 2 ** 20);
  const result: CaseResult = {
    case: name,
    records,
    failed,
    ms: Math.round(ms),
    recordsPerSec: Math.round((records / ms) * 1000),
    cpuUsPerRecord: Math.round(((cpu.user + cpu.system) / records) * 1000) / 1000,
    peakRssMB: mb(peak),
    rssAtTenthMB: mb(byTenth[0] ?? 0),
    rssByTenthMB: byTenth.map(mb),
    rssAtEndMB: mb(rssAtEnd),
    heapAfterGcMB: gc ? mb(process.memoryUsage().heapUsed) : Number.NaN,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

async function runCase(name: string, cfg: Cfg): Promise<CaseResult> {
  freshDb(cfg.dbFile);
  log(`${name} (${cfg.records} records)…`);
  const r = await runChild(name, cfg);
  const db = new Database(cfg.dbFile, { readonly: true });
  const rows = (db.prepare('SELECT count(*) AS n FROM items').get() as { n: number }).n;
  db.close();
  if (rows !== cfg.records) throw new Error(`${name} wrote ${rows} rows, not ${cfg.records}`);
  log(JSON.stringify(r));
  return r;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const r3 = (x: number): number => Math.round(x * 1000) / 1000;
const load = (): number[] => os.loadavg().map((x) => Math.round(x * 100) / 100);

async function main(): Promise<void> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-bench-maps-'));
  try {
    const cfg: Cfg = { csvFolder: path.join(dir, 'csv'), dbFile: path.join(dir, 'target.db'), records: RECORDS };
    log(`writing ${RECORDS} records`);
    await writeCsv(cfg.csvFolder, RECORDS);
    const loadBefore = load();
    const rounds: Array<Record<string, CaseResult>> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const results: Record<string, CaseResult> = {};
      for (let k = 0; k < CASES.length; k++) {
        const name = CASES[(k + round) % CASES.length] as string;
        results[name] = await runCase(name, cfg);
      }
      rounds.push(results);
    }
    const rate = (r: Record<string, CaseResult>, n: string): number => r[n]?.recordsPerSec ?? Number.NaN;
    const ratios = (a: string, b: string): { median: number; rounds: number[] } => {
      const each = rounds.map((r) => r3(rate(r, a) / rate(r, b)));
      return { median: r3(median(each)), rounds: each };
    };
    const cpuRatios = (a: string, b: string): { median: number; rounds: number[] } => {
      const each = rounds.map((r) => r3((r[b]?.cpuUsPerRecord ?? Number.NaN) / (r[a]?.cpuUsPerRecord ?? Number.NaN)));
      return { median: r3(median(each)), rounds: each };
    };
    const cases = Object.fromEntries(
      CASES.map((n) => [
        n,
        {
          recordsPerSec: rounds.map((r) => rate(r, n)),
          medianRecordsPerSec: median(rounds.map((r) => rate(r, n))),
          cpuUsPerRecord: rounds.map((r) => r[n]?.cpuUsPerRecord ?? Number.NaN),
          peakRssMB: rounds.map((r) => r[n]?.peakRssMB ?? Number.NaN),
          heapAfterGcMB: rounds.map((r) => r[n]?.heapAfterGcMB ?? Number.NaN),
        },
      ]),
    );
    const loadAfterRounds = load();
    const memory: Array<{
      records: number;
      case: string;
      peakRssMB: number;
      rssByTenthMB: number[];
      heapAfterGcMB: number;
      recordsPerSec: number;
    }> = [];
    for (const count of MEMORY_RECORDS) {
      const mcfg: Cfg =
        count === RECORDS ? cfg : { csvFolder: path.join(dir, `csv-${count}`), dbFile: cfg.dbFile, records: count };
      if (count !== RECORDS) await writeCsv(mcfg.csvFolder, count);
      for (const name of ['map-formulas', 'loop']) {
        const r = await runCase(name, mcfg);
        memory.push({
          records: count,
          case: name,
          peakRssMB: r.peakRssMB,
          rssByTenthMB: r.rssByTenthMB,
          heapAfterGcMB: r.heapAfterGcMB,
          recordsPerSec: r.recordsPerSec,
        });
      }
    }
    const out = {
      records: RECORDS,
      batch: BATCH,
      rounds: ROUNDS,
      loadAverage: { before: loadBefore, afterRounds: loadAfterRounds, end: load() },
      cpus: os.cpus().length,
      node: process.version,
      cases,
      ratios: {
        'a/d (sandboxed / unsandboxed)': ratios('map-formulas', 'map-unsandboxed'),
        'a/c (formulas / loop)': ratios('map-formulas', 'loop'),
        'b/c (copies / loop)': ratios('map-copies', 'loop'),
        'd/c (unsandboxed / loop)': ratios('map-unsandboxed', 'loop'),
        'a/e (formulas / hand-written JS)': ratios('map-formulas', 'map-plain-js'),
      },
      /** The same by CPU time (every thread), which the machine's load disturbs much less than the clock. */
      cpuRatios: {
        'a/d (sandboxed / unsandboxed)': cpuRatios('map-formulas', 'map-unsandboxed'),
        'a/c (formulas / loop)': cpuRatios('map-formulas', 'loop'),
      },
      memory,
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

const i = process.argv.indexOf('--child');
if (i >= 0) await child(process.argv[i + 1] ?? '');
else await main();
