import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { FerryError } from '../errors/ferry-error.js';
import { closeTree, mkdirPrivate, PRIVATE_DIR_MODE, type TreeRepair } from '../util/private-files.js';
import { agentDataLayout, type AgentDataLayout } from './state.js';

/**
 * The home folder holds one folder per installed instance, `ferry-agent-<n>/`, numbered in
 * installation order:
 *
 *   <home>/ferry-agent-1/config.json   identity (mode 0600; the secret is never logged)
 *                        data/          the Agent's state: outbox.db, solutions.db, schedules.db,
 *                                       failures/, checkpoints/ (agent/state.ts, each file versioned)
 *                        logs/          rolling log files
 *                        connectors/    installed Connector plugins
 *                        agent.pid      PID of the running `ferry agent run`, while it runs
 *
 * Everything in an instance folder is its Agent's alone (folders 0700, files 0600): the outbox and
 * failed-record store hold customer records, and debug logs may too. The home is 0700 when
 * created; `--user` installs open it to traversal only (0711) so a dedicated account reaches its
 * own instance folder.
 */

export const INSTANCE_PREFIX = 'ferry-agent-';
const INSTANCE_RE = /^ferry-agent-([1-9]\d{0,5})$/;

/** The instance's identity and where it belongs, written once by `ferry agent install`. */
export const InstanceConfig = z.object({
  agentId: z.string().min(1),
  agentSecret: z.string().min(1),
  orgId: z.number().int(),
  serviceUrl: z.url(),
  name: z.string().min(1),
  serviceName: z.string().min(1),
  fingerprint: z.string().min(8),
  installId: z.string().min(1),
  createdAt: z.string(),
});
export type InstanceConfig = Readonly<z.infer<typeof InstanceConfig>>;

/** The folders and files of one instance. */
export interface InstancePaths {
  readonly number: number;
  readonly serviceName: string;
  readonly dir: string;
  readonly config: string;
  readonly data: string;
  readonly logs: string;
  readonly connectors: string;
  readonly outbox: string;
  /** The local failed-record store's folder (`failed-records.db`), where the runner keeps them under `data/`. */
  readonly failures: string;
  /** Every file of `data/` (agent/state.ts). */
  readonly state: AgentDataLayout;
  readonly pidFile: string;
}

/**
 * The platform's service data location: `/var/lib/ferry/agents` for root on Linux,
 * `%ProgramData%\Ferry\agents` on Windows, else `~/.local/share/ferry/agents` (XDG).
 */
export function defaultHome(
  opts: { env?: Record<string, string | undefined>; platform?: NodeJS.Platform; uid?: number; homedir?: string } = {},
): string {
  const env = opts.env ?? {};
  const platform = opts.platform ?? process.platform;
  if (platform === 'win32') return path.win32.join(env['ProgramData'] ?? 'C:\\ProgramData', 'Ferry', 'agents');
  const uid = opts.uid ?? (typeof process.getuid === 'function' ? process.getuid() : -1);
  if (platform === 'linux' && uid === 0) return '/var/lib/ferry/agents';
  const dataHome = env['XDG_DATA_HOME'] || path.join(opts.homedir ?? os.homedir(), '.local', 'share');
  return path.join(dataHome, 'ferry', 'agents');
}

export function instancePaths(home: string, n: number): InstancePaths {
  const serviceName = `${INSTANCE_PREFIX}${n}`;
  const dir = path.join(home, serviceName);
  const data = path.join(dir, 'data');
  const state = agentDataLayout(data);
  return {
    number: n,
    serviceName,
    dir,
    config: path.join(dir, 'config.json'),
    data,
    logs: path.join(dir, 'logs'),
    connectors: path.join(dir, 'connectors'),
    outbox: state.outbox,
    failures: state.failures,
    state,
    pidFile: path.join(dir, 'agent.pid'),
  };
}

/** The instances in `home`, in installation order (folders without a config.json are half-installed and skipped). */
export function listInstances(home: string): InstancePaths[] {
  let names: string[];
  try {
    names = fs.readdirSync(home);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names
    .map((name) => INSTANCE_RE.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => instancePaths(home, Number(m[1])))
    .filter((p) => fs.existsSync(p.config))
    .sort((a, b) => a.number - b.number);
}

/**
 * Claims the next instance folder: one above the highest existing number, so numbers follow
 * installation order and are not reused while a later instance exists. `mkdir` without
 * `recursive` is atomic, so two installs at once never claim the same number.
 */
export function claimInstanceFolder(home: string): InstancePaths {
  mkdirPrivate(home);
  const taken = fs
    .readdirSync(home)
    .map((name) => INSTANCE_RE.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]));
  for (let n = Math.max(0, ...taken) + 1; ; n++) {
    const paths = instancePaths(home, n);
    try {
      fs.mkdirSync(paths.dir, { mode: PRIVATE_DIR_MODE });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw err;
    }
    for (const sub of [paths.data, paths.logs, paths.connectors]) fs.mkdirSync(sub, { mode: PRIVATE_DIR_MODE });
    return paths;
  }
}

/** Read and write bits of group and other: a home keeps its traverse bits (see {@link openHomeToServiceAccounts}). */
const HOME_OPEN_BITS = 0o066;

/**
 * Closes an instance folder, and everything in it, to other users of the host, as an Agent does
 * at start: group and other bits are removed below the instance folder (symbolic links such as
 * `connectors/node_modules` are neither followed nor changed; the walk is bounded), and group and
 * other read and write bits from the home when this process owns it. Paths are relative to the home.
 */
export function secureInstance(home: string, paths: InstancePaths): TreeRepair {
  const result = { repaired: [] as string[], failed: [] as Array<{ path: string; reason: string }>, truncated: false };
  if (process.platform === 'win32') return result;
  const stat = fs.lstatSync(home);
  const owned = typeof process.getuid !== 'function' || stat.uid === process.getuid();
  if (owned && stat.isDirectory() && (stat.mode & HOME_OPEN_BITS) !== 0) {
    try {
      fs.chmodSync(home, stat.mode & 0o7777 & ~HOME_OPEN_BITS);
      result.repaired.push('.');
    } catch (err) {
      result.failed.push({ path: '.', reason: (err as NodeJS.ErrnoException).code ?? String(err) });
    }
  }
  const inner = closeTree(paths.dir);
  const rel = (p: string) => (p === '.' ? paths.serviceName : path.join(paths.serviceName, p));
  result.repaired.push(...inner.repaired.map(rel));
  result.failed.push(...inner.failed.map((f) => ({ path: rel(f.path), reason: f.reason })));
  result.truncated = inner.truncated;
  return result;
}

/**
 * Lets other accounts pass through the home (0711: enter, not list), for an instance that runs as
 * a dedicated account while root owns the home; the instance folders themselves stay 0700.
 */
export function openHomeToServiceAccounts(home: string): void {
  if (process.platform === 'win32') return;
  fs.chmodSync(home, (fs.statSync(home).mode & 0o7777) | 0o011);
}

/** The default Agent name: the machine name for the first instance, `<machine> <n>` for later ones. */
export function defaultAgentName(machineName: string, n: number): string {
  return n <= 1 ? machineName : `${machineName} ${n}`;
}

/**
 * Picks the instance a command acts on: the one named by `instance` (`2` or `ferry-agent-2`), or
 * the only one installed.
 */
export function resolveInstance(home: string, instance?: string): InstancePaths {
  const all = listInstances(home);
  if (instance !== undefined) {
    const m = /^(?:ferry-agent-)?([1-9]\d{0,5})$/.exec(instance.trim());
    const found = m ? all.find((p) => p.number === Number(m[1])) : undefined;
    if (!found)
      throw new FerryError('AGT_NO_INSTANCE', `No Agent instance "${instance}" in ${home}.`, {
        details: { home, instance },
      });
    return found;
  }
  const [only, ...more] = all;
  if (!only)
    throw new FerryError(
      'AGT_NO_INSTANCE',
      `No Agent instance is installed in ${home}; run "ferry agent install" or pass --home.`,
      { details: { home } },
    );
  if (more.length > 0) {
    const names = all.map((p) => p.serviceName).join(', ');
    throw new FerryError(
      'AGT_INSTANCE_AMBIGUOUS',
      `Several Agent instances are installed in ${home} (${names}); pass --instance N.`,
      { details: { home } },
    );
  }
  return only;
}

/** Reads and validates an instance's config.json. */
export function readInstanceConfig(paths: InstancePaths): InstanceConfig {
  let raw: string;
  try {
    raw = fs.readFileSync(paths.config, 'utf8');
  } catch (err) {
    throw new FerryError('AGT_INSTANCE_CONFIG', `Cannot read ${paths.config}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new FerryError('AGT_INSTANCE_CONFIG', `${paths.config} is not JSON.`, { cause: err });
  }
  const parsed = InstanceConfig.safeParse(json);
  if (!parsed.success) {
    throw new FerryError(
      'AGT_INSTANCE_CONFIG',
      `${paths.config} is not a valid instance configuration: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}`,
    );
  }
  return Object.freeze(parsed.data);
}

/** Writes config.json with mode 0600 (it holds the secret): to a temporary file first, then renamed, so a crash never leaves half a file. */
export function writeInstanceConfig(paths: InstancePaths, config: InstanceConfig): void {
  const tmp = `${paths.config}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, paths.config);
}

/** The instance's config without its secret, for `ferry agent status` and log lines. */
export function publicInstanceConfig(config: InstanceConfig): Omit<InstanceConfig, 'agentSecret'> {
  const { agentSecret: _secret, ...rest } = config;
  return rest;
}
