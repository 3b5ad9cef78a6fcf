/** Real `ferry agent run` processes, installed and started against the Service under test. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { ServiceUnderTest } from '../../e2e/agent/harness.js';
import { agentProcs } from '../proc.js';
import { harness } from './service.js';
import { CPU_PROF, ENV, NODE_FLAGS } from './settings.js';
import { BUILT_IN_CONNECTORS } from '../../helpers/built-in-connectors.js';

export interface Agent {
  agentId: string;
  home: string;
  instance: number;
  proc: AgentProc;
  /** The worker process (the Agent itself; `ferry agent run` is its supervisor). */
  workerPid: number;
}

/** A `ferry agent run` process of this bench (its own process group, killed by PID at the end). */
export interface AgentProc {
  readonly pid: number;
  output(): string;
  readonly exited: Promise<number | string>;
  /** SIGTERM (the graceful stop: a --cpu-prof profile is written), then the exit. */
  stop(): Promise<number | string>;
}

/**
 * `ferry agent run` as test/e2e/agent/harness.ts starts it, but with BENCH_NODE_FLAGS (and
 * --cpu-prof when asked) on Node's command line: the supervisor starts its worker with the same
 * flags (they are not all allowed in NODE_OPTIONS). The log level is the production default.
 */
export async function spawnAgent(home: string, instance: number): Promise<AgentProc> {
  const { ROOT } = await harness();
  const flags = [...NODE_FLAGS, ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(CPU_PROF)}`] : [])];
  const p = spawn(
    process.execPath,
    [...flags, '--import', 'tsx', 'src/cli/main.ts', 'agent', 'run', '--home', home, '--instance', String(instance)],
    {
      cwd: ROOT,
      // The Agent's production settings (heartbeat, ping, back-off, watchdog), at the info log level.
      env: { ...ENV, FERRY_AGENT_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  agentProcs.add(p);
  let out = '';
  p.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  p.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | string>((resolve) => {
    p.once('exit', (code, signal) => {
      agentProcs.delete(p);
      resolve(code ?? signal ?? -1);
    });
  });
  return {
    pid: p.pid ?? -1,
    output: () => out,
    exited,
    async stop() {
      if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
      return exited;
    },
  };
}

/** Starts `ferry agent run` for an installed instance and waits until it is Running with its built-in Connectors. */
export async function runAgent(sut: ServiceUnderTest, home: string, instance: number, agentId: string): Promise<Agent> {
  const h = await harness();
  const proc = await spawnAgent(home, instance);
  try {
    await h.untilStatus(sut, agentId, 'Running', 180_000);
    await h.until(
      'the built-in connectors on the Agent',
      async () => {
        const res = await sut.request<{ installedConnectors: unknown[] }>(
          'GET',
          `/v1/orgs/${sut.orgId}/agents/${agentId}`,
        );
        return res.body.installedConnectors.length === BUILT_IN_CONNECTORS ? true : undefined;
      },
      180_000,
    );
  } catch (err) {
    process.stderr.write(proc.output());
    throw err;
  }
  const workerPid = Number([...proc.output().matchAll(/worker started pid (\d+)/g)].at(-1)?.[1] ?? -1);
  return { agentId, home, instance, proc, workerPid };
}

export async function installAgent(
  sut: ServiceUnderTest,
  home: string,
): Promise<{ agentId: string; instance: number }> {
  const h = await harness();
  const inst = await h.install(sut, home);
  return { agentId: inst.agentId, instance: Number(/(\d+)$/.exec(inst.serviceName)?.[1] ?? 1) };
}
