import type { Logger } from 'pino';
import type { StatusMachine } from './status.js';
import type { WorkRegistry } from './work.js';

/** The exit code that tells the supervisor (`ferry agent run`) or systemd to start the worker again at once. */
export const RESTART_EXIT_CODE = 75;
/** The exit code of a configuration error (clone, refused credentials): restarting would not help. */
export const CONFIG_EXIT_CODE = 78;

/** Why the Agent restarts. */
export type RestartReason = 'user' | 'memory';

/** What a restart needs from the rest of the Agent. */
export interface RestartDeps {
  readonly status: StatusMachine;
  readonly work: WorkRegistry;
  readonly log: Logger;
  /** Gives the outbox a bounded chance to reach the Service before the process goes. */
  readonly flush: () => Promise<void>;
  /** Ends the process with the restart exit code (the composition root closes everything first). */
  readonly exit: (code: number) => void;
}

/**
 * Restart as SPEC.md's status table says: announce the waiting status, start no new work, wait
 * for running work (restartNow=false, and the memory limit) or interrupt it (restartNow=true),
 * report Restarting, then exit with {@link RESTART_EXIT_CODE} so that the supervisor replaces the
 * process. A second request while one is under way can only make it more urgent (interrupt).
 */
export class RestartController {
  private pending: Promise<void> | undefined;

  constructor(private readonly deps: RestartDeps) {}

  get restarting(): boolean {
    return this.pending !== undefined;
  }

  /** Starts a restart (or escalates the one under way); resolves when the process is about to exit. */
  request(reason: RestartReason, now: boolean): Promise<void> {
    const { status, work, log } = this.deps;
    if (now) work.interruptAll(reason === 'user' ? 'restart requested with restartNow=true' : 'memory limit');
    if (this.pending) return this.pending;
    const waiting = reason === 'user' ? 'WaitingToRestartAgentUserRequest' : 'WaitingToRestartAgentMemoryLimit';
    status.move(waiting, reason === 'user' ? `restart requested (restartNow=${now})` : 'memory limit exceeded');
    work.drain('waiting to restart');
    log.info({ reason, restartNow: now, runningWork: work.count }, 'restart: waiting for running work');
    this.pending = (async () => {
      await work.idle();
      status.move('Restarting', reason === 'user' ? 'restart requested' : 'memory limit exceeded');
      log.info({ reason }, 'restart: work done, restarting');
      await this.deps.flush();
      this.deps.exit(RESTART_EXIT_CODE);
    })();
    return this.pending;
  }
}
