/**
 * Map throughput against the drivers alone (docs/benchmarks.md "Maps"):
 *
 *   a  map-formulas     Query → Create with 3 formula mappings (+ the id copied), through compilePlan
 *                       and runMap, formulas in the sandbox (isolated-vm), bulk Create into SQLite
 *   b  map-copies       the same plan with plain field copies (each still a formula: the runtime
 *                       sends every mapping through the sandbox)
 *   c  loop             the limit: the csv plugin's query + the sqlite plugin's write, called
 *                       directly, the same three values computed in plain JS
 *   d  map-unsandboxed  plan (a) with the engine swapped (RunOptions.engine) for plain JavaScript
 *                       equivalents of the three formulas in the host
 *
 *   npx tsx test/bench/maps.bench.ts     → JSON on stdout, progress on stderr
 *
 * BENCH_RECORDS (default 1,000,000) records of 9 columns in a temporary folder. Each case runs in
 * its own child process, which samples process.memoryUsage().rss every 20 ms (peak RSS per case).
 * Batch 10,000 (the sqlite connector's bulkLimit); the target uses WAL, synchronous NORMAL.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pino from 'pino';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { ConnectorRecord } from '../../src/connectors/sdk.js';
import { compilePlan } from '../../src/maps/compiler/plan.js';
import type { CompiledFormulas, FormulaBatchResult, FormulaRecord, FormulaValue } from '../../src/maps/formula/evaluator.js';
import type { FormulaEvaluator } from '../../src/maps/runtime/context.js';
import { runMap } from '../../src/maps/runtime/run.js';

const SELF = fileURLToPath(import.meta.url);
const CONNECTORS_DIR = path.resolve(path.dirname(SELF), '../../connectors');
const RECORDS = Number(process.env['BENCH_RECORDS'] ?? 1_000_000);
const BATCH = 10_000;
const FIELDS: Array<[string, string]> = [
  ['id', 'integer'], ['name', 'string'], ['email', 'string'], ['price', 'double'], ['qty', 'integer'],
  ['score', 'double'], ['active', 'boolean'], ['created', 'date'], ['updated', 'datetime'],
];
const DDL = 'CREATE TABLE items (id INTEGER PRIMARY KEY, name_upper TEXT, total REAL, label TEXT)';
/** The three computed targets: formulas for (a), their plain-JS equivalents for (c) and (d). */
const FORMULAS: Record<string, string> = { name_upper: 'UPPER(Q.name)', total: 'Q.price * Q.qty', label: 'Q.email & "/" & Q.qty' };
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
}
interface CaseResult {
  case: string;
  records: number;
  failed: number;
  ms: number;
  recordsPerSec: number;
  peakRssMB: number;
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
  const schema = { entities: { 'rows.csv': { fields: FIELDS.map(([name, type]) => ({ name, type, primaryKey: name === 'id' })) } } };
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
      { blockId: '22222222-2222-4222-8222-000000000001', name: 'Q', blockType: 'Query', action: 'Query', connectionId: 'src', entity: 'rows' },
      {
        blockId: '22222222-2222-4222-8222-000000000002', name: 'W', blockType: 'Create', action: 'Create', connectionId: 'db', entity: 'items',
        fieldMappings: [{ targetField: 'id', targetFormula: 'Q.id' }, ...Object.entries(mappings).map(([targetField, targetFormula]) => ({ targetField, targetFormula }))],
      },
    ],
  };
}

/** Plain JavaScript in the host in place of the sandbox: each formula by its target field. */
const hostEvaluator: FormulaEvaluator = {
  evaluate(compiled: CompiledFormulas, records: readonly FormulaRecord[]): Promise<FormulaBatchResult> {
    const fns = compiled.formulas.map((f) => JS[f.key] ?? (() => null));
    const values = records.map((ctx) => {
      const r = ctx['Q'] as ConnectorRecord;
      return fns.map((fn) => fn(r));
    });
    return Promise.resolve({ values, errors: [] });
  },
};

function runChild(name: string, cfg: Cfg): Promise<CaseResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', SELF, '--child', name], { env: { ...process.env, FERRY_BENCH_CFG: JSON.stringify(cfg) }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as CaseResult) : reject(new Error(`case ${name} failed (${code})`))));
  });
}

async function child(name: string): Promise<void> {
  const cfg = JSON.parse(process.env['FERRY_BENCH_CFG'] ?? '{}') as Cfg;
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'warn' }) });
  await host.loadAll();
  const src = await host.open({ connectorId: 'CSV', connectionId: 'bench-csv', properties: { folder: cfg.csvFolder } });
  const dst = await host.open({ connectorId: 'SQLite', connectionId: 'bench-sqlite', properties: { file: cfg.dbFile, journalMode: 'WAL', synchronous: 'NORMAL' } });
  const metadata = { src: await src.metadata(), db: await dst.metadata() };
  let records = 0;
  let failed = 0;
  const t0 = performance.now();
  if (name === 'loop') {
    for await (const batch of src.query('rows', undefined, { batchSize: BATCH })) {
      const out = batch.map((r): ConnectorRecord => ({ id: r['id'] ?? null, name_upper: JS['name_upper']?.(r) ?? null, total: JS['total']?.(r) ?? null, label: JS['label']?.(r) ?? null }));
      const res = await dst.write('Create', 'items', out);
      records += res.length;
      failed += res.filter((x) => !x.ok).length;
    }
  } else {
    const plan = compilePlan(mapModel(name === 'map-copies' ? COPIES : FORMULAS), metadata);
    const { stats } = await runMap(plan, { connections: new Map([['src', src], ['db', dst]]), ...(name === 'map-unsandboxed' ? { engine: hostEvaluator } : {}) });
    records = stats.processed;
    failed = stats.failed;
  }
  const ms = performance.now() - t0;
  peak = Math.max(peak, process.memoryUsage().rss);
  clearInterval(sampler);
  await src.close();
  await dst.close();
  await host.close();
  const result: CaseResult = { case: name, records, failed, ms: Math.round(ms), recordsPerSec: Math.round((records / ms) * 1000), peakRssMB: Math.round(peak / 2 ** 20) };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

async function main(): Promise<void> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-bench-maps-'));
  try {
    const cfg: Cfg = { csvFolder: path.join(dir, 'csv'), dbFile: path.join(dir, 'target.db') };
    log(`writing ${RECORDS} records`);
    await writeCsv(cfg.csvFolder, RECORDS);
    const results: Record<string, CaseResult> = {};
    for (const name of ['loop', 'map-formulas', 'map-copies', 'map-unsandboxed']) {
      freshDb(cfg.dbFile);
      log(`${name}…`);
      const r = await runChild(name, cfg);
      const db = new Database(cfg.dbFile, { readonly: true });
      const rows = (db.prepare('SELECT count(*) AS n FROM items').get() as { n: number }).n;
      db.close();
      if (rows !== RECORDS) throw new Error(`${name} wrote ${rows} rows, not ${RECORDS}`);
      results[name] = r;
      log(JSON.stringify(r));
    }
    const rate = (n: string): number => results[n]?.recordsPerSec ?? Number.NaN;
    const ratio = (a: string, b: string): number => Math.round((rate(a) / rate(b)) * 1000) / 1000;
    const out = {
      records: RECORDS,
      batch: BATCH,
      loadAverage: os.loadavg().map((x) => Math.round(x * 100) / 100),
      cpus: os.cpus().length,
      node: process.version,
      cases: results,
      ratios: { 'a/c (formulas / loop)': ratio('map-formulas', 'loop'), 'b/c (copies / loop)': ratio('map-copies', 'loop'), 'a/d (sandboxed / unsandboxed)': ratio('map-formulas', 'map-unsandboxed') },
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

const i = process.argv.indexOf('--child');
if (i >= 0) await child(process.argv[i + 1] ?? '');
else await main();
