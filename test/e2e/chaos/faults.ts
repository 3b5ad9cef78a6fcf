/**
 * The faults of the chaos trials and the seeded randomness that chooses them. Every fault is what
 * an operator could do to a running installation from outside:
 *
 *   agent-kill       kill -9 of the Agent (the supervisor and its worker: the whole process group),
 *                    then `ferry agent run` again, as systemd would
 *   service-kill     kill -9 of the Service (`ferry service start`), then started again on the same
 *                    port and data folder
 *   target-drop      pg_terminate_backend() of every session of the target database but the
 *                    checker's own: each connection the Agent holds there breaks mid-statement
 *   target-refuse    the target database refuses new connections for a few seconds
 *                    (ALTER DATABASE … ALLOW_CONNECTIONS false, which refuses superusers too, with
 *                    SQLSTATE 55000) and its sessions are terminated as above; then it accepts again
 */
import pg from 'pg';
import { until, type ServiceUnderTest } from '../agent/harness.js';
import { runAgent, untilReady, type AgentUnderTest } from '../solutions/faults-helpers.js';
import type { ServiceProcess } from './service-process.js';

export const FAULT_KINDS = ['agent-kill', 'service-kill', 'target-drop', 'target-refuse'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** A small seeded generator (mulberry32): the same seed gives the same trials, moments and faults. */
export interface Random {
  readonly seed: number;
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform in [lo, hi). */
  between(lo: number, hi: number): number;
  pick<T>(xs: readonly T[]): T;
  /** A copy of `xs` in a random order. */
  shuffle<T>(xs: readonly T[]): T[];
}

export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const between = (lo: number, hi: number): number => lo + (hi - lo) * next();
  return {
    seed,
    next,
    between,
    pick: (xs) => xs[Math.floor(next() * xs.length)] as (typeof xs)[number],
    shuffle: (xs) => {
      const out = [...xs];
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [out[i], out[j]] = [out[j] as (typeof out)[number], out[i] as (typeof out)[number]];
      }
      return out;
    },
  };
}

/** The seed of FERRY_CHAOS_SEED, else a new one (printed by the caller so that a failure can be replayed). */
export function chaosSeed(env: NodeJS.ProcessEnv = process.env): number {
  const given = env['FERRY_CHAOS_SEED'];
  if (given !== undefined && given !== '') {
    const n = Number(given);
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff)
      throw new Error(`FERRY_CHAOS_SEED must be an integer from 0 to 4294967295, not ${given}`);
    return n;
  }
  return Math.floor(Math.random() * 0xffffffff);
}

/** What the faults act on. */
export interface FaultTargets {
  sut: ServiceProcess;
  home: string;
  agent: AgentUnderTest;
  /** The environment the Agent runs with (given again when it is started after a kill). */
  agentEnv: Record<string, string>;
  /** A client of the server holding the target database, connected to another database. */
  admin: pg.Client;
  /** The target database's name. */
  database: string;
  /** Sessions of the target database that are the harness' own and stay (the checker's). */
  keepPids: () => number[];
}

/** What a fault did, for the trial's log. */
export interface FaultRecord {
  kind: FaultKind;
  /** When it struck, in ms since the trial's runs were started. */
  atMs: number;
  /** Rows in the trial's target tables when it struck (all tables together). */
  atRows: number;
  /** Sessions terminated (target faults), or the outage's length in ms (target-refuse). */
  detail: string;
  /** ms from the fault until everything was back (the Agent Running, the Service answering, the database accepting). */
  recoveryMs: number;
}

/** Terminates every session of the target database except the harness' own; answers how many. */
export async function terminateTargetSessions(
  t: Pick<FaultTargets, 'admin' | 'database' | 'keepPids'>,
): Promise<number> {
  const { rows } = await t.admin.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND NOT (pid = ANY($2::int[]))) t',
    [t.database, t.keepPids()],
  );
  return rows[0]?.n ?? 0;
}

/** Sets whether the target database accepts new connections. */
export async function allowConnections(t: Pick<FaultTargets, 'admin' | 'database'>, allow: boolean): Promise<void> {
  await t.admin.query(
    `ALTER DATABASE ${pg.escapeIdentifier(t.database)} ALLOW_CONNECTIONS ${allow ? 'true' : 'false'}`,
  );
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Strikes with `kind` and brings everything back: answers once the Agent is Running with its
 * Connectors, the Service answers and the target database accepts connections again.
 * `refuseMs` is how long target-refuse refuses.
 */
export async function strike(
  kind: FaultKind,
  t: FaultTargets,
  opts: { refuseMs: number },
): Promise<{ detail: string; recoveryMs: number }> {
  const t0 = Date.now();
  let detail = '';
  switch (kind) {
    case 'agent-kill': {
      detail = `pid ${t.agent.proc.pid}`;
      process.kill(-t.agent.proc.pid, 'SIGKILL');
      await t.agent.proc.exited;
      const since = new Date().toISOString();
      t.agent.proc = runAgent(t.home, t.agent.instance, t.agentEnv);
      await untilReady(t.sut, t.agent.agentId, since);
      break;
    }
    case 'service-kill': {
      detail = `pid ${t.sut.proc?.pid ?? '?'}`;
      await t.sut.kill();
      await t.sut.start();
      await untilConnected(t.sut, t.agent.agentId);
      break;
    }
    case 'target-drop': {
      detail = `${await terminateTargetSessions(t)} sessions`;
      break;
    }
    case 'target-refuse': {
      await allowConnections(t, false);
      try {
        const n = await terminateTargetSessions(t);
        await sleep(opts.refuseMs);
        detail = `${n} sessions, ${opts.refuseMs} ms refused`;
      } finally {
        await allowConnections(t, true);
      }
      break;
    }
  }
  return { detail, recoveryMs: Date.now() - t0 };
}

/** Waits until the Service shows the Agent's channel open again (a restarted Service knows no channel until the Agent reconnects). */
export async function untilConnected(sut: ServiceUnderTest, agentId: string): Promise<void> {
  await until(
    `agent ${agentId} connected`,
    async () => {
      const res = await sut.request<{ isConnected: boolean }>('GET', `/v1/orgs/${sut.orgId}/agents/${agentId}`);
      return res.status === 200 && res.body.isConnected ? true : undefined;
    },
    90_000,
  );
  await untilReady(sut, agentId);
}
