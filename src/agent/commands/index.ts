/**
 * The Agent's handler of each command kind (src/protocol/commands.ts), registered in the table the
 * channel dispatches through (`CommandHandlers`). A new command is one `<kind>.command.ts` (imitate
 * `stop-solution.command.ts`) registered here; the Agent refuses to build while a kind of the
 * command table has no handler.
 */
import type { Logger } from 'pino';
import type { Outbox } from '../../channel/outbox.js';
import type { ConnectorHost } from '../../connectors/host.js';
import { FerryError } from '../../errors/ferry-error.js';
import type { AgentLogger } from '../../logs/logger.js';
import type { SolutionRunner } from '../../solutions/runner.js';
import type { SolutionStore } from '../../solutions/solution-store.js';
import type { CommandHandlers } from '../command-handlers.js';
import type { ConnectorInstaller } from '../connector-installer.js';
import type { InstancePaths } from '../home.js';
import type { AgentUpdater } from '../agent-update.js';
import type { RestartController } from '../restart.js';
import type { SchedulerGate } from '../scheduler-gate.js';
import type { WorkRegistry } from '../work.js';
import { assignSolutionsCommand } from './assign-solutions.command.js';
import { changeCaptureStatusCommand } from './change-capture-status.command.js';
import { installConnectorCommand } from './install-connector.command.js';
import { knownRunsCommand } from './known-runs.command.js';
import { loadMetadataCommand } from './load-metadata.command.js';
import { monitorSolutionCommand } from './monitor-solution.command.js';
import { nativeQueryTestCommand } from './native-query-test.command.js';
import { preconnectCommand } from './preconnect.command.js';
import { previewQueryCommand } from './preview-query.command.js';
import { pruneFailedRecordsCommand } from './prune-failed-records.command.js';
import { putSolutionCommand } from './put-solution.command.js';
import { reprocessRunCommand } from './reprocess-run.command.js';
import { restartCommand } from './restart.command.js';
import { startSolutionCommand } from './start-solution.command.js';
import { messagesWaitingCommand } from './messages-waiting.command.js';
import { runRequestCommand } from './run-request.command.js';
import { stopSolutionCommand } from './stop-solution.command.js';
import { testConnectionCommand } from './test-connection.command.js';
import { uninstallConnectorCommand } from './uninstall-connector.command.js';
import { updateAgentCommand } from './update-agent.command.js';
import { zipLogsCommand } from './zip-logs.command.js';

/** The parts of the Agent the handlers act on. */
export interface AgentCommandDeps {
  readonly logger: AgentLogger;
  /** The Agent's logger (`component: 'agent'`). */
  readonly log: Logger;
  readonly paths: InstancePaths;
  readonly serviceUrl: string;
  /** The Agent's bearer credentials for the Service's HTTP endpoints. */
  readonly authorization: string;
  readonly work: WorkRegistry;
  readonly outbox: Outbox;
  readonly restart: RestartController;
  readonly updater: AgentUpdater;
  readonly host: () => Promise<ConnectorHost>;
  readonly installer: ConnectorInstaller;
  readonly solutionStore: SolutionStore;
  readonly runner: SolutionRunner;
  /** Told of the Service's assignment lists and of every change of the held Solutions. */
  readonly gate: Pick<SchedulerGate, 'received' | 'assigned'>;
}

/** Registers a handler for every command kind; throws SVC_INTERNAL when one is left without. */
export function registerAgentCommands(commands: CommandHandlers, deps: AgentCommandDeps): void {
  const { logger, log, paths, work, outbox, host, installer, solutionStore: store, runner, gate } = deps;
  const assigned = (): void => gate.assigned();
  commands
    .on('restart', restartCommand({ restart: deps.restart, log }))
    .on(
      'zipLogs',
      zipLogsCommand({
        work,
        outbox,
        log: logger.log.child({ component: 'logs' }),
        logsDir: paths.logs,
        tmpDir: paths.data,
        serviceUrl: deps.serviceUrl,
        authorization: deps.authorization,
        flushLogs: () => logger.flush(),
      }),
    )
    .on('testConnection', testConnectionCommand({ work, log, host }))
    .on('loadMetadata', loadMetadataCommand({ work, log, host }))
    .on('preconnect', preconnectCommand({ work, log, host }))
    .on('installConnector', installConnectorCommand({ installer }))
    .on('uninstallConnector', uninstallConnectorCommand({ installer }))
    .on('updateAgent', updateAgentCommand({ updater: deps.updater }))
    // The scheduler gate waits to hold what the Service's first list names (scheduler-gate.ts).
    .on(
      'assignSolutions',
      assignSolutionsCommand({ store, log, received: (list) => gate.received(list), assigned, host }),
    )
    .on('putSolution', putSolutionCommand({ store, log, assigned }))
    .on('startSolution', startSolutionCommand({ runner }))
    .on('messagesWaiting', messagesWaitingCommand({ runner }))
    .on('runRequest', runRequestCommand({ runner }))
    .on('stopSolution', stopSolutionCommand({ runner }))
    .on('monitorSolution', monitorSolutionCommand({ runner }))
    .on('changeCaptureStatus', changeCaptureStatusCommand({ store, host, log }))
    .on('previewQuery', previewQueryCommand({ work, log, host }))
    .on('nativeQueryTest', nativeQueryTestCommand({ work, log, host }))
    .on('reprocessRun', reprocessRunCommand({ runner }))
    .on('knownRuns', knownRunsCommand({ runner, outbox }))
    .on(
      'pruneFailedRecords',
      pruneFailedRecordsCommand({
        folder: paths.failures,
        busy: () => runner.runningCount > 0 || store.openRuns().length > 0,
        log: logger.log.child({ component: 'failures' }),
      }),
    );
  const unhandled = commands.missing();
  if (unhandled.length > 0) {
    const message = `The Agent has no handler for the ${unhandled.join(', ')} command.`;
    throw new FerryError('SVC_INTERNAL', message, { details: { commands: unhandled } });
  }
}
