import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { FastifyBaseLogger } from 'fastify';

/** What the REST layer needs from whoever runs Cloud Agents. */
export interface CloudAgentHost {
  /** False with FERRY_CLOUD_AGENTS=off: no Cloud Agents are provisioned or run here. */
  readonly enabled: boolean;
  /** Runs the Cloud Agent whose record now exists (installs it first). */
  start(agentId: string): void;
  /** Stops the Cloud Agent and removes its folder. */
  remove(agentId: string): Promise<void>;
}

export interface CloudAgentSupervisorOptions {
  /** Cloud Agent homes go to `<dataDir>/cloud-agents/<agentId>/`. */
  dataDir: string;
  /** Executable and leading arguments of the `ferry` CLI, e.g. `[process.execPath, '<pkg>/dist/src/cli/main.js']`. */
  command: readonly [string, ...string[]];
  log: FastifyBaseLogger;
  /** A single-use installation key bound to the Cloud Agent (its registration re-keys the record). */
  issueKey(agentId: string): Promise<string>;
  /** Added to the child's environment (which otherwise holds no FERRY_* setting of the Service). */
  env?: Record<string, string>;
  /** After SIGTERM, how long a Cloud Agent may take to stop before SIGKILL (default 15 s). */
  stopGraceMs?: number;
  /** Restart back-off after an unexpected exit: first delay and cap (default 1 s, 60 s). */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** A run that lasted this long resets the back-off (default 60 s). */
  stableMs?: number;
}

/** `ferry agent run` exits with this when its configuration is refused (clone, bad credentials): reinstall. */
const CONFIG_EXIT_CODE = 78;
const INSTANCE = 'ferry-agent-1';
/** Variables a Cloud Agent inherits from the Service; secrets (FERRY_MASTER_KEY, database URLs, passwords) stay behind. */
const INHERITED_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LC_ALL',
  'TZ',
  'TMPDIR',
  'TEMP',
  'TMP',
  'SystemRoot',
  'NODE_EXTRA_CA_CERTS',
];

/**
 * Runs each Cloud Agent as a child process of the Service (the embedded set-up):
 *
 *   start ─▶ no config.json? ─▶ `ferry agent install --home H --key K --service URL --no-service` (K bound to the record)
 *                 │ yes                    │ fails: back-off, new key, again
 *                 ▼                        ▼
 *           `ferry agent run --home H --instance ferry-agent-1` (FERRY_AGENT_CLOUD=true)
 *                 │ exits unexpectedly: capped exponential back-off, run again
 *                 │ exits 78 (configuration refused): remove the instance, install again
 *                 └ stop/remove/Service close: SIGTERM, wait, SIGKILL
 */
export class CloudAgentSupervisor implements CloudAgentHost {
  readonly enabled = true;
  readonly #opts: CloudAgentSupervisorOptions;
  readonly #log: FastifyBaseLogger;
  readonly #agents = new Map<string, CloudAgentProcess>();
  #serviceUrl: string | undefined;
  #closed = false;

  constructor(opts: CloudAgentSupervisorOptions) {
    this.#opts = opts;
    this.#log = opts.log.child({ component: 'cloud-agents' });
  }

  /** The URL Cloud Agents reach this Service at; known once it listens. Starts the agents waiting for it. */
  setServiceUrl(url: string): void {
    this.#serviceUrl = url;
    for (const p of this.#agents.values()) p.run(url);
  }

  homeOf(agentId: string): string {
    if (!/^[0-9a-fA-F-]{1,64}$/.test(agentId)) throw new Error(`Not an Agent ID: ${agentId}`);
    return path.join(this.#opts.dataDir, 'cloud-agents', agentId);
  }

  start(agentId: string): void {
    if (this.#closed || this.#agents.has(agentId)) return;
    const p = new CloudAgentProcess(agentId, this.homeOf(agentId), this.#opts, this.#log.child({ agentId }));
    this.#agents.set(agentId, p);
    if (this.#serviceUrl) p.run(this.#serviceUrl);
  }

  async remove(agentId: string): Promise<void> {
    const p = this.#agents.get(agentId);
    this.#agents.delete(agentId);
    await p?.stop();
    await fs.promises.rm(this.homeOf(agentId), { recursive: true, force: true });
  }

  /** The PID of the Cloud Agent's current process, if one runs. */
  pidOf(agentId: string): number | undefined {
    return this.#agents.get(agentId)?.pid;
  }

  /** The Cloud Agents this process runs. */
  running(): string[] {
    return [...this.#agents.keys()];
  }

  /** Stops every Cloud Agent, their folders kept, and stays able to start them again (another replica took them). */
  async stopAll(): Promise<void> {
    const all = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.all(all.map((p) => p.stop()));
  }

  /** Stops every Cloud Agent (Service shutdown); their folders stay for the next start. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#agents.values()].map((p) => p.stop()));
    this.#agents.clear();
  }
}

/** A stand-in for hosts that run no Cloud Agents (FERRY_CLOUD_AGENTS=off). */
export const NO_CLOUD_AGENTS: CloudAgentHost = {
  enabled: false,
  start: () => undefined,
  remove: async () => undefined,
};

class CloudAgentProcess {
  #child: ChildProcess | undefined;
  #stopping = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #delayMs: number;

  constructor(
    readonly agentId: string,
    readonly home: string,
    readonly opts: CloudAgentSupervisorOptions,
    readonly log: FastifyBaseLogger,
  ) {
    this.#delayMs = opts.backoffBaseMs ?? 1_000;
  }

  get pid(): number | undefined {
    return this.#child && this.#child.exitCode === null && this.#child.signalCode === null
      ? this.#child.pid
      : undefined;
  }

  run(serviceUrl: string): void {
    this.#loop ??= this.#supervise(serviceUrl).catch((err: unknown) =>
      this.log.error({ err }, 'cloud agent supervision failed'),
    );
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const killed = await Promise.race([
        exited.then(() => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), this.opts.stopGraceMs ?? 15_000))),
      ]);
      clearTimeout(timer);
      if (killed) {
        this.log.warn({ pid: child.pid }, 'cloud agent did not stop in time: killed');
        child.kill('SIGKILL');
        await exited;
      }
    }
    await this.#loop;
  }

  async #supervise(serviceUrl: string): Promise<void> {
    const instanceDir = path.join(this.home, INSTANCE);
    const config = path.join(instanceDir, 'config.json');
    while (!this.#stopping) {
      if (!fs.existsSync(config)) {
        await fs.promises.rm(instanceDir, { recursive: true, force: true });
        await fs.promises.mkdir(this.home, { recursive: true, mode: 0o700 });
        const key = await this.opts.issueKey(this.agentId);
        const { code } = await this.#spawn(
          ['agent', 'install', '--home', this.home, '--key', key, '--service', serviceUrl, '--no-service'],
          'install',
        );
        if (this.#stopping) return;
        if (code !== 0 || !fs.existsSync(config)) {
          this.log.warn({ code, retryInMs: this.#delayMs }, 'cloud agent installation failed; retrying');
          await this.#backoff();
          continue;
        }
        this.log.info('cloud agent installed');
      } else if (!pointAt(config, serviceUrl, this.log)) {
        continue;
      }
      const startedAt = Date.now();
      const { code, signal } = await this.#spawn(['agent', 'run', '--home', this.home, '--instance', INSTANCE], 'run');
      if (this.#stopping) return;
      if (Date.now() - startedAt >= (this.opts.stableMs ?? 60_000)) this.#delayMs = this.opts.backoffBaseMs ?? 1_000;
      if (code === CONFIG_EXIT_CODE) {
        this.log.warn({ code }, 'cloud agent configuration refused; reinstalling');
        await fs.promises.rm(instanceDir, { recursive: true, force: true });
      }
      this.log.warn({ code, signal, retryInMs: this.#delayMs }, 'cloud agent exited unexpectedly; restarting');
      await this.#backoff();
    }
  }

  #spawn(args: string[], what: 'install' | 'run'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const [command, ...lead] = this.opts.command;
    const env: Record<string, string> = {};
    for (const name of INHERITED_ENV) {
      const value = process.env[name];
      if (value !== undefined) env[name] = value;
    }
    Object.assign(env, { FERRY_AGENT_CLOUD: 'true' }, this.opts.env);
    // The IPC channel closes when the Service dies, even by SIGKILL: `ferry agent run` then stops by itself.
    const child = spawn(command, [...lead, ...args], { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    this.#child = child;
    const log = this.log.child({ step: what, pid: child.pid });
    for (const stream of [child.stdout, child.stderr]) {
      if (stream)
        readline
          .createInterface({ input: stream })
          .on('line', (line) => log.debug({ line: line.slice(0, 2000) }, 'cloud agent output'));
    }
    log.info('cloud agent process started');
    return new Promise((resolve) => {
      child.once('error', (err) => {
        log.error({ err }, 'cloud agent process could not start');
        resolve({ code: null, signal: null });
      });
      child.once('exit', (code, signal) => {
        log.info({ code, signal }, 'cloud agent process exited');
        resolve({ code, signal });
      });
    });
  }

  /** Waits the current back-off delay (a stop ends the wait at once) and doubles it up to the cap. */
  async #backoff(): Promise<void> {
    const delay = this.#delayMs;
    this.#delayMs = Math.min(this.#delayMs * 2, this.opts.backoffMaxMs ?? 60_000);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, delay);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#wake = undefined;
  }
}

/**
 * Keeps the instance's serviceUrl on the URL this Service listens at now (the port can change
 * between starts). The Service owns its Cloud Agents' folders; nothing else in config.json changes.
 */
function pointAt(configFile: string, serviceUrl: string, log: FastifyBaseLogger): boolean {
  try {
    const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>;
    if (config['serviceUrl'] === serviceUrl) return true;
    config['serviceUrl'] = serviceUrl;
    const tmp = `${configFile}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
    fs.renameSync(tmp, configFile);
    log.info({ serviceUrl }, 'cloud agent pointed at the Service URL');
    return true;
  } catch (err) {
    log.warn({ err }, 'cloud agent config.json unreadable; reinstalling');
    fs.rmSync(path.dirname(configFile), { recursive: true, force: true });
    return false;
  }
}
