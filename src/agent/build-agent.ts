import os from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { bearer, ChannelClient } from '../channel/client.js';
import { Outbox } from '../channel/outbox.js';
import { FerryError } from '../errors/ferry-error.js';
import { createAgentLogger, type AgentLogger } from '../logs/logger.js';
import { PROTOCOL_VERSION } from '../protocol/channel.js';
import { CommandHandlers } from './command-handlers.js';
import { restartCommand } from './commands/restart.command.js';
import { zipLogsCommand } from './commands/zip-logs.command.js';
import { testConnectionCommand } from './commands/test-connection.command.js';
import { loadMetadataCommand } from './commands/load-metadata.command.js';
import { preconnectCommand } from './commands/preconnect.command.js';
import { installConnectorCommand } from './commands/install-connector.command.js';
import { uninstallConnectorCommand } from './commands/uninstall-connector.command.js';
import { assignSolutionsCommand } from './commands/assign-solutions.command.js';
import { putSolutionCommand } from './commands/put-solution.command.js';
import { startSolutionCommand } from './commands/start-solution.command.js';
import { stopSolutionCommand } from './commands/stop-solution.command.js';
import { monitorSolutionCommand } from './commands/monitor-solution.command.js';
import { previewQueryCommand } from './commands/preview-query.command.js';
import { nativeQueryTestCommand } from './commands/native-query-test.command.js';
import { reprocessRunCommand } from './commands/reprocess-run.command.js';
import { knownRunsCommand } from './commands/known-runs.command.js';
import { pruneFailedRecordsCommand } from './commands/prune-failed-records.command.js';
import { serviceReprocessPages } from '../failures/pages.js';
import { SolutionStore } from '../solutions/solution-store.js';
import { SolutionRunner } from '../solutions/runner.js';
import { fetchLookupTables } from '../solutions/lookup-tables.js';
import { Scheduler } from '../solutions/scheduler.js';
import { ConnectorInstaller } from './connector-installer.js';
import { ConnectorHost } from '../connectors/host.js';
import type { AgentConfig } from './config.js';
import { computeFingerprint, readMachineId } from './fingerprint.js';
import { readInstanceConfig, secureInstance, type InstanceConfig, type InstancePaths } from './home.js';
import { touchPrivate } from '../util/private-files.js';
import { CONFIG_EXIT_CODE, RestartController } from './restart.js';
import { StatusMachine } from './status.js';
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
 * The composition root of the Agent process: checks the installation's fingerprint, then wires the
 * logger, durable outbox, status machine, work registry, channel, restart controller, memory
 * watchdog and command handlers. Importing this module has no side effects; nothing below reads
 * `process.env`.
 */
export async function buildAgent(opts: BuildAgentOptions): Promise<Agent> {
  const { config, paths } = opts;
  const instance = readInstanceConfig(paths);
  const fingerprint = computeFingerprint({ machineId: opts.machineId ?? readMachineId(), instanceDir: paths.dir, installId: instance.installId });
  if (fingerprint !== instance.fingerprint) {
    throw new FerryError(
      'AGT_CLONED_INSTALL',
      `The instance in ${paths.dir} was installed in another folder or on another machine; a copy may not run with its identity. Install a new instance with "ferry agent install".`,
      { details: { dir: paths.dir, agentId: instance.agentId } },
    );
  }
  // Before anything opens its files: an instance folder left readable by an older version (or by
  // hand) is closed to other users, and the log says so once.
  const repair = secureInstance(path.dirname(paths.dir), paths);
  const logger =
    opts.logger ??
    (await createAgentLogger({
      logsDir: paths.logs,
      level: config.logLevel,
      agentId: instance.agentId,
      maxSize: config.logMaxSize,
      files: config.logFiles,
      stdout: config.logStdout,
    }));
  const log = logger.log.child({ component: 'agent' });
  if (repair.repaired.length > 0 || repair.failed.length > 0 || repair.truncated) {
    log.warn(
      { repaired: repair.repaired.length, examples: repair.repaired.slice(0, 5), failed: repair.failed.slice(0, 5), truncated: repair.truncated },
      `closed ${repair.repaired.length} files and folders of the Agent's home to other users of this host${repair.failed.length > 0 ? `; ${repair.failed.length} could not be changed` : ''}`,
    );
  }
  // The outbox holds reports with record data: 0600 before SQLite opens it, so -wal and -shm are too.
  touchPrivate(paths.outbox);
  const outbox = new Outbox(paths.outbox);
  const status = new StatusMachine('Running');
  const work = new WorkRegistry();
  const startedAt = new Date().toISOString();
  const readRss = opts.readRss ?? (() => process.memoryUsage.rss());
  const shutdownStatus = config.cloud ? 'ShutdownCloud' : 'Shutdown';
  const serviceUrl = (config.serviceUrl ?? instance.serviceUrl).replace(/\/+$/, '');

  // Every status move is reported durably; a stop is reported as its own `shutdown` report.
  status.onChange((change) => {
    log.info({ from: change.from, to: change.to, reason: change.reason }, 'status changed');
    if (change.to === 'Shutdown' || change.to === 'ShutdownCloud') {
      outbox.enqueue({ kind: 'shutdown', at: change.at.toISOString(), status: change.to });
    } else {
      outbox.enqueue({ kind: 'status', status: change.to, at: change.at.toISOString(), ...(change.reason ? { reason: change.reason } : {}) });
    }
  });

  let resolveExit: (code: number) => void = () => undefined;
  const exited = new Promise<number>((resolve) => (resolveExit = resolve));
  let finishing: Promise<number> | undefined;
  const finish = (code: number): Promise<number> => {
    finishing ??= (async () => {
      watchdog.stop();
      clearTimeout(schedulerWait);
      scheduler.stop();
      await channel.stop();
      runner.close();
      solutionStore.close();
      if (connectorHost) await connectorHost.then((h) => h.close()).catch((err: unknown) => log.warn({ err }, 'connector host not closed cleanly'));
      outbox.close();
      log.info({ code }, 'agent process ending');
      logger.flush();
      resolveExit(code);
      return code;
    })();
    return finishing;
  };

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
    heartbeat: () => ({ status: status.status, rssBytes: Math.round(readRss()), runningWork: work.count }),
    onCommand: (command) => commands.dispatch(command),
    onFatal: (err) => {
      log.error({ code: err.code }, 'the Service refused this Agent; stopping without restart');
      void finish(CONFIG_EXIT_CODE);
    },
  });

  const restart = new RestartController({
    status,
    work,
    log,
    flush: async () => {
      if (!(await channel.flush(config.stopGraceMs))) log.warn({ queued: outbox.size }, 'outbox not drained before restart; it is sent after');
    },
    exit: (code) => void finish(code),
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

  // The plugin host loads the installed plugins at the first command that needs one.
  let connectorHost: Promise<ConnectorHost> | undefined;
  const loadConnectorHost = async (): Promise<ConnectorHost> => {
    const host = new ConnectorHost({ dir: paths.connectors, log, agentVersion: opts.version });
    const { failed } = await host.loadAll();
    for (const f of failed) log.warn({ folder: f.folder, code: f.error.code }, 'connector plugin not loaded');
    return host;
  };

  const hostOnce = () => (connectorHost ??= loadConnectorHost());
  const installer = new ConnectorInstaller({
    dir: paths.connectors,
    host: hostOnce,
    work,
    status,
    log: log.child({ component: 'connector-installer' }),
    report: (body) => outbox.enqueue(body),
    authorization: bearer(instance.agentId, instance.agentSecret),
  });

  // Solutions: the local copy of what prepare built, and the run queue.
  const solutionsFile = paths.state.solutions;
  const solutionStore = new SolutionStore(solutionsFile, instance.agentSecret);
  const runner = new SolutionRunner({
    store: solutionStore,
    host: hostOnce,
    work,
    report: (body) => void outbox.enqueue(body),
    reportAll: (bodies) => void outbox.enqueueAll(bodies),
    log: logger.log.child({ component: 'solutions' }),
    dataDir: paths.data,
    concurrency: config.runConcurrency,
    targetRetryMs: config.targetRetryMs,
    runsOn: config.cloud ? 'cloud' : 'local',
    lookupTables: (_orgId, names) => fetchLookupTables({ serviceUrl, authorization: bearer(instance.agentId, instance.agentSecret), names, cacheDir: paths.state.lookupTables }),
    reprocessPages: serviceReprocessPages({ serviceUrl, authorization: bearer(instance.agentId, instance.agentSecret) }),
  });
  // Schedules fire here, from the local copy, so scheduled runs go on while the Service is unreachable.
  const scheduler = new Scheduler({
    file: paths.state.schedules,
    graceMs: config.scheduleGraceMs,
    isRunning: (solutionId) => runner.isRunning(solutionId),
    isPaused: () => work.refusing,
    fire: (solutionId, dueAt, runId) => {
      try {
        runner.start(solutionId, runId, 'schedule', dueAt);
      } catch (err) {
        log.warn({ err, solutionId, dueAt: dueAt.toISOString() }, 'scheduled run not started');
        outbox.enqueue({ kind: 'scheduleSkipped', solutionId, dueAt: dueAt.toISOString(), reason: 'paused', at: new Date().toISOString() });
      }
    },
    skipped: (solutionId, dueAt, reason, earlier) => {
      outbox.enqueue({ kind: 'scheduleSkipped', solutionId, dueAt: dueAt.toISOString(), reason, at: new Date().toISOString(), ...(earlier ? { earlier } : {}) });
    },
    log: logger.log.child({ component: 'scheduler' }),
  });
  /**
   * Nothing fires before the Service has had its say. At start the scheduler holds the local copy,
   * which may be stale: a Solution moved to another Agent, disabled or rescheduled while this one
   * was down. Firing from it at once would run such a Solution here (the due time missed while down
   * is caught up at start). So the scheduler starts once this Agent holds what the Service's first
   * assignment list names, at the versions it names (the list drops what moved away; the new
   * versions follow it as putSolution); or, when that does not happen within the wait (the Service
   * is unreachable), from the local copy, so that scheduled runs go on during an outage. Due times
   * that pass during the wait are caught up at start like any late due time, hence a wait no
   * longer than the grace period.
   */
  let schedulerWait: ReturnType<typeof setTimeout> | undefined;
  /** The versions the Service's latest assignment list names; undefined until one came. */
  let assignedVersions: ReadonlyMap<string, string> | undefined;
  const startScheduler = (why: string): void => {
    clearTimeout(schedulerWait);
    schedulerWait = undefined;
    if (finishing || scheduler.started) return;
    log.info({ why }, 'scheduler starting');
    scheduler.start();
  };
  /** The held Solutions changed: the scheduler follows the full set (a Solution no longer held stops firing at once). */
  const assigned = (): void => {
    const held = solutionStore.list();
    scheduler.set(held.map((s) => ({ solutionId: s.solutionId, version: s.version, rule: s.schedule, disabled: s.isDisabled })));
    if (!assignedVersions || scheduler.started) return;
    const versions = new Map(held.map((s) => [s.solutionId, s.version]));
    if ([...assignedVersions].every(([solutionId, version]) => versions.get(solutionId) === version)) startScheduler('holding the assignment of the Service');
  };

  const commands = new CommandHandlers()
    .on('restart', restartCommand({ restart, log }))
    .on(
      'zipLogs',
      zipLogsCommand({
        work,
        outbox,
        log: logger.log.child({ component: 'logs' }),
        logsDir: paths.logs,
        tmpDir: paths.data,
        serviceUrl,
        authorization: bearer(instance.agentId, instance.agentSecret),
        flushLogs: () => logger.flush(),
      }),
    )
    .on('testConnection', testConnectionCommand({ work, log, host: hostOnce }))
    .on('loadMetadata', loadMetadataCommand({ work, log, host: hostOnce }))
    .on('preconnect', preconnectCommand({ work, log, host: hostOnce }))
    .on('installConnector', installConnectorCommand({ installer }))
    .on('uninstallConnector', uninstallConnectorCommand({ installer }))
    .on(
      'assignSolutions',
      assignSolutionsCommand({
        store: solutionStore,
        log,
        // What the scheduler waits to hold before it starts (see startScheduler).
        received: (assignments) => (assignedVersions = new Map(assignments.map((a) => [a.solutionId, a.version]))),
        assigned,
      }),
    )
    .on('putSolution', putSolutionCommand({ store: solutionStore, log, assigned }))
    .on('startSolution', startSolutionCommand({ runner }))
    .on('stopSolution', stopSolutionCommand({ runner }))
    .on('monitorSolution', monitorSolutionCommand({ runner }))
    .on('previewQuery', previewQueryCommand({ work, log, host: hostOnce }))
    .on('nativeQueryTest', nativeQueryTestCommand({ work, log, host: hostOnce }))
    .on('reprocessRun', reprocessRunCommand({ runner }))
    .on('knownRuns', knownRunsCommand({ runner, outbox }))
    .on(
      'pruneFailedRecords',
      pruneFailedRecordsCommand({
        folder: paths.failures,
        busy: () => runner.runningCount > 0 || solutionStore.openRuns().length > 0,
        log: logger.log.child({ component: 'failures' }),
      }),
    );
  const unhandled = commands.missing();
  if (unhandled.length > 0) throw new FerryError('SVC_INTERNAL', `The Agent has no handler for the ${unhandled.join(', ')} command.`, { details: { commands: unhandled } });

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
      log.info({ version: opts.version, serviceUrl, serviceName: instance.serviceName, queued: outbox.size, maxRssMb: config.maxRssMb }, 'agent starting');
      installer.prepare();
      outbox.enqueue({ kind: 'started', at: startedAt, version: opts.version });
      outbox.enqueue({ kind: 'status', status: 'Running', at: startedAt, reason: 'started' });
      runner.recover();
      assigned();
      // See startScheduler: what the Service assigns comes first, unless it is unreachable.
      schedulerWait = setTimeout(() => startScheduler('no assignment list from the Service in time; firing from the local copy'), Math.min(config.requestTimeoutMs, config.scheduleGraceMs));
      schedulerWait.unref();
      channel.start();
      watchdog.start();
    },
    async stop(reason) {
      if (finishing) return finishing;
      log.info({ reason, runningWork: work.count }, 'stopping');
      work.drain('stopping');
      const graceOver = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), config.stopGraceMs).unref());
      if ((await Promise.race([work.idle(), graceOver])) === 'timeout') {
        work.interruptAll('the Agent is stopping');
        await work.idle();
      }
      status.move(shutdownStatus, reason);
      if (!(await channel.flush(Math.min(config.stopGraceMs, 5_000)))) log.warn({ queued: outbox.size }, 'outbox not drained before stop; it is sent at the next start');
      return finish(0);
    },
  };
}
