import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { Backoff, sleep } from '../channel/backoff.js';
import { FerryError } from '../errors/ferry-error.js';
import type { InstancePaths } from './home.js';
import { CONFIG_EXIT_CODE, RESTART_EXIT_CODE } from './restart.js';
import { processAlive, processStartId } from '../util/process.js';
import { commitPending, CONNECTED_MESSAGE, nextVersion, rollBackPending } from './versions.js';

/** What {@link supervise} needs. */
export interface SupervisorOptions {
  readonly paths: InstancePaths;
  /** The worker's command line: executable and arguments. */
  readonly command: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** One line per life-cycle event (the supervisor has no pino logger: it must not hold the log files). */
  readonly say: (line: string) => void;
  /** Crash back-off: first delay and cap. */
  readonly crashBaseMs?: number;
  readonly crashMaxMs?: number;
  /** A worker that ran this long before crashing is not counted as crash-looping. */
  readonly stableMs?: number;
  /** After a forwarded stop signal, how long the worker may take before SIGKILL. */
  readonly killAfterMs?: number;
  /** Stops like SIGTERM when aborted (embedding and tests). */
  readonly signal?: AbortSignal;
  /**
   * The worker's arguments when it runs from an installed update (versions.ts) rather than the
   * package: given the update's CLI script. Without it, updates are not started.
   */
  readonly argsFor?: (main: string) => readonly string[];
  /** How long a new version may take to connect before the supervisor goes back to the previous one. */
  readonly probationMs?: number;
}

/**
 * `ferry agent run`: a small supervisor so that a restart really replaces the process, also
 * without systemd (the Cloud Agent container, tests, a terminal).
 *
 *   run ──spawn──▶ worker ──exit 75 (restart)──▶ spawn again at once
 *    │                   ──exit 78 (refused, clone)─▶ run exits 78 (systemd: RestartPreventExitStatus)
 *    │                   ──crash─▶ spawn again after capped back-off
 *    └─ SIGTERM/SIGINT ─▶ forwarded; run exits when the worker has stopped (SIGKILL after killAfterMs)
 *
 * An installed update (versions.ts) is what it spawns: a pending one on probation, committed once
 * the worker says it connected, rolled back (and the previous version spawned at once) when the
 * worker exits first or stays silent for probationMs.
 *
 * The worker holds an IPC channel to the supervisor and stops gracefully when it closes, so a
 * kill -9 of the supervisor does not leave an orphan Agent behind.
 */
export async function supervise(opts: SupervisorOptions): Promise<number> {
  const releasePid = acquirePidFile(opts.paths);
  const backoff = new Backoff(opts.crashBaseMs ?? 1_000, opts.crashMaxMs ?? 60_000);
  const stop = new AbortController();
  let child: ChildProcess | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) return;
    opts.say(`${signal} received; stopping the Agent worker`);
    stop.abort();
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child?.kill('SIGKILL'), opts.killAfterMs ?? 60_000);
    }
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const onAbort = () => onSignal('SIGTERM');
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      const startedAt = Date.now();
      const update = opts.argsFor ? nextVersion(opts.paths) : undefined;
      const args = update && opts.argsFor ? opts.argsFor(update.main) : opts.args;
      child = spawn(opts.command, [...args], { env: opts.env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      const worker = child;
      const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
        worker.once('exit', (code, signal) => resolve({ code, signal }));
        worker.once('error', () => resolve({ code: null, signal: null }));
      });
      opts.say(`worker started pid ${worker.pid ?? '?'}${update ? ` (version ${update.version})` : ''}`);
      const probation = update?.probation ? onProbation(worker, update.version, opts) : undefined;
      const { code, signal } = await exit;
      clearTimeout(killTimer);
      if (probation && !probation.passed() && !stop.signal.aborted) {
        const reason = probation.end() ?? `it exited (${signal ?? `exit ${code}`}) before it connected`;
        rollBackPending(opts.paths, reason);
        opts.say(`version ${update?.version ?? '?'} did not come up (${reason}); going back to the previous version`);
        backoff.reset();
        continue;
      }
      probation?.end();
      if (stop.signal.aborted) {
        opts.say(`worker stopped (${signal ?? code ?? '?'})`);
        return code === CONFIG_EXIT_CODE ? CONFIG_EXIT_CODE : 0;
      }
      if (code === RESTART_EXIT_CODE) {
        opts.say('worker asked for a restart; starting it again');
        backoff.reset();
        continue;
      }
      if (code === CONFIG_EXIT_CODE) {
        opts.say('worker stopped on a configuration error (see its log); not restarting');
        return CONFIG_EXIT_CODE;
      }
      if (code === 0) {
        opts.say('worker exited');
        return 0;
      }
      if (Date.now() - startedAt >= (opts.stableMs ?? 60_000)) backoff.reset();
      const delay = backoff.next();
      opts.say(`worker crashed (${signal ?? `exit ${code}`}); starting it again in ${delay} ms`);
      try {
        await sleep(delay, stop.signal);
      } catch {
        return 0;
      }
    }
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    opts.signal?.removeEventListener('abort', onAbort);
    releasePid();
  }
}

/**
 * Watches a worker of a new version: commits the version when it says it connected; kills it when
 * it has not within probationMs. `end()` stops watching and tells why it was killed, if it was.
 */
function onProbation(
  worker: ChildProcess,
  version: string,
  opts: SupervisorOptions,
): { passed: () => boolean; end: () => string | undefined } {
  let passed = false;
  let killedFor: string | undefined;
  const ms = opts.probationMs ?? 120_000;
  const onMessage = (message: unknown) => {
    if (passed || message !== CONNECTED_MESSAGE) return;
    passed = true;
    clearTimeout(timer);
    commitPending(opts.paths);
    opts.say(`version ${version} connected; it is the Agent's version now`);
  };
  const timer = setTimeout(() => {
    killedFor = `it did not connect within ${Math.round(ms / 1000)} s`;
    worker.kill('SIGKILL');
  }, ms);
  worker.on('message', onMessage);
  return {
    passed: () => passed,
    end: () => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      return killedFor;
    },
  };
}

/**
 * The PID in the instance's agent.pid when that process still runs, else undefined.
 *
 * agent.pid holds the PID on its first line and, where /proc tells, the process's start
 * identity ({@link processStartId}) on its second. A process that has exited but is not yet reaped
 * (a zombie, when whoever started `ferry agent run` does not wait for it) does not run; nor does a
 * process whose start identity differs from the one recorded: the PID was given to another process
 * after the Agent died without removing the file (kill -9, a power cut; the folder outlives a
 * reboot, and PIDs early in a boot repeat).
 */
export function runningPid(paths: InstancePaths): number | undefined {
  let lines: string[];
  try {
    lines = fs.readFileSync(paths.pidFile, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]?.trim());
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return undefined;
  const recorded = lines[1]?.trim();
  const current = recorded ? processStartId(pid) : undefined;
  // A file without the identity (written by an older version, or without /proc), or a process
  // /proc hides: the PID alone decides.
  return current !== undefined && current !== recorded ? undefined : pid;
}

/** Writes agent.pid, refusing when another live process holds it; returns the release function. */
function acquirePidFile(paths: InstancePaths): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const startId = processStartId(process.pid);
      fs.writeFileSync(paths.pidFile, `${process.pid}\n${startId ? `${startId}\n` : ''}`, { flag: 'wx', mode: 0o600 });
      return () => {
        try {
          if (fs.readFileSync(paths.pidFile, 'utf8').split('\n')[0]?.trim() === String(process.pid))
            fs.rmSync(paths.pidFile, { force: true });
        } catch {
          // Already gone (uninstalled while running): nothing to release.
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = runningPid(paths);
      if (pid !== undefined && pid !== process.pid) {
        throw new FerryError(
          'AGT_ALREADY_RUNNING',
          `The Agent instance ${paths.serviceName} already runs as process ${pid}.`,
          { details: { pid } },
        );
      }
      // A stale file: its process died without cleaning up, is a zombie, or its PID now names another process.
      fs.rmSync(paths.pidFile, { force: true });
    }
  }
  throw new FerryError('AGT_ALREADY_RUNNING', `Cannot claim ${paths.pidFile}.`);
}
