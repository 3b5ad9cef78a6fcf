import os from 'node:os';
import type { Logger } from 'pino';
import { bearer, ChannelClient } from '../channel/client.js';
import { Outbox } from '../channel/outbox.js';
import type { AgentLogger } from '../logs/logger.js';
import { PROTOCOL_VERSION, type ReportBody } from '../protocol/channel.js';
import type { SolutionRunner } from '../solutions/runner.js';
import { touchPrivate } from '../util/private-files.js';
import { buildAgentSolutions } from './agent-solutions.js';
import { AgentUpdater } from './agent-update.js';
import { CommandHandlers } from './command-handlers.js';
import { registerAgentCommands } from './commands/index.js';
import { Components } from './components.js';
import type { AgentConfig } from './config.js';
import { ConnectorInstaller } from './connector-installer.js';
import type { InstanceConfig, InstancePaths } from './home.js';
import { LazyConnectorHost } from './lazy-connector-host.js';
import { openInstance } from './open-instance.js';
import { CONFIG_EXIT_CODE, RestartController } from './restart.js';
import { StatusMachine } from './status.js';
import { takeFailure } from './versions.js';
import { agentMetricsFor, metricsComponent, outboxReading } from './metrics-setup.js';
import { MemoryWatchdog } from './watchdog.js';
import { WorkRegistry } from './work.js';

/** What {@link buildAgent} needs; everything but config, paths and version has a production default. */
export interface BuildAgentOptions {
  readonly config: AgentConfig;
  readonly paths: InstancePaths;
  readonly version: string;
  readonly machineName?: string;
  readonly machineId?: string;
  /** The memory watchdog's RSS reader (tests inject one). */
  readonly readRss?: () => number;
  /** A logger instead of the rolling files (tests). */
  readonly logger?: AgentLogger;
  /** The package folder this process runs from (updates share its modules); default: none, updates run npm ci. */
  readonly packageRoot?: string;
  /** Told each time the channel to the Service is connected (the worker tells its supervisor, see versions.ts). */
  readonly onConnected?: () => void;
}

/** A built Agent: {@link start} it, {@link stop} it, and await {@link exited} for the process exit code. */
export interface Agent {
  readonly instance: Omit<InstanceConfig, 'agentSecret'>;
  readonly log: Logger;
  readonly status: StatusMachine;
  readonly work: WorkRegistry;
  readonly channel: ChannelClient;
  readonly outbox: Outbox;
  /** The Solutions this Agent holds and their runs. */
  readonly solutions: SolutionRunner;
  start(): void;
  /** Graceful stop: no new work, running work finishes (up to the grace), Shutdown reported. */
  stop(reason: string): Promise<number>;
  /** Resolves with the exit code once the Agent has closed everything (0 stop, 75 restart, 78 refused). */
  readonly exited: Promise<number>;
}

/**
 * The composition root of the Agent process: opens the instance (fingerprint, home, logger), then
 * wires the outbox, status machine, work registry, channel, restart controller, memory watchdog,
 * Solutions and command handlers, and lists them as components in the order they start (they stop
 * in the reverse order). Importing this module has no side effects; nothing below reads `process.env`.
 */
export async function buildAgent(opts: BuildAgentOptions): Promise<Agent> {
  const { config, paths } = opts;
  const { instance, fingerprint, logger, log } = await openInstance(opts);
  // The outbox holds reports with record data: 0600 before SQLite opens it, so -wal and -shm are too.
  touchPrivate(paths.outbox);
  const outbox = new Outbox(paths.outbox);
  const status = new StatusMachine('Running');
  const work = new WorkRegistry();
  const startedAt = new Date().toISOString();
  const readRss = opts.readRss ?? (() => process.memoryUsage.rss());
  const serviceUrl = (config.serviceUrl ?? instance.serviceUrl).replace(/\/+$/, '');
  const authorization = bearer(instance.agentId, instance.agentSecret);
  reportStatusChanges(status, outbox, log);

  // Listed below once they all exist; the process ends once every one has stopped.
  const components = new Components(log);
  let resolveExit: (code: number) => void = () => undefined;
  const exited = new Promise<number>((resolve) => (resolveExit = resolve));
  let finishing: Promise<number> | undefined;
  const finish = (code: number): Promise<number> =>
    (finishing ??= (async () => {
      await components.stop();
      log.info({ code }, 'agent process ending');
      logger.flush();
      resolveExit(code);
      return code;
    })());

  const commands = new CommandHandlers();
  const metrics = agentMetricsFor(config, { outbox, work, channel: () => channel });
  const host = new LazyConnectorHost({ dir: paths.connectors, log, agentVersion: opts.version, metrics });
  // What installs packages (Connectors, Agent versions) needs: the work to wait for, and where to report.
  const installing = { work, status, authorization, report: (body: ReportBody) => outbox.enqueue(body) };
  const installer = new ConnectorInstaller({
    ...installing,
    dir: paths.connectors,
    host: host.get,
    log: log.child({ component: 'connector-installer' }),
  });
  const channel: ChannelClient = new ChannelClient({
    serviceUrl,
    agentId: instance.agentId,
    agentSecret: instance.agentSecret,
    log: logger.log,
    outbox,
    pingMs: config.pingMs,
    requestTimeoutMs: config.requestTimeoutMs,
    backoffBaseMs: config.backoffBaseMs,
    backoffMaxMs: config.backoffMaxMs,
    hello: () => ({
      protocolVersion: PROTOCOL_VERSION,
      version: opts.version,
      machineName: opts.machineName ?? os.hostname(),
      serviceName: instance.serviceName,
      fingerprint,
      pid: process.pid,
      startedAt,
      status: status.status,
      installedConnectors: installer.installed(),
    }),
    heartbeat: () => heartbeatOf(status, work, outbox, readRss),
    onCommand: (command) => commands.dispatch(command),
    ...(opts.onConnected ? { onConnected: opts.onConnected } : {}),
    onFatal: (err) => {
      log.error({ code: err.code }, 'the Service refused this Agent; stopping without restart');
      void finish(CONFIG_EXIT_CODE);
    },
  });
  // A restart and an update give the outbox a bounded chance to reach the Service before the process goes.
  const restartParts = {
    status,
    work,
    exit: (code: number) => void finish(code),
    flush: async () => {
      if (!(await channel.flush(config.stopGraceMs)))
        log.warn({ queued: outbox.size }, 'outbox not drained before restart; it is sent after');
    },
  };
  const restart = new RestartController({ ...restartParts, log });
  const updater = new AgentUpdater({
    ...restartParts,
    ...installing,
    paths,
    version: opts.version,
    packageRoot: opts.packageRoot ?? '',
    log: log.child({ component: 'agent-update' }),
  });
  const watchdog = new MemoryWatchdog({
    limitBytes: config.maxRssMb * 1024 * 1024,
    intervalMs: config.watchdogMs,
    readRss,
    onExceeded: (rssBytes) => {
      log.warn({ rssBytes, limitMb: config.maxRssMb }, 'memory limit exceeded; restarting after running work');
      restart.request('memory', false).catch((err: unknown) => log.error({ err }, 'restart failed'));
    },
  });

  // What the Solutions and the command handlers are built from.
  const parts = { config, paths, logger, log, serviceUrl, authorization, work, outbox, host: host.get, metrics };
  const { store: solutionStore, runner, follow } = buildAgentSolutions({ ...parts, agentSecret: instance.agentSecret });
  registerAgentCommands(commands, { ...parts, restart, updater, installer, solutionStore, runner, gate: follow });

  // Started in this order and stopped in the reverse one, so each stops after those that use it.
  components.add(
    { name: 'connector installer', start: () => installer.prepare() },
    {
      name: 'outbox',
      start: () => {
        reportStarted(outbox, startedAt, opts.version);
        reportFailedUpdate(outbox, paths);
      },
      stop: () => outbox.close(),
    },
    host,
    { name: 'solution store', stop: () => solutionStore.close() },
    { name: 'solution runner', start: () => runner.recover(), stop: () => runner.close() },
    { name: 'channel', start: () => channel.start(), stop: () => channel.stop() },
    follow,
    { name: 'memory watchdog', start: () => watchdog.start(), stop: () => watchdog.stop() },
    ...(metrics ? [metricsComponent(config, metrics, log)] : []),
  );

  const { agentSecret: _secret, ...publicInstance } = instance;
  return {
    instance: publicInstance,
    log,
    status,
    work,
    channel,
    outbox,
    solutions: runner,
    exited,
    start() {
      const { serviceName } = instance;
      const { maxRssMb } = config;
      log.info({ version: opts.version, serviceUrl, serviceName, queued: outbox.size, maxRssMb }, 'agent starting');
      components.start();
    },
    async stop(reason) {
      if (finishing) return finishing;
      log.info({ reason, runningWork: work.count }, 'stopping');
      await settleWork(work, config.stopGraceMs);
      status.move(config.cloud ? 'ShutdownCloud' : 'Shutdown', reason);
      if (!(await channel.flush(Math.min(config.stopGraceMs, 5_000)))) {
        log.warn({ queued: outbox.size }, 'outbox not drained before stop; it is sent at the next start');
      }
      return finish(0);
    },
  };
}

/** Every status move is reported durably; a stop is reported as its own `shutdown` report. */
function reportStatusChanges(status: StatusMachine, outbox: Outbox, log: Logger): void {
  status.onChange((change) => {
    log.info({ from: change.from, to: change.to, reason: change.reason }, 'status changed');
    if (change.to === 'Shutdown' || change.to === 'ShutdownCloud') {
      outbox.enqueue({ kind: 'shutdown', at: change.at.toISOString(), status: change.to });
    } else {
      const reason = change.reason ? { reason: change.reason } : {};
      outbox.enqueue({ kind: 'status', status: change.to, at: change.at.toISOString(), ...reason });
    }
  });
}

/** A heartbeat's figures: status, memory, work in progress, and the outbox's backlog (docs/metrics.md). */
function heartbeatOf(status: StatusMachine, work: WorkRegistry, outbox: Outbox, readRss: () => number) {
  return { status: status.status, rssBytes: Math.round(readRss()), runningWork: work.count, ...outboxReading(outbox) };
}

/** No new work; running work gets the grace period to finish and is interrupted after it. */
async function settleWork(work: WorkRegistry, graceMs: number): Promise<void> {
  work.drain('stopping');
  const graceOver = new Promise<'timeout'>((resolve) => {
    setTimeout(() => resolve('timeout'), graceMs).unref();
  });
  if ((await Promise.race([work.idle(), graceOver])) === 'timeout') {
    work.interruptAll('the Agent is stopping');
    await work.idle();
  }
}

/** An update the supervisor rolled back before this process started, reported once. */
function reportFailedUpdate(outbox: Outbox, paths: InstancePaths): void {
  const failed = takeFailure(paths);
  if (!failed) return;
  const message = `The Agent's supervisor went back from ${failed.version}: ${failed.reason}`;
  outbox.enqueue({
    kind: 'agentUpdate',
    version: failed.version,
    status: 'RolledBack',
    at: failed.at,
    error: { code: 'AGT_UPDATE_FAILED', kind: 'transient', message },
  });
}

/** The first reports of a process: it started, and runs. */
function reportStarted(outbox: Outbox, at: string, version: string): void {
  outbox.enqueue({ kind: 'started', at, version });
  outbox.enqueue({ kind: 'status', status: 'Running', at, reason: 'started' });
}
