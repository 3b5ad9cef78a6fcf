/**
 * Real processes on loopback for the Agent e2e tests: a Service that can be stopped and started
 * again on the same port and data folder, the real `ferry` CLI as child processes, and polling
 * with deadlines (never sleep-then-assert). Every process started here is tracked and killed by
 * PID in {@link killAll}.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { buildService, type FerryService } from '../../../service/build-service.js';
import { parseServiceConfig } from '../../../service/config.js';

export const ROOT = path.resolve(import.meta.dirname, '../../..');
export const ADMIN = { email: 'admin@ferry.test', password: 'Admin-password-1' };

/** Agent settings that make the life cycle quick to observe. */
export const FAST_AGENT_ENV: Record<string, string> = {
  FERRY_AGENT_LOG_LEVEL: 'debug',
  FERRY_AGENT_PING_MS: '1000',
  FERRY_AGENT_REQUEST_TIMEOUT_MS: '5000',
  FERRY_AGENT_BACKOFF_BASE_MS: '100',
  FERRY_AGENT_BACKOFF_MAX_MS: '1000',
  FERRY_AGENT_STOP_GRACE_MS: '5000',
  FERRY_AGENT_WATCHDOG_MS: '200',
};

/** Polls `probe` until it returns a value other than undefined, or throws after `ms`. */
export async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  ms = 45_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${ms} ms waiting for ${what}${last instanceof Error ? `; last error: ${last.message}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

// ── the Service ────────────────────────────────────────────────────────────────

export interface ServiceUnderTest {
  readonly dataDir: string;
  url: string;
  port: number;
  orgId: number;
  service: FerryService | undefined;
  /** Starts (again) on the same data folder and, after the first start, the same port. */
  start(): Promise<void>;
  /** Stops the Service; the data folder stays. */
  stop(): Promise<void>;
  request<T = unknown>(
    method: string,
    pathAndQuery: string,
    opts?: { body?: unknown; from?: string },
  ): Promise<{ status: number; body: T; raw: Buffer; headers: http.IncomingHttpHeaders }>;
  /** Rows of the store (SQLite), read with a separate read-only connection. */
  query<T>(sql: string, ...params: unknown[]): T[];
  dispose(): Promise<void>;
}

export function serviceUnderTest(): ServiceUnderTest {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-agent-e2e-'));
  const agent = new http.Agent({ keepAlive: false });
  const sut: ServiceUnderTest = {
    dataDir,
    url: '',
    port: 0,
    orgId: 0,
    service: undefined,
    async start() {
      const config = parseServiceConfig(
        {},
        {
          port: sut.port,
          host: '127.0.0.1',
          dataDir,
          adminEmail: ADMIN.email,
          adminPassword: ADMIN.password,
          bootstrapAllow: '127.0.0.1-127.0.0.9,::1',
          rateLimitPerMinute: 1_000_000,
          rateLimitPerDay: 100_000_000,
          logLevel: 'silent',
          agentHeartbeatMs: 200,
          heartbeatLateAfter: 1.5,
          heartbeatFailedAfter: 3,
          cloudAgents: 'off',
        },
      );
      const service = await buildService(config, { logger: pino({ level: 'silent' }) });
      sut.url = await service.listen();
      sut.port = Number(new URL(sut.url).port);
      sut.orgId = service.bootstrap.orgId;
      sut.service = service;
    },
    async stop() {
      const s = sut.service;
      sut.service = undefined;
      await s?.close();
    },
    request: (method, pathAndQuery, opts = {}) => adminRequest(sut.url, method, pathAndQuery, opts, agent),
    query<T>(sql: string, ...params: unknown[]): T[] {
      const db = new Database(path.join(dataDir, 'ferry.db'), { readonly: true, fileMustExist: true });
      try {
        return db.prepare(sql).all(...params) as T[];
      } finally {
        db.close();
      }
    },
    async dispose() {
      await sut.stop();
      agent.destroy();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return sut;
}

/** One API call as the administrator; on a connection of its own unless `agent` keeps them (a Service may be killed between calls). */
export function adminRequest<T>(
  base: string,
  method: string,
  pathAndQuery: string,
  opts: { body?: unknown; from?: string } = {},
  agent: http.Agent | false = false,
): Promise<{ status: number; body: T; raw: Buffer; headers: http.IncomingHttpHeaders }> {
  const headers: Record<string, string> = {
    authorization: `Basic ${Buffer.from(`${ADMIN.email}:${ADMIN.password}`).toString('base64')}`,
  };
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  if (payload !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL(pathAndQuery, base),
      { method, headers, agent, ...(opts.from ? { localAddress: opts.from } : {}) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          const text = raw.toString('utf8');
          const body = /json/.test(res.headers['content-type'] ?? '') && text ? (JSON.parse(text) as unknown) : text;
          resolve({ status: res.statusCode ?? 0, body: body as T, raw, headers: res.headers });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** A single-use installation key of the bootstrap Organization, through the REST API. */
export async function provisionKey(sut: ServiceUnderTest): Promise<string> {
  const res = await sut.request<{ agentInstallationKey: string }>(
    'POST',
    `/v1/orgs/${sut.orgId}/agents/provision_onpremise_agent`,
  );
  if (res.status !== 200) throw new Error(`provision answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.agentInstallationKey;
}

/** The Agent as the REST API shows it. */
export interface AgentView {
  id: string;
  name: string;
  status: string;
  serviceName: string;
  machineName: string;
  lastContactTime: string | null;
  lastStartTime: string | null;
  lastShutdownTime: string | null;
}

export async function getAgent(sut: ServiceUnderTest, agentId: string): Promise<AgentView> {
  const res = await sut.request<AgentView>('GET', `/v1/orgs/${sut.orgId}/agents/${agentId}`);
  if (res.status !== 200) throw new Error(`GET agent answered ${res.status}`);
  return res.body;
}

/** Polls the Agent until its status is `status`. */
export function untilStatus(sut: ServiceUnderTest, agentId: string, status: string, ms = 45_000): Promise<AgentView> {
  return until(
    `agent ${agentId} to be ${status}`,
    async () => {
      const agent = await getAgent(sut, agentId);
      return agent.status === status ? agent : undefined;
    },
    ms,
  );
}

/** The reports the Service stored for an Agent, oldest first. */
export function reportsOf(
  sut: ServiceUnderTest,
  agentId: string,
): Array<{ messageId: string; kind: string; status: string | undefined }> {
  return sut
    .query<{ message_id: string; kind: string; body: string }>(
      'SELECT message_id, kind, body FROM agent_reports WHERE agent_id = ? ORDER BY received_at, rowid',
      agentId,
    )
    .map((r) => ({
      messageId: r.message_id,
      kind: r.kind,
      status: (JSON.parse(r.body) as { report: { status?: string } }).report.status,
    }));
}

// ── the CLI as child processes ─────────────────────────────────────────────────

const children = new Set<ChildProcess>();

/** A running child process of the `ferry` CLI, with its output collected. */
export interface Proc {
  readonly child: ChildProcess;
  readonly pid: number;
  output(): string;
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or the signal's name). */
  readonly exited: Promise<number | string>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | string>;
}

/** Starts `ferry <args>` from the source tree. */
export function ferry(args: string[], env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...FAST_AGENT_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so that a test can kill the supervisor and its worker together.
    detached: true,
  });
  children.add(child);
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve(code ?? signal ?? -1);
    });
  });
  return {
    child,
    pid: child.pid ?? -1,
    output: () => out,
    async waitFor(pattern, ms = 30_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const m = out.match(pattern);
        if (m) return m;
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`exited (${child.exitCode ?? child.signalCode}) before ${pattern}; output:\n${out}`);
        if (Date.now() > deadline) throw new Error(`no match for ${pattern} within ${ms} ms; output:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Runs `ferry <args>` to its end. */
export async function ferryDone(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | string; output: string }> {
  const p = ferry(args, env);
  const code = await p.exited;
  return { code, output: p.output() };
}

/** Kills every process group this harness started (supervisors and their workers), by PID. */
export function killAll(): void {
  for (const child of children) {
    if (child.pid === undefined) continue;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  children.clear();
}

/** The worker PIDs a `ferry agent run` announced so far. */
export function workerPids(proc: Proc): number[] {
  return [...proc.output().matchAll(/worker started pid (\d+)/g)].map((m) => Number(m[1]));
}

/** Installs an instance through the real CLI and returns its agent ID (from config.json). */
export async function install(
  sut: ServiceUnderTest,
  home: string,
  extra: string[] = [],
): Promise<{ agentId: string; serviceName: string; dir: string; output: string }> {
  const key = await provisionKey(sut);
  const { code, output } = await ferryDone([
    'agent',
    'install',
    '--home',
    home,
    '--key',
    key,
    '--service',
    sut.url,
    '--no-service',
    ...extra,
  ]);
  if (code !== 0) throw new Error(`install exited ${code}:\n${output}`);
  const m = /as (ferry-agent-\d+) in (\S+)/.exec(output);
  if (!m?.[1] || !m[2]) throw new Error(`unexpected install output:\n${output}`);
  const config = JSON.parse(fs.readFileSync(path.join(m[2], 'config.json'), 'utf8')) as { agentId: string };
  return { agentId: config.agentId, serviceName: m[1], dir: m[2], output };
}
