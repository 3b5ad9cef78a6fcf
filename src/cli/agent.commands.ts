/**
 * The `ferry agent …` commands. Every one takes `--home DIR` (or FERRY_AGENT_HOME) and, where
 * several instances are installed, `--instance N`. This module loads only Agent code.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildAgent } from '../agent/build-agent.js';
import { parseAgentConfig, type AgentConfig } from '../agent/config.js';
import {
  listInstances,
  openHomeToServiceAccounts,
  publicInstanceConfig,
  readInstanceConfig,
  resolveInstance,
  type InstancePaths,
} from '../agent/home.js';
import { installInstance, removeInstance } from '../agent/install.js';
import { CONFIG_EXIT_CODE } from '../agent/restart.js';
import { runningPid, supervise } from '../agent/supervisor.js';
import { CONNECTED_MESSAGE } from '../agent/versions.js';
import { installUnit, removeUnit, renderUnit, systemctl, systemdAvailable, unitState } from '../agent/systemd.js';
import { FerryError, isFerryError } from '../errors/ferry-error.js';

const COMMON = {
  home: { type: 'string' },
  instance: { type: 'string' },
} as const;

function configFrom(
  values: { home?: string | undefined; instance?: string | undefined },
  env: NodeJS.ProcessEnv,
): AgentConfig {
  return parseAgentConfig(env, { home: values.home, instance: values.instance });
}

/** The package's root folder (holds package.json and installer/), from src/cli or dist/src/cli alike. */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg) && (JSON.parse(fs.readFileSync(pkg, 'utf8')) as { name?: string }).name === 'ferry')
      return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error('Cannot find the ferry package folder.');
    dir = up;
  }
}

/** The package's version (sent at registration and in the hello). */
export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** How to start this CLI again in a child process: the built CLI when present (systemd), else this very command line. */
function cliCommand(preferBuilt: boolean): string[] {
  const built = path.join(packageRoot(), 'dist', 'src', 'cli', 'main.js');
  if (preferBuilt && fs.existsSync(built)) return [process.execPath, built];
  const script = process.argv[1];
  if (!script) throw new Error('Cannot tell how this CLI was started.');
  return [process.execPath, ...process.execArgv, path.resolve(script)];
}

const say = (line: string) => process.stdout.write(line + '\n');

/** `ferry agent install --key K --service URL [--name N] [--user U] [--no-service]` */
export async function agentInstall(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...COMMON,
      key: { type: 'string' },
      service: { type: 'string' },
      name: { type: 'string' },
      user: { type: 'string' },
      'no-service': { type: 'boolean', default: false },
    },
  });
  if (!values.key || !values.service)
    throw new FerryError(
      'AGT_CONFIG',
      'ferry agent install needs --key KEY (from provision_onpremise_agent) and --service URL.',
    );
  const config = configFrom(values, env);
  const { paths, config: instance } = await installInstance({
    home: config.home,
    key: values.key,
    serviceUrl: values.service,
    name: values.name,
    version: packageVersion(),
  });
  say(`Installed Agent "${instance.name}" (${instance.agentId}) as ${paths.serviceName} in ${paths.dir}`);
  if (values.user) {
    chownTree(paths.dir, values.user);
    // The home is root's and 0700; the service account must pass through it to its own folder.
    openHomeToServiceAccounts(config.home);
  }
  if (values['no-service'] || !systemdAvailable()) {
    say(
      values['no-service']
        ? 'No service unit written (--no-service).'
        : 'No systemd on this machine: no service unit written.',
    );
    say(`Run it with: ferry agent run --home ${config.home} --instance ${paths.number}`);
    return;
  }
  const template = fs.readFileSync(
    path.join(packageRoot(), 'installer', 'systemd', 'ferry-agent.service.template'),
    'utf8',
  );
  const execStart = [...cliCommand(true), 'agent', 'run', '--home', config.home, '--instance', String(paths.number)];
  const file = installUnit(
    renderUnit(template, { paths, home: config.home, execStart, ...(values.user ? { user: values.user } : {}) }),
    paths.serviceName,
  );
  say(`systemd unit ${file} written, enabled and started.`);
}

/** `ferry agent uninstall [--instance N]`: stops it, removes its unit and its folder. */
export async function agentUninstall(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({ args: argv, options: COMMON });
  const config = configFrom(values, env);
  const paths = resolveInstance(config.home, config.instance);
  if (systemdAvailable() && removeUnit(paths.serviceName))
    say(`systemd unit ${paths.serviceName} stopped and removed.`);
  await stopRunning(paths);
  removeInstance(paths);
  say(
    `Removed ${paths.serviceName} (${paths.dir}). The Agent's record stays in the Service until an Administrator deletes it.`,
  );
}

/**
 * Node flags the Agent's worker starts with: a young generation of 128 MiB a semi-space, since bulk
 * batches of thousands of records outlive V8's default and promoting them costs up to a third of
 * the CPU of a load (docs/connectors.md) — unless the command line or NODE_OPTIONS sets one.
 */
export function workerNodeFlags(execArgv: readonly string[], env: NodeJS.ProcessEnv): string[] {
  const set = [...execArgv, env['NODE_OPTIONS'] ?? ''].some((a) => a.includes('--max-semi-space-size'));
  return set ? [] : ['--max-semi-space-size=128'];
}

/** `ferry agent run`: the foreground supervisor (Cloud Agent container, systemd, tests). */
export async function agentRun(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({ args: argv, options: COMMON });
  const config = configFrom(values, env);
  const paths = resolveInstance(config.home, config.instance);
  const [node, ...cli] = cliCommand(false);
  const flags = workerNodeFlags(process.execArgv, env);
  const tail = ['agent', 'worker', '--home', config.home, '--instance', String(paths.number)];
  const [command, ...args] = [node as string, ...flags, ...cli, ...tail];
  const probation = Number(env['FERRY_AGENT_UPDATE_PROBATION_MS'] ?? '');
  // Started by `ferry up` with an IPC channel: when up goes (even by kill -9), stop as on SIGTERM.
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  const code = await supervise({
    paths,
    command,
    args,
    env,
    say: (line) => say(`ferry agent run (${paths.serviceName}): ${line}`),
    // An installed update runs as built JavaScript: Node's own flags only, no loader of this command line.
    argsFor: (main) => [...flags, main, ...tail],
    ...(Number.isInteger(probation) && probation > 0 ? { probationMs: probation } : {}),
  });
  process.exit(code);
}

/** `ferry agent worker` (internal): the Agent process itself, started by `run`. */
export async function agentWorker(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({ args: argv, options: COMMON });
  let agent: Awaited<ReturnType<typeof buildAgent>>;
  try {
    const config = configFrom(values, env);
    agent = await buildAgent({
      config,
      paths: resolveInstance(config.home, config.instance),
      version: packageVersion(),
      packageRoot: packageRoot(),
      // The supervisor commits an updated version once it connected (agent/versions.ts).
      onConnected: () => process.send?.(CONNECTED_MESSAGE),
    });
  } catch (err) {
    if (isFerryError(err) && err.kind === 'config') {
      // A configuration error (a clone, a missing config) does not heal by restarting: 78 tells the supervisor so.
      process.stderr.write(`ferry: [${err.code}] ${err.message}\n`);
      process.exit(CONFIG_EXIT_CODE);
    }
    throw err;
  }
  const stop = (reason: string) => void agent.stop(reason);
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  // The supervisor holds an IPC channel; when it goes (even by kill -9), the worker stops too.
  process.once('disconnect', () => stop('supervisor gone'));
  process.on('uncaughtException', (err) => {
    agent.log.fatal({ err }, 'uncaught exception; the supervisor restarts the Agent');
    process.exit(70);
  });
  agent.start();
  process.exit(await agent.exited);
}

/** `ferry agent start`: starts the OS service. */
export async function agentStart(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({ args: argv, options: COMMON });
  const config = configFrom(values, env);
  const paths = resolveInstance(config.home, config.instance);
  if (!systemdAvailable()) {
    throw new FerryError(
      'AGT_NO_SERVICE_MANAGER',
      `No service manager (systemd) is available on this machine. Run the Agent in the foreground with: ferry agent run --home ${config.home} --instance ${paths.number}`,
    );
  }
  systemctl(['start', `${paths.serviceName}.service`]);
  say(`${paths.serviceName} started.`);
}

/** `ferry agent stop`: stops the OS service, or without systemd the `ferry agent run` process of the instance. */
export async function agentStop(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({ args: argv, options: COMMON });
  const config = configFrom(values, env);
  const paths = resolveInstance(config.home, config.instance);
  if (systemdAvailable()) {
    systemctl(['stop', `${paths.serviceName}.service`]);
    say(`${paths.serviceName} stopped.`);
    return;
  }
  if (await stopRunning(paths)) return;
  throw new FerryError(
    'AGT_NO_SERVICE_MANAGER',
    `No service manager (systemd) is available on this machine, and ${paths.serviceName} is not running under "ferry agent run".`,
  );
}

/** `ferry agent status`: the instance's config (never the secret) and whether its process runs. */
export async function agentStatus(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({ args: argv, options: COMMON });
  const config = configFrom(values, env);
  const all =
    config.instance === undefined ? listInstances(config.home) : [resolveInstance(config.home, config.instance)];
  if (all.length === 0) throw new FerryError('AGT_NO_INSTANCE', `No Agent instance is installed in ${config.home}.`);
  const systemd = systemdAvailable();
  for (const paths of all) {
    const instance = publicInstanceConfig(readInstanceConfig(paths));
    const pid = runningPid(paths);
    say(`${paths.serviceName}  ${paths.dir}`);
    for (const [key, value] of Object.entries(instance)) say(`  ${key.padEnd(12)} ${String(value)}`);
    say(`  ${'process'.padEnd(12)} ${pid ? `running (pid ${pid})` : 'not running'}`);
    say(
      `  ${'service'.padEnd(12)} ${systemd ? unitState(paths.serviceName) : 'no service manager (systemd) on this machine'}`,
    );
  }
}

/** Sends SIGTERM to the instance's `run` process, if any, and waits until it is gone. */
async function stopRunning(paths: InstancePaths): Promise<boolean> {
  const pid = runningPid(paths);
  if (pid === undefined) return false;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 90_000;
  while (runningPid(paths) !== undefined) {
    if (Date.now() > deadline)
      throw new FerryError('AGT_ALREADY_RUNNING', `Process ${pid} of ${paths.serviceName} did not stop within 90 s.`);
    await new Promise((r) => setTimeout(r, 100));
  }
  say(`${paths.serviceName} (pid ${pid}) stopped.`);
  return true;
}

/** Hands the instance folder to the service account (root installs, dedicated user). */
function chownTree(dir: string, user: string): void {
  const info = userIds(user);
  const walk = (p: string) => {
    fs.chownSync(p, info.uid, info.gid);
    if (fs.statSync(p).isDirectory()) for (const name of fs.readdirSync(p)) walk(path.join(p, name));
  };
  walk(dir);
}

function userIds(user: string): { uid: number; gid: number } {
  const line = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.split(':')[0] === user);
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined)
    throw new FerryError(
      'AGT_CONFIG',
      `There is no user "${user}" on this machine (${os.hostname()}); create it first, e.g. useradd --system ${user}.`,
    );
  return { uid: Number(uid), gid: Number(gid) };
}
