/** The solutions benchmark's settings (solutions.bench.ts names each), its data's shape and small helpers. */
import os from 'node:os';
import path from 'node:path';
import { benchNodeFlags } from '../proc.js';

/** solutions.bench.ts: the entry, which the anchors' child processes run too (`--child`). */
export const ENTRY = path.resolve(import.meta.dirname, '../solutions.bench.ts');
export const CONNECTORS_DIR = path.resolve(import.meta.dirname, '../../../connectors');
export const ENV = process.env;
export const ROWS = Number(ENV['BENCH_ROWS'] ?? 1_000_000);
export const ROUNDS = Number(ENV['BENCH_ROUNDS'] ?? 3);
export const STARTS = Number(ENV['BENCH_STARTS'] ?? 20);
/**
 * The failing run reads the first BENCH_FAILING_ROWS rows (default all of them) in
 * BENCH_FAILING_ROUNDS rounds (default BENCH_ROUNDS); its rate is compared with the clean run's.
 * Fewer rows keep a run short where refused records are slow to write.
 */
export const FAILING_ROWS = Number(ENV['BENCH_FAILING_ROWS'] ?? ROWS);
export const FAILING_ROUNDS = Number(ENV['BENCH_FAILING_ROUNDS'] ?? ROUNDS);
export const SCENARIOS = new Set(
  (ENV['BENCH_SCENARIOS'] ?? `rs,is,failing,latency${ENV['BENCH_SCHEDULES'] === '1' ? ',schedules' : ''}`)
    .split(',')
    .filter(Boolean),
);
export const SCHED = {
  solutions: Number(ENV['BENCH_SCHEDULE_SOLUTIONS'] ?? 1000),
  agents: Number(ENV['BENCH_SCHEDULE_AGENTS'] ?? 10),
  minutes: Number(ENV['BENCH_SCHEDULE_MINUTES'] ?? 10),
  /** 0: one Service in this process; N: N replica processes on PostgreSQL behind HAProxy. */
  replicas: Number(ENV['BENCH_SCHEDULE_REPLICAS'] ?? 0),
};
export const NODE_FLAGS = benchNodeFlags(ENV['BENCH_NODE_FLAGS']);
export const CPU_PROF = ENV['BENCH_AGENT_CPU_PROF'];
/**
 * BENCH_RS_SOURCE_INDEX=1: an index on julianday(updated_at) at the source — the sqlite Connector
 * orders datetimes by julianday() — so the replication's ordered first read needs no sort.
 */
export const RS_SOURCE_INDEX = ENV['BENCH_RS_SOURCE_INDEX'] === '1';
export const ADMIN_URL =
  ENV['FERRY_BENCH_DATABASE_URL'] ?? ENV['FERRY_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
/** The bulkLimit of the csv, sqlite and postgres Connectors: what the Maps and the transfer use. */
export const BATCH = 10_000;
/**
 * How often History is polled for a run's end. Each poll costs the Service (in this process) about
 * 2–3 ms of CPU, which the run's Agent shares the two cores with: 100 ms keeps that under 3% of a
 * core, and the end is seen at most 100 ms late (the rate to the execution's own stop is reported too).
 */
export const POLL_MS = 100;

export const CSV_CONNECTOR = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
export const POSTGRES_CONNECTOR = '18cc2a91-e317-4972-9c24-be9fc63775ab';
export const SQLITE_CONNECTOR = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';

export const FIELDS = [
  ['id', 'integer'],
  ['name', 'string'],
  ['email', 'string'],
  ['amount', 'decimal'],
  ['qty', 'integer'],
  ['price', 'double'],
  ['active', 'boolean'],
  ['created', 'date'],
  ['updated_at', 'datetime'],
  ['note', 'string'],
] as const;
export const COLUMNS = FIELDS.map((f) => f[0]);
export const SQLITE_DDL = `CREATE TABLE rows (id INTEGER PRIMARY KEY, name TEXT, email TEXT, amount DECIMAL(12,2), qty INTEGER,
  price REAL, active BOOLEAN, created DATE, updated_at DATETIME, note TEXT)`;
export const PG_COLUMNS = `id integer PRIMARY KEY, name text, email text, amount numeric(12,2), qty integer, price double precision,
  active boolean, created date, updated_at timestamp, note text`;

export const log = (msg: string): void =>
  void process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
export const r3 = (n: number): number => Math.round(n * 1000) / 1000;
export const round = (n: number): number => Math.round(n);
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  if (s.length === 0) return 0;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? 0;
}
export const loadavg = (): number[] => os.loadavg().map((l) => Math.round(l * 100) / 100);
