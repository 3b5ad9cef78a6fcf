import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { unpackFiles, writeFiles, type PackageFile } from '../connectors/package.js';
import { FerryError, isFerryError, toErrorData } from '../errors/ferry-error.js';
import type { ReportBody, UpdateAgentCommand } from '../protocol/channel.js';
import type { InstancePaths } from './home.js';
import { downloadPackage } from './package-download.js';
import { RESTART_EXIT_CODE } from './restart.js';
import type { StatusMachine } from './status.js';
import { setPending, stagingDirs, versionMain, versionsDir } from './versions.js';
import type { WorkRegistry } from './work.js';

export interface AgentUpdaterDeps {
  readonly paths: InstancePaths;
  /** The version this process runs. */
  readonly version: string;
  /** The package folder this process runs from (its `node_modules` is shared when the lock file is the same). */
  readonly packageRoot: string;
  readonly work: WorkRegistry;
  readonly status: StatusMachine;
  readonly log: Logger;
  readonly authorization: string;
  /** Hands a report to the durable outbox. */
  readonly report: (body: ReportBody) => void;
  /** Gives the outbox a bounded chance to reach the Service before the process goes. */
  readonly flush: () => Promise<void>;
  /** Ends the process with the restart exit code (the composition root closes everything first). */
  readonly exit: (code: number) => void;
  readonly downloadTimeoutMs?: number;
  /** How long `npm ci` may take when the new version needs other modules. */
  readonly modulesTimeoutMs?: number;
}

const PAUSE = 'updating the agent';
const PREFIX = 'package/';

/**
 * Updates this Agent to the version the Service names, as SPEC.md's status table says: no new
 * Solution starts (due runs wait), running ones finish, then the new version is installed beside
 * the running one and the process restarts into it. The supervisor starts it on probation and goes
 * back to this version by itself when it does not connect (supervisor.ts, versions.ts).
 *
 *   updateAgent ─▶ WaitingToUpdateAgent (running work) ─▶ UpdatingAgent: download (bearer) ─▶ SHA-256
 *     ─▶ unpack into versions/.incoming-… ─▶ node_modules (shared, or npm ci) ─▶ `main.js version` answers
 *     ─▶ versions/<v>-…, state.json pending ─▶ AgentUpdating ─▶ exit 75 ─▶ supervisor starts it
 *   any failure before the exit: `agentUpdate` Failed report, Running again on this version.
 */
export class AgentUpdater {
  #pending: Promise<void> | undefined;

  constructor(private readonly deps: AgentUpdaterDeps) {}

  get updating(): boolean {
    return this.#pending !== undefined;
  }

  /** Takes the update in hand; one at a time: a second command while one runs is refused. */
  request(command: UpdateAgentCommand): void {
    if (this.#pending) {
      throw new FerryError(
        'AGT_UPDATE_FAILED',
        `An update of this Agent is already under way; ${command.version} was not started. Ask again once it has ended.`,
        { details: { version: command.version } },
      );
    }
    this.#pending = this.#update(command).finally(() => (this.#pending = undefined));
  }

  async #update(command: UpdateAgentCommand): Promise<void> {
    const { work, status, log } = this.deps;
    work.pause(PAUSE);
    let restarting = false;
    try {
      if (work.count > 0) {
        status.move('WaitingToUpdateAgent', `update to ${command.version} waits for running work`);
        log.info({ runningWork: work.count, version: command.version }, 'agent update: waiting for running work');
        await work.idle();
      }
      status.move('UpdatingAgent', `updating the Agent from ${this.deps.version} to ${command.version}`);
      const dir = await this.#install(command);
      setPending(this.deps.paths, { version: command.version, dir });
      status.move('AgentUpdating', `restarting into ${command.version}`);
      log.info({ from: this.deps.version, to: command.version, dir }, 'agent update installed; restarting into it');
      restarting = true;
      await this.deps.flush();
      this.deps.exit(RESTART_EXIT_CODE);
    } catch (err) {
      const error = isFerryError(err)
        ? err
        : new FerryError(
            'AGT_UPDATE_FAILED',
            `The Agent update failed: ${err instanceof Error ? err.message : String(err)}`,
          );
      log.error({ err: error, version: command.version }, 'agent update failed; going on with this version');
      this.deps.report({
        kind: 'agentUpdate',
        version: command.version,
        status: 'Failed',
        at: new Date().toISOString(),
        error: toErrorData(error),
      });
    } finally {
      if (!restarting) {
        work.resume(PAUSE);
        status.move('Running', 'agent update ended');
      }
    }
  }

  /** Downloads, checks and unpacks the version; answers its folder. Nothing is left behind when it throws. */
  async #install(command: UpdateAgentCommand): Promise<string> {
    const data = await downloadPackage({
      url: command.packageUrl,
      authorization: this.deps.authorization,
      size: command.size,
      sha256: command.sha256,
      timeoutMs: this.deps.downloadTimeoutMs ?? 300_000,
      what: 'Agent package',
    });
    const files = packageFiles(unpackFiles(data), command.version);
    fs.mkdirSync(versionsDir(this.deps.paths), { recursive: true, mode: 0o700 });
    const { incoming, final } = stagingDirs(this.deps.paths, command.version);
    try {
      await writeFiles(incoming, files);
      await this.#modules(incoming);
      checkStarts(incoming, command.version);
      fs.renameSync(incoming, final);
      return final;
    } catch (err) {
      fs.rmSync(incoming, { recursive: true, force: true });
      throw err;
    }
  }

  /**
   * The new version's modules: the running version's folder when both lock files are the same
   * (the usual case: an update of Ferry's own code), else `npm ci --omit=dev` in the new folder.
   */
  async #modules(dir: string): Promise<void> {
    const ours = path.join(this.deps.packageRoot, 'package-lock.json');
    const theirs = path.join(dir, 'package-lock.json');
    const modules = path.join(this.deps.packageRoot, 'node_modules');
    if (sameFile(ours, theirs) && fs.existsSync(modules)) {
      fs.symlinkSync(fs.realpathSync(modules), path.join(dir, 'node_modules'), 'junction');
      return;
    }
    this.deps.log.info({ dir }, 'agent update: the new version needs other modules; running npm ci');
    await run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], dir, this.deps.modulesTimeoutMs ?? 600_000);
  }
}

/** The package's files without the `package/` folder npm packs into, checked to be a Ferry of `version`. */
function packageFiles(files: readonly PackageFile[], version: string): PackageFile[] {
  const inside = files
    .filter((f) => f.name.startsWith(PREFIX) && f.name.length > PREFIX.length)
    .map((f) => ({ name: f.name.slice(PREFIX.length), data: f.data }));
  const manifest = inside.find((f) => f.name === 'package.json');
  let pkg: { name?: unknown; version?: unknown } = {};
  try {
    pkg = manifest ? (JSON.parse(manifest.data.toString('utf8')) as typeof pkg) : {};
  } catch {
    // Reported below as not a Ferry package.
  }
  if (pkg.name !== 'ferry' || !inside.some((f) => f.name === 'dist/src/cli/main.js'))
    throw new FerryError(
      'AGT_UPDATE_FAILED',
      'The Agent package is not a Ferry package (package/package.json, dist/).',
    );
  if (pkg.version !== version)
    throw new FerryError(
      'AGT_UPDATE_FAILED',
      `The Agent package holds version ${String(pkg.version)}, not the ${version} the Service named.`,
    );
  return inside;
}

/** The new version must at least load and tell its version before the running one gives way to it. */
function checkStarts(dir: string, version: string): void {
  const res = spawnSync(process.execPath, [versionMain({ version, dir }), 'version'], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  const said = res.stdout?.trim();
  if (res.status !== 0 || said !== version) {
    const why = res.error?.message ?? (res.stderr?.trim().split('\n').slice(-3).join(' ') || `exit ${res.status}`);
    throw new FerryError('AGT_UPDATE_FAILED', `The new Agent version does not start (${version}): ${why}`, {
      details: { version },
    });
  }
}

function sameFile(a: string, b: string): boolean {
  try {
    return fs.readFileSync(a).equals(fs.readFileSync(b));
  } catch {
    return false;
  }
}

function run(command: string, args: string[], cwd: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], timeout: timeoutMs });
    let err = '';
    child.stderr?.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-2000)));
    child.once('error', (e) =>
      reject(new FerryError('AGT_UPDATE_FAILED', `${command} could not start: ${e.message}`, { cause: e })),
    );
    child.once('exit', (code, signal) =>
      code === 0
        ? resolve()
        : reject(
            new FerryError(
              'AGT_UPDATE_FAILED',
              `${command} ${args.join(' ')} failed (${signal ?? code}): ${err.trim()}`,
            ),
          ),
    );
  });
}
