import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { COMMANDS } from '../src/protocol/commands.js';
import { AgentPackages, AgentUpdates } from './agents/agent-updates.js';
import { AgentCommands } from './agents/commands.js';
import { EventMessages } from './events/events.js';
import { EVENT_ACCESS_CHANNEL } from './store/migrations/037-event-access-notify.js';
import { StoreChanges } from './store/store-changes.js';
import { ConnectionCommands } from './connections/commands.js';
import { Connections } from './connections/connections.js';
import { ConnectionMetadata } from './connections/metadata.js';
import { issueCloudAgentKey } from './agents/registration.js';
import { logArchiveFailed } from './agents/logs.js';
import type { LoginThrottle } from './auth/login-throttle.js';
import { loginThrottleFor } from './auth/shared-login-throttle.js';
import { bootstrap, secretsFor, type BootstrapResult } from './bootstrap.js';
import type { ServiceConfig } from './config.js';
import { LocalCommandBus, SessionRegistry } from './gateway/command-bus.js';
import { ReplicaCommandBus } from './gateway/replica-bus.js';
import { AgentGateway } from './gateway/gateway.js';
import { ReportHandlers } from './gateway/report-handlers.js';
import { HeartbeatSweeper } from './gateway/sweeper.js';
import { ConnectorCatalogue, preinstalledConnectors } from './marketplace/catalogue.js';
import { applyInstallReport, ConnectorInstalls } from './marketplace/installs.js';
import { PackageStore } from './marketplace/package-store.js';
import { buildApp } from './http/app.js';
import { rateLimiterFor } from './http/rate-limit.js';
import { AgentHousekeeping } from './jobs/agent-housekeeping.js';
import { HistoryRetention } from './jobs/history-retention.js';
import { CloudAgentSupervisor, NO_CLOUD_AGENTS } from './jobs/cloud-agents.js';
import { ClaimedCloudAgents } from './jobs/claimed-cloud-agents.js';
import { ReplicaClaims, SOLE_PROCESS, type JobClaims } from './jobs/claims.js';
import { PeriodicJob } from './jobs/periodic-job.js';
import { Readiness } from './http/readiness.js';
import { DatabaseLogArchives } from './store/log-archive-chunks.js';
import { LogArchiveFiles, type LogArchives } from './store/log-archives.js';
import { listCloudAgents } from './store/repos/agents.repo.js';
import { removeDeadSpools } from './lookup-tables/spool.js';
import { History } from './history/history.js';
import { LostReprocessRuns } from './history/lost-reprocess-runs.js';
import { notificationMails, type Notifications } from './notifications/notifications.js';
import type { OutboxTiming } from './notifications/outbox.js';
import { RunReports } from './history/reports.js';
import { SolutionMaps } from './solutions/maps.js';
import { Solutions } from './solutions/solutions.js';
import { SolutionAssignments } from './solutions/assignments.js';
import { followSolutionChanges } from './solutions/changes.js';
import { PrepareJobs } from './solutions/prepare.js';
import { SolutionRuns } from './solutions/runs.js';
import { MapPreviews } from './solutions/map-preview.js';
import { MapRuns } from './solutions/map-run.js';
import { storeFailedRecords } from './history/failed-records.js';
import { secureDataDir } from './store/data-dir.js';
import { openStore, type Store } from './store/store.js';
import type { SecretBox } from './crypto/master-key.js';
import { packageRoot } from './util/package-root.js';
import { countFinishedRun, serviceMetricsFor } from './metrics/metrics-setup.js';
import type { ServiceMetrics } from './metrics/service-metrics.js';

export interface FerryService {
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly bootstrap: BootstrapResult;
  /** The Connector catalogue, packages and installs. */
  readonly connectors: ConnectorInstalls;
  /** This replica's ID among several on one PostgreSQL (agent_channels, service_leases); none on SQLite. */
  readonly replicaId: string | undefined;
  /** The URL of the separate metrics listener (FERRY_METRICS_LISTEN) once it listens. */
  metricsUrl(): string | undefined;
  /** Listens on the configured host and port; resolves to the base URL. */
  listen(): Promise<string>;
  /**
   * A graceful stop (SIGTERM): `/readyz` answers 503 for the drain delay while requests are still
   * served, then the Agents are told to reconnect elsewhere (close 1012), the requests in flight
   * finish, and the Service closes.
   */
  drain(delayMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Secrets are removed from every log line by path. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-access-token"]',
  '*.password',
  '*.apiToken',
  '*.apiCryptoToken',
  '*.eventSolutionAccessToken',
  '*.agentSecret',
  '*.agentInstallationKey',
  '*.smtpUrl',
  '*.metricsToken',
];

/** How to start the `ferry` CLI at `entry`: with Node, and through tsx for the TypeScript sources (development). */
function cliCommand(entry: string): [string, ...string[]] {
  return entry.endsWith('.ts') ? [process.execPath, '--import', 'tsx', entry] : [process.execPath, entry];
}

export interface BuildOptions {
  logger?: Logger;
  /** The failed-login throttle; tests give one with their own clock and limits. */
  loginThrottle?: LoginThrottle;
  /** The pace of the notification mail sender; tests shorten it. */
  mailOutbox?: Partial<OutboxTiming>;
  /** Time between two checks for reprocess runs the Agents never started (default 1 minute); tests shorten it. */
  lostReprocessRunsMs?: number;
}

/**
 * Runs each Cloud Agent as a child of the Service, when they are on here (FERRY_CLOUD_AGENTS), in
 * the one process that holds the Cloud Agents' claim.
 */
function cloudAgents(config: ServiceConfig, store: Store, claims: JobClaims, log: Logger) {
  if (config.cloudAgents !== 'on') return undefined;
  const supervisor = new CloudAgentSupervisor({
    dataDir: config.dataDir,
    command: cliCommand(config.cloudAgentEntry ?? path.join(packageRoot(), 'dist', 'src', 'cli', 'main.js')),
    log,
    issueKey: (agentId) => issueCloudAgentKey(store.db, agentId),
  });
  const list = async () => (await listCloudAgents(store.db)).map((a) => a.id);
  return new ClaimedCloudAgents({ supervisor, claims, list, log });
}

/** The URL the Service is reached at once it listens: loopback when it listens on every address. */
function listeningUrl(app: FastifyInstance, config: ServiceConfig): string {
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${port}`;
}

/**
 * What each kind of Agent report does beyond the Agent's record, inside the report's transaction
 * (the gateway knows no domain).
 */
function agentReports(runReports: RunReports, secrets: SecretBox): ReportHandlers {
  return new ReportHandlers()
    .on('connectorInstall', applyInstallReport)
    .on('runStarted', runReports.runStarted)
    .on('runProgress', runReports.runProgress)
    .on('runErrors', runReports.runErrors)
    .on('runFailedRecords', storeFailedRecords(secrets))
    .on('runFinished', runReports.runFinished)
    .on('runCommitted', runReports.runCommitted)
    .on('scheduleSkipped', runReports.scheduleSkipped)
    .on('logArchiveFailed', logArchiveFailed);
}

/**
 * Before the store opens: the data folder closed to other users of the host, and the import spools
 * of a Service that stopped mid-import removed; the log says once what either changed.
 */
function tidyDataDir(log: Logger, dataDir: string): void {
  reportDataDir(log, dataDir, secureDataDir(dataDir));
  const spools = removeDeadSpools(dataDir);
  if (spools > 0) log.warn({ count: spools }, 'removed the import spools of a Service that stopped mid-import');
}

/** Says once per start what the data folder's repair changed (nothing on a private folder). */
function reportDataDir(log: Logger, dataDir: string, r: ReturnType<typeof secureDataDir>): void {
  if (r.repaired.length > 0) {
    log.warn(
      { dataDir, count: r.repaired.length, paths: r.repaired.slice(0, 20) },
      'data folder was readable by other users: removed group and other permissions',
    );
  }
  if (r.failed.length > 0)
    log.warn({ dataDir, failed: r.failed.slice(0, 20) }, 'data folder: could not remove group and other permissions');
  if (r.truncated) log.warn({ dataDir }, 'data folder: stopped repairing permissions after 10,000 entries');
}

/** The Connector catalogue (the built-in plugins and FERRY_CONNECTORS_DIR), its packages and the installs. */
function connectorInstalls(
  config: ServiceConfig,
  store: Store,
  commands: AgentCommands,
  notifications: Notifications,
  log: Logger,
): { packages: PackageStore; connectors: ConnectorInstalls } {
  const catalogue = ConnectorCatalogue.fromDirs([
    path.join(packageRoot(), 'connectors'),
    ...(config.connectorsDir ? [config.connectorsDir] : []),
  ]);
  const packages = new PackageStore(catalogue, path.join(config.dataDir, 'connector-packages'));
  const connectors = new ConnectorInstalls({
    store,
    commands,
    catalogue,
    packages,
    log,
    timeoutMs: config.connectorInstallTimeout * 1000,
    onOrgConnectorChanged: (change) => notifications.connectorChanged(store.db, change),
  });
  return { packages, connectors };
}

/**
 * Solutions on Agents: prepare builds what an Agent runs, assignments keep each Agent up to date.
 * The prepare jobs a stopped Service process left running end with an error first.
 */
async function solutionsOnAgents(
  store: Store,
  secrets: SecretBox,
  commands: AgentCommands,
  metadata: ConnectionMetadata,
  log: Logger,
  replicas: { replicaId: string; claims: JobClaims } | undefined,
) {
  const assignments = new SolutionAssignments({ db: store.db, secrets, commands, log });
  const prepareJobs = new PrepareJobs({
    db: store.db,
    commands,
    metadata,
    log,
    prepared: (solution) => assignments.sync(solution.agentId),
    ...(replicas ? { replicaId: replicas.replicaId } : {}),
  });
  await prepareJobs.failAbandoned();
  // With replicas, the prepares of one that died are ended by another once its lease has passed.
  const abandonedPrepares = replicas
    ? new PeriodicJob({
        intervalMs: 5_000,
        tick: () => prepareJobs.failAbandoned(),
        log,
        failed: 'the check for prepare jobs of stopped replicas failed',
        level: 'warn',
        once: { claims: replicas.claims, name: 'abandoned-prepares' },
      })
    : undefined;
  const solutionRuns = new SolutionRuns({ db: store.db, commands, prepare: prepareJobs, assignments, log });
  const isConnected = (agentId: string): boolean => commands.isConnected(agentId);
  const changed = followSolutionChanges({ db: store.db, assignments, prepare: prepareJobs, isConnected, log });
  const solutions = new Solutions({ db: store.db, isConnected, changed });
  return { assignments, prepareJobs, solutionRuns, solutions, abandonedPrepares };
}

/** The timed jobs about Agents: the heartbeat sweeper, the cleanup of what they leave behind, and the History retention. */
function agentJobs(
  config: ServiceConfig,
  store: Store,
  registry: SessionRegistry,
  commands: AgentCommands,
  logArchives: LogArchives,
  notifications: Notifications,
  log: Logger,
  claims: JobClaims,
) {
  const sweeper = new HeartbeatSweeper({
    store,
    log,
    claims,
    lateAfterMs: config.heartbeatLateAfter * 1000,
    failedAfterMs: config.heartbeatFailedAfter * 1000,
    onHeartbeatFailed: notifications.heartbeatFailed,
  });
  const housekeeping = new AgentHousekeeping({ store, log, logArchives, claims });
  const retention = new HistoryRetention({
    store,
    log,
    claims,
    retentionDays: config.historyRetentionDays,
    agents: {
      connected: () => registry.all().map((s) => s.agentId),
      send: (agentId, command) => commands.send(agentId, command),
    },
  });
  return { sweeper, housekeeping, retention };
}

/**
 * How the Service reaches its Agents: on PostgreSQL whichever replica holds an Agent's channel
 * (gateway/replica-bus.ts), on SQLite in this process.
 */
function agentCommands(config: ServiceConfig, store: Store, registry: SessionRegistry, log: Logger) {
  const replicas = config.databaseUrl
    ? new ReplicaCommandBus({
        store,
        databaseUrl: config.databaseUrl,
        registry,
        log,
        leaseMs: config.replicaLease * 1000,
      })
    : undefined;
  // Which replica runs each Service-side job that must run once (service/jobs/claims.ts).
  const claims = replicas ? new ReplicaClaims(store.db, replicas.replicaId, log) : SOLE_PROCESS;
  return { replicas, claims, commands: new AgentCommands(replicas ?? new LocalCommandBus(registry)) };
}

/** Which Agents update to which of the versions in the packages folder (agents/agent-updates.ts). */
function agentUpdatesOf(
  config: ServiceConfig,
  store: Store,
  commands: AgentCommands,
  registry: SessionRegistry,
  log: Logger,
): AgentUpdates {
  return new AgentUpdates({
    db: store.db,
    commands,
    packages: new AgentPackages(config.agentPackagesDir ?? path.join(config.dataDir, 'agent-packages')),
    obsoleteBelow: config.agentObsoleteBelow,
    log: log.child({ component: 'agent-updates' }),
    connectedHere: () => registry.all().map((s) => s.agentId),
  });
}

interface TimedJob {
  start(): void;
  stop(): Promise<void>;
}

/** The jobs given that exist. */
const present = (...jobs: (TimedJob | undefined)[]): TimedJob[] => jobs.filter((j): j is TimedJob => j !== undefined);

/** On PostgreSQL, other replicas' commits to what message POSTs' admissions cache (migration 037). */
function eventAccessChanges(config: ServiceConfig, events: EventMessages, log: Logger): StoreChanges | undefined {
  if (!config.databaseUrl) return undefined;
  return new StoreChanges({
    databaseUrl: config.databaseUrl,
    channel: EVENT_ACCESS_CHANNEL,
    onChange: () => events.access.clear(),
    log,
  });
}

/**
 * Reprocess runs whose Agent never answered: asked about at each connect and on a timer, by each
 * replica for the Agents whose channels it holds.
 */
function lostReprocessRunsOf(
  store: Store,
  registry: SessionRegistry,
  commands: AgentCommands,
  history: History,
  log: Logger,
  intervalMs: number | undefined,
): LostReprocessRuns {
  return new LostReprocessRuns({
    db: store.db,
    bulkTransaction: (work) => store.bulkTransaction(work),
    log,
    channel: {
      connected: () => registry.all().map((s) => s.agentId),
      send: (agentId, command) => commands.send(agentId, command),
    },
    sending: (runId) => history.isReprocessSending(runId),
    graceMs: COMMANDS.reprocessRun.timeoutMs,
    intervalMs,
  });
}

/** The History of Solutions: executions, record errors, reprocessing. */
function historyOf(
  store: Store,
  secrets: SecretBox,
  commands: AgentCommands,
  assignments: SolutionAssignments,
  log: Logger,
): History {
  const bulkTransaction: Store['bulkTransaction'] = (work) => store.bulkTransaction(work);
  return new History({ db: store.db, bulkTransaction, secrets, commands, assignments, log });
}

/** The composition root of the Service: store, secrets, bootstrap, HTTP app. */
/** What the Service does with the Agents' run reports: History, then the mails and the Event Solutions' queues. */
function runReportsOf(
  log: Logger,
  store: Store,
  notifications: Notifications,
  events: EventMessages,
  metrics: ServiceMetrics,
): RunReports {
  return new RunReports({
    log,
    dialect: store.dialect,
    onExecutionFinished: async (tx, finished) => {
      await notifications.executionFinished(tx, finished);
      countFinishedRun(metrics, finished);
    },
    onEventRunEnded: (tx, solutionId, runId) => events.runEnded(tx, solutionId, runId),
  });
}

export async function buildService(config: ServiceConfig, opts: BuildOptions = {}): Promise<FerryService> {
  const log = opts.logger ?? pino({ level: config.logLevel, redact: { paths: REDACT_PATHS, censor: '[redacted]' } });
  tidyDataDir(log, config.dataDir);
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    preinstalledConnectors: preinstalledConnectors(),
    onConnectionError: (err) => log.warn({ err }, 'a PostgreSQL connection failed; the pool replaces it'),
  });
  try {
    const secrets = secretsFor(config);
    const boot = await bootstrap(store, secrets, config);
    // Notification mails: queued in the store by the triggers below, sent by the sender loop.
    const { notifications, sender: mailSender } = notificationMails(config, { store, log, timing: opts.mailOutbox });
    // The Agent side: channel sessions, commands over them, log archives, Cloud Agents.
    const registry = new SessionRegistry();
    const metrics = serviceMetricsFor(store, registry);
    const { replicas, claims, commands } = agentCommands(config, store, registry, log);
    const agentUpdates = agentUpdatesOf(config, store, commands, registry, log);
    const logArchives =
      store.dialect === 'postgres' ? new DatabaseLogArchives(store) : new LogArchiveFiles(config.dataDir);
    const supervisor = cloudAgents(config, store, claims, log);
    const { packages, connectors } = connectorInstalls(config, store, commands, notifications, log);
    const metadata = new ConnectionMetadata({ db: store.db, secrets, commands, replicaId: replicas?.replicaId });
    const { assignments, prepareJobs, solutionRuns, solutions, abandonedPrepares } = await solutionsOnAgents(
      store,
      secrets,
      commands,
      metadata,
      log,
      replicas && { replicaId: replicas.replicaId, claims },
    );
    const readiness = new Readiness();
    const maps = new SolutionMaps({ db: store.db });
    const history = historyOf(store, secrets, commands, assignments, log);
    const events = new EventMessages({ store, commands, log });
    const eventAccess = eventAccessChanges(config, events, log);
    const lostReprocessRuns = lostReprocessRunsOf(store, registry, commands, history, log, opts.lostReprocessRunsMs);
    const app = await buildApp({
      config,
      store,
      secrets,
      rateLimiter: rateLimiterFor(store, config),
      loginThrottle: opts.loginThrottle ?? loginThrottleFor(store, config),
      log,
      agents: { commands, logArchives, cloudAgents: supervisor ?? NO_CLOUD_AGENTS, updates: agentUpdates },
      connectors,
      connections: new Connections({ db: store.db, secrets, marketplace: connectors }),
      metadata,
      connectionCommands: new ConnectionCommands({ db: store.db, secrets, commands, marketplace: connectors }),
      solutions,
      maps,
      mapPreviews: new MapPreviews({ db: store.db, secrets, commands, maps, log }),
      mapRuns: new MapRuns({ db: store.db, maps, runs: solutionRuns, prepare: prepareJobs }),
      history,
      prepareJobs,
      solutionRuns,
      assignments,
      readiness,
      events,
      processId: replicas?.replicaId ?? randomUUID(),
      metrics,
    });
    const runReports = runReportsOf(log, store, notifications, events, metrics);
    const gateway = new AgentGateway({
      store,
      config,
      log,
      registry,
      metrics,
      ...(replicas ? { leases: replicas } : {}),
      reports: agentReports(runReports, secrets),
      onConnected: (agentId, agent) => {
        void connectors
          .reconcile(agentId, agent)
          .catch((err: unknown) => log.error({ err, agentId }, 'connector reconcile failed'));
        assignments.syncSoon(agentId);
        agentUpdates.connected(agent).catch((err: unknown) => log.error({ err, agentId }, 'agent update check failed'));
        retention.pruneAgent(agentId);
        lostReprocessRuns.connected(agentId);
        events.connected(agentId);
      },
    });
    gateway.attach(app.server);
    const { sweeper, housekeeping, retention } = agentJobs(
      config,
      store,
      registry,
      commands,
      logArchives,
      notifications,
      log,
      claims,
    );
    const timed = [sweeper, housekeeping, retention, events, agentUpdates, ...present(abandonedPrepares, eventAccess)];
    const closeOnce = async () => {
      readiness.drain();
      // Cloud Agents first, so that their shutdown reports still reach the gateway.
      await supervisor?.close();
      connectors.stop();
      await Promise.all([...timed.map((job) => job.stop()), mailSender?.stop()]);
      await claims.releaseAll().catch((err: unknown) => log.warn({ err }, 'job claims not given up'));
      // The Agents reconnect at once (close 1012), through the load balancer to another replica.
      await gateway.close();
      await replicas?.stop();
      // After the channels closed: no connect starts another check.
      await lostReprocessRuns.stop();
      // After the channels closed: a prepare waiting on an Agent ends now, before the store closes.
      await prepareJobs.settled();
      await app.close();
      // A package build started by a request or a reconcile must not write after the close.
      await packages.settled();
      await store.close();
    };
    // A second close (a drain, then Ctrl-C) waits for the first.
    let closing: Promise<void> | undefined;
    const close = () => (closing ??= closeOnce());
    return {
      app,
      store,
      bootstrap: boot,
      connectors,
      replicaId: replicas?.replicaId,
      metricsUrl: () => metrics.listenerUrl,
      async listen() {
        await replicas?.start();
        await app.listen({ port: config.port, host: config.host });
        const url = listeningUrl(app, config);
        for (const job of timed) job.start();
        lostReprocessRuns.start();
        connectors.start();
        mailSender?.start();
        // Cloud Agents run beside the Service and reach it on the address it listens at.
        await supervisor?.begin(url);
        return url;
      },
      async drain(delayMs = (config.drainDelay ?? (config.databaseUrl ? 5 : 0)) * 1000) {
        readiness.drain();
        log.info({ delayMs }, 'draining: /readyz answers 503 until the load balancer has taken this replica out');
        if (delayMs > 0) await pause(delayMs);
        await close();
      },
      close,
    };
  } catch (err) {
    await store.close();
    throw err;
  }
}
