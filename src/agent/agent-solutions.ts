import type { Logger } from 'pino';
import type { Outbox } from '../channel/outbox.js';
import type { ConnectorHost } from '../connectors/host.js';
import type { AgentLogger } from '../logs/logger.js';
import { serviceReprocessPages } from '../failures/pages.js';
import { fetchLookupTables } from '../solutions/lookup-tables.js';
import { serviceMessageTaker } from '../solutions/message-taker.js';
import { SolutionRunner } from '../solutions/runner.js';
import { Scheduler } from '../solutions/scheduler.js';
import { BrokerSources } from '../solutions/brokers/broker-sources.js';
import { SolutionStore } from '../solutions/solution-store.js';
import type { AgentConfig } from './config.js';
import type { AgentMetrics } from './metrics.js';
import type { InstancePaths } from './home.js';
import { scheduledRuns } from './scheduled-runs.js';
import { SchedulerGate } from './scheduler-gate.js';
import type { Component } from './components.js';
import type { WorkRegistry } from './work.js';

/** The Solutions part of an Agent; build-agent.ts lists each piece as a component. */
export interface AgentSolutions {
  /** The local copy of what prepare built, and the runs open. */
  readonly store: SolutionStore;
  /** The run queue. */
  readonly runner: SolutionRunner;
  /**
   * What follows the held Solutions, as one component: the scheduler, behind the gate that decides
   * when it starts (scheduler-gate.ts), and the consumptions of the Message Maps fed by RabbitMQ or
   * NATS JetStream (brokers/broker-sources.ts). The commands tell it of every change.
   */
  readonly follow: Component & Pick<SchedulerGate, 'received' | 'assigned'>;
}

/**
 * Builds the Agent's Solutions: the local copy, the runner, and the schedules, which fire here
 * from the local copy so that scheduled runs go on while the Service is unreachable.
 */
export function buildAgentSolutions(deps: {
  readonly config: AgentConfig;
  readonly paths: InstancePaths;
  readonly agentSecret: string;
  readonly serviceUrl: string;
  readonly authorization: string;
  readonly host: () => Promise<ConnectorHost>;
  readonly work: WorkRegistry;
  readonly outbox: Outbox;
  readonly logger: AgentLogger;
  /** The Agent's logger (`component: 'agent'`). */
  readonly log: Logger;
  /** The Agent's metrics: told of every run report and batch. */
  readonly metrics?: Pick<AgentMetrics, 'report' | 'batch' | 'capture'> | undefined;
}): AgentSolutions {
  const { config, paths, serviceUrl, authorization, work, outbox, log } = deps;
  const root = deps.logger.log;
  const store = new SolutionStore(paths.state.solutions, deps.agentSecret);
  // Messages from a broker wake the runner as the Service's messagesWaiting does.
  const brokers = new BrokerSources({
    held: () => store.list(),
    host: deps.host,
    notify: (solutionId) => void runner.messagesWaiting(solutionId),
    log: root.child({ component: 'brokers' }),
  });
  const runner: SolutionRunner = new SolutionRunner({
    store,
    host: deps.host,
    work,
    report: (body) => {
      outbox.enqueue(body);
      deps.metrics?.report(body);
    },
    reportAll: (bodies) => {
      outbox.enqueueAll(bodies);
      for (const body of bodies) deps.metrics?.report(body);
    },
    ...(deps.metrics ? { onBatch: deps.metrics.batch, onChangeCapture: deps.metrics.capture } : {}),
    log: root.child({ component: 'solutions' }),
    dataDir: paths.data,
    concurrency: config.runConcurrency,
    targetRetryMs: config.targetRetryMs,
    runsOn: config.cloud ? 'cloud' : 'local',
    lookupTables: (_orgId, names) =>
      fetchLookupTables({ serviceUrl, authorization, names, cacheDir: paths.state.lookupTables }),
    reprocessPages: serviceReprocessPages({ serviceUrl, authorization }),
    messages: brokers.taker(serviceMessageTaker({ serviceUrl, authorization })),
  });
  const scheduler = new Scheduler({
    file: paths.state.schedules,
    graceMs: config.scheduleGraceMs,
    ...scheduledRuns({ runner, work, report: (body) => void outbox.enqueue(body), log }),
    log: root.child({ component: 'scheduler' }),
  });
  const gate = new SchedulerGate({
    scheduler,
    held: () => store.list(),
    requestTimeoutMs: config.requestTimeoutMs,
    graceMs: config.scheduleGraceMs,
    log,
  });
  const follow = {
    name: 'scheduler and broker consumptions',
    start: () => {
      gate.start();
      brokers.start();
    },
    stop: async () => {
      await brokers.stop();
      gate.stop();
    },
    received: (list: Parameters<SchedulerGate['received']>[0]) => gate.received(list),
    assigned: () => {
      gate.assigned();
      brokers.sync();
    },
  };
  return { store, runner, follow };
}
