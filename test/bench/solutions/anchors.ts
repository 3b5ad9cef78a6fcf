/**
 * The anchors: the same copy without the Service and the Agent, each in a child process
 * (solutions.bench.ts `--child <name>`), and psql \copy.
 */
import { spawn } from 'node:child_process';
import pino from 'pino';
import { BATCH, COLUMNS, CONNECTORS_DIR, ENTRY, ENV, NODE_FLAGS, ROWS, round } from './settings.js';

export interface ChildResult {
  case: string;
  rows: number;
  failed: number;
  /** The timed work inside the child. */
  ms: number;
  rowsPerSec: number;
  cpuMs: number;
  peakRssMiB: number;
  /** The child process from spawn to exit (start-up included). */
  processMs?: number;
}

export interface ChildConfig {
  sqliteFile?: string;
  pgUrl?: string;
  table?: string;
  /** The replication's checkpoint folder (the replicate case). */
  stateDir?: string;
  map?: unknown;
  connections?: Record<string, { connector: string; properties: Record<string, string> }>;
}

export function runChild(name: string, cfg: ChildConfig): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(process.execPath, [...NODE_FLAGS, '--import', 'tsx', ENTRY, '--child', name], {
      env: { ...ENV, FERRY_BENCH_CFG: JSON.stringify(cfg) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`child ${name} failed (${code})`));
      resolve({
        ...(JSON.parse(out.trim().split('\n').pop() ?? '{}') as ChildResult),
        processMs: round(performance.now() - t0),
      });
    });
  });
}

export async function child(name: string): Promise<void> {
  const cfg = JSON.parse(ENV['FERRY_BENCH_CFG'] ?? '{}') as ChildConfig;
  // The CPU and the time of the copy itself (module loading and the Connector host's start-up left out).
  let cpu0 = process.cpuUsage();
  let rows = 0;
  let failed = 0;
  let t0 = performance.now();
  if (name === 'transfer') {
    // replicate.bench.ts' transfer case: SQLite → PostgreSQL through the plugin host, query + Create, one batch read ahead.
    const { ConnectorHost } = await import('../../../src/connectors/host.js');
    const { transfer } = await import('../../../src/connectors/transfer.js');
    const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'warn' }) });
    await host.loadAll();
    const src = await host.open({
      connectorId: 'SQLite',
      connectionId: 'bench-sqlite',
      properties: { file: cfg.sqliteFile ?? '' },
    });
    const dst = await host.open({
      connectorId: 'PostgreSQL',
      connectionId: 'bench-pg',
      properties: { connectionString: cfg.pgUrl ?? '' },
    });
    await src.metadata();
    await dst.metadata();
    t0 = performance.now();
    cpu0 = process.cpuUsage();
    const stats = await transfer(src.query('rows', undefined, { batchSize: BATCH }), (b) =>
      dst.write('Create', cfg.table ?? 'rows', b),
    );
    rows = stats.written;
    failed = stats.failed;
    await host.close();
  } else if (name === 'replicate') {
    // What the Agent's RS run does (src/solutions/replicate-run.ts) without the Agent: replicate() over two open Connections.
    const { ConnectorHost } = await import('../../../src/connectors/host.js');
    const { replicate } = await import('../../../src/solutions/replicate.js');
    const { FileReplicationState } = await import('../../../src/solutions/replication-state.js');
    const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'warn' }) });
    await host.loadAll();
    // Timed like transfer(): from after both Connections are open with their metadata loaded (the
    // replication creates the target table and so reloads the target's metadata inside the time).
    const src = await host.open({
      connectorId: 'SQLite',
      connectionId: 'bench-sqlite',
      properties: { file: cfg.sqliteFile ?? '' },
    });
    const dst = await host.open({
      connectorId: 'PostgreSQL',
      connectionId: 'bench-pg',
      properties: { connectionString: cfg.pgUrl ?? '', schemas: 'public' },
    });
    await src.metadata();
    await dst.metadata();
    t0 = performance.now();
    cpu0 = process.cpuUsage();
    const state = new FileReplicationState(cfg.stateDir ?? '');
    const r = await replicate({
      source: src,
      target: dst,
      entities: [cfg.table ?? 'rows'],
      checkForBulk: true,
      signal: new AbortController().signal,
      state,
      log: pino({ level: 'warn' }),
    });
    if (r.fatal) throw new Error(r.fatal);
    rows = r.processed;
    failed = r.failed;
    await src.close();
    await dst.close();
    await host.close();
  } else if (name === 'engine') {
    // What `ferry map run` does: open the Map's Connections with the built-in plugins, compile, runMap, close.
    const { MapModel } = await import('../../../src/protocol/map.js');
    const { openRun } = await import('../../../src/maps/open-run.js');
    const { runMap } = await import('../../../src/maps/runtime/run.js');
    const model = MapModel.parse(cfg.map);
    t0 = performance.now();
    cpu0 = process.cpuUsage();
    const run = await openRun(model, {
      connectorsDir: CONNECTORS_DIR,
      log: pino({ level: 'silent' }),
      connections: cfg.connections ?? {},
    });
    try {
      const { stats } = await runMap(run.plan, { connections: run.connections });
      rows = stats.processed;
      failed = stats.failed;
    } finally {
      await run.close();
    }
  } else {
    throw new Error(`unknown child ${name}`);
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const result: ChildResult = {
    case: name,
    rows,
    failed,
    ms: round(ms),
    rowsPerSec: round((rows / ms) * 1000),
    cpuMs: round((cpu.user + cpu.system) / 1000),
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** psql \copy of the CSV into a table; the backend's work is in the PostgreSQL CPU. */
export function psqlCopy(pgUrl: string, table: string, csvFile: string): Promise<{ ms: number; rowsPerSec: number }> {
  const file = csvFile.replace(/'/g, "''");
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(
      'psql',
      [
        pgUrl,
        '-v',
        'ON_ERROR_STOP=1',
        '-c',
        `\\copy ${table} (${COLUMNS.join(', ')}) FROM '${file}' WITH (FORMAT csv, HEADER)`,
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    p.on('error', reject);
    p.on('exit', (code) => {
      const ms = performance.now() - t0;
      if (code === 0) resolve({ ms: round(ms), rowsPerSec: round((ROWS / ms) * 1000) });
      else reject(new Error(`psql failed (${code})`));
    });
  });
}
