/**
 * What the benchmarks read of their child processes (Linux /proc) and how they clean them up:
 * CPU time and resident set by PID, the same of the Agent's worker and the Service over a span,
 * and the Agent process groups a bench started.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { workerNodeFlags } from '../../src/cli/agent.commands.js';

/**
 * The Node flags a bench gives its Agent and child processes: `setting` (space-separated, from the
 * bench's environment variable) or, unset, the flags the Agent's worker starts with (workerNodeFlags).
 */
export function benchNodeFlags(setting: string | undefined): string[] {
  return setting !== undefined ? setting.split(' ').filter(Boolean) : workerNodeFlags([], {});
}

/**
 * The Node flags of a bench's child process: the Agent worker's, plus `--cpu-prof` into the folder
 * FERRY_BENCH_CPU_PROF names (one .cpuprofile per child, for Chrome's or VS Code's profiler).
 */
export function benchChildFlags(): string[] {
  const prof = process.env['FERRY_BENCH_CPU_PROF'];
  return [...benchNodeFlags(undefined), ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [])];
}

/** /proc's clock: 100 ticks a second. */
const TICK_MS = 10;

/** User + system CPU time of a process (all its threads), in ms; 0 when it is gone. */
export function procCpuMs(pid: number): number {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

/** Peak resident set of a process so far (VmHWM), or its resident set now (VmRSS), in MiB. */
export function procRssMiB(pid: number, which: 'VmHWM' | 'VmRSS' = 'VmHWM'): number {
  try {
    const m = new RegExp(`${which}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

/** CPU and peak RSS of the Agent's worker and the Service from now on (their VmHWM reset now). */
export function meter(pids: { agent: number; service: number }): () => Record<string, number> {
  const cpu0 = { agent: procCpuMs(pids.agent), service: procCpuMs(pids.service) };
  const rss0 = { agent: procRssMiB(pids.agent, 'VmRSS'), service: procRssMiB(pids.service, 'VmRSS') };
  for (const pid of [pids.agent, pids.service]) fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
  return () => ({
    agentCpuMs: procCpuMs(pids.agent) - cpu0.agent,
    agentRssBeforeMiB: rss0.agent,
    agentPeakRssMiB: procRssMiB(pids.agent),
    agentRssAfterMiB: procRssMiB(pids.agent, 'VmRSS'),
    serviceCpuMs: procCpuMs(pids.service) - cpu0.service,
    serviceRssBeforeMiB: rss0.service,
    servicePeakRssMiB: procRssMiB(pids.service),
    serviceRssAfterMiB: procRssMiB(pids.service, 'VmRSS'),
  });
}

/**
 * The resident set of the Agent's worker and the Service sampled every 250 ms until `stop()`: the
 * highest sample of each in every tenth of the time, so that memory that grows with the records
 * shows as tenths that keep rising rather than levelling off.
 */
export function rssTenths(pids: { agent: number; service: number }): { stop: () => Record<string, number[]> } {
  const samples: Array<{ agent: number; service: number }> = [];
  const timer = setInterval(
    () => samples.push({ agent: procRssMiB(pids.agent, 'VmRSS'), service: procRssMiB(pids.service, 'VmRSS') }),
    250,
  );
  return {
    stop() {
      clearInterval(timer);
      const tenths = (k: 'agent' | 'service'): number[] =>
        Array.from({ length: 10 }, (_, i) =>
          Math.max(
            0,
            ...samples
              .slice(Math.floor((i * samples.length) / 10), Math.floor(((i + 1) * samples.length) / 10))
              .map((x) => x[k]),
          ),
        );
      return { agentRssByTenthMiB: tenths('agent'), serviceRssByTenthMiB: tenths('service') };
    },
  };
}

/** The Agent processes a bench started (each the leader of its process group). */
export const agentProcs = new Set<ChildProcess>();

/** Kills every Agent process group this bench started, by PID. */
export function killAgents(): void {
  for (const p of agentProcs) {
    try {
      if (p.pid !== undefined) process.kill(-p.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  agentProcs.clear();
}
