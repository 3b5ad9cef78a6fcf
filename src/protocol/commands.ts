import { z } from 'zod';
import {
  ConnectorCommandReceived,
  InstallConnectorCommand,
  LoadMetadataCommand,
  Ping,
  Pong,
  PreconnectCommand,
  PreconnectResult,
  Reply,
  RestartCommand,
  RestartResult,
  TestConnectionCommand,
  TestConnectionResult,
  UninstallConnectorCommand,
  UpdateAgentCommand,
  UpdateAgentResult,
  ZipLogsCommand,
  ZipLogsResult,
} from './channel.js';
import { LoadMetadataResult } from './metadata.js';
import { MessagesWaitingCommand, MessagesWaitingResult, RunRequestCommand, RunRequestResult } from './events.js';
import { NativeQueryTestCommand, PreviewQueryCommand, PreviewResult } from './previews.js';
import { KnownRunsCommand, KnownRunsResult, ReprocessRunCommand, ReprocessRunResult } from './reprocess.js';
import { PruneFailedRecordsCommand, PruneFailedRecordsResult } from './retention.js';
import {
  AssignSolutionsCommand,
  AssignSolutionsResult,
  MonitorSolutionCommand,
  MonitorSolutionResult,
  ChangeCaptureStatusCommand,
  ChangeCaptureStatusResult,
  PutSolutionCommand,
  PutSolutionResult,
  StartSolutionCommand,
  StartSolutionResult,
  StopSolutionCommand,
  StopSolutionResult,
} from './solutions.js';

/**
 * The commands the Service sends an Agent, each bound once to its request, its result and its
 * time-out. Both halves read this table: the Agent parses every request with the union of the
 * requests ({@link ServiceRequest}) and answers with the result's input type; the Service sends a
 * request, waits `timeoutMs` for the reply and parses its result with the same schema.
 *
 *   Service: AgentCommands.send(agentId, {type: K, …})         Agent: CommandHandlers
 *     │ COMMANDS[K].timeoutMs ─▶ CommandBus ─▶ {id, type: K, …} ─▶ ServiceRequest.parse
 *     │                                                            ─▶ handler registered for K
 *     │ COMMANDS[K].result.parse ◀── {re, ok: true, result} ◀────────┘ (or {re, ok: false, error})
 *
 * A new command is a request and a result schema in its area's protocol file, one entry here, and
 * one handler file on the Agent (src/agent/commands/<kind>.command.ts) registered by kind.
 */

/** What a command kind is bound to. */
export interface CommandSpec<
  Req extends z.ZodObject<{ id: z.ZodString; type: z.ZodLiteral<string> }>,
  Res extends z.ZodType,
> {
  /** The request as it travels (with its message `id`, which the Service's bus assigns). */
  readonly request: Req;
  /** The `result` of an `{ok: true}` reply. */
  readonly result: Res;
  /** How long the Service waits for the reply before CHN_TIMEOUT. */
  readonly timeoutMs: number;
}

/** Binds a command's request, result and time-out (as Temporal's `defineQuery` binds a name to its types). */
function defineCommand<Req extends z.ZodObject<{ id: z.ZodString; type: z.ZodLiteral<string> }>, Res extends z.ZodType>(
  spec: CommandSpec<Req, Res>,
): CommandSpec<Req, Res> {
  return spec;
}

const SECONDS = 1000;
const MINUTES = 60 * SECONDS;

/** The command table. Keys are the requests' `type`s (a test checks that they agree). */
export const COMMANDS = {
  /** Only acknowledged; the restart happens after, when work allows. */
  restart: defineCommand({ request: RestartCommand, result: RestartResult, timeoutMs: 10 * SECONDS }),
  /** Only acknowledged; the zip and upload go on after (a failure comes as a report). */
  zipLogs: defineCommand({ request: ZipLogsCommand, result: ZipLogsResult, timeoutMs: 10 * SECONDS }),
  /** Acknowledged once the Agent queued the change; the outcome arrives as `connectorInstall` reports. */
  installConnector: defineCommand({
    request: InstallConnectorCommand,
    result: ConnectorCommandReceived,
    timeoutMs: 30 * SECONDS,
  }),
  uninstallConnector: defineCommand({
    request: UninstallConnectorCommand,
    result: ConnectorCommandReceived,
    timeoutMs: 30 * SECONDS,
  }),
  /** Acknowledged once the Agent took the update in hand; a failure arrives as an `agentUpdate` report. */
  updateAgent: defineCommand({ request: UpdateAgentCommand, result: UpdateAgentResult, timeoutMs: 30 * SECONDS }),
  /** The answer is the plugin's, whose own time-out is 60 s. */
  testConnection: defineCommand({
    request: TestConnectionCommand,
    result: TestConnectionResult,
    timeoutMs: 90 * SECONDS,
  }),
  preconnect: defineCommand({ request: PreconnectCommand, result: PreconnectResult, timeoutMs: 90 * SECONDS }),
  /** The plugin may take 10 minutes to read a large datastore's schema. */
  loadMetadata: defineCommand({ request: LoadMetadataCommand, result: LoadMetadataResult, timeoutMs: 11 * MINUTES }),
  /** The Agent stores the list or the definition locally. */
  assignSolutions: defineCommand({
    request: AssignSolutionsCommand,
    result: AssignSolutionsResult,
    timeoutMs: 30 * SECONDS,
  }),
  putSolution: defineCommand({ request: PutSolutionCommand, result: PutSolutionResult, timeoutMs: 30 * SECONDS }),
  /** Answered from the Agent's run queue at once; the run itself reports through the outbox. */
  startSolution: defineCommand({ request: StartSolutionCommand, result: StartSolutionResult, timeoutMs: 10 * SECONDS }),
  stopSolution: defineCommand({ request: StopSolutionCommand, result: StopSolutionResult, timeoutMs: 10 * SECONDS }),
  monitorSolution: defineCommand({
    request: MonitorSolutionCommand,
    result: MonitorSolutionResult,
    timeoutMs: 10 * SECONDS,
  }),
  /** Read from the source by the Agent: a query of the source's slot. */
  changeCaptureStatus: defineCommand({
    request: ChangeCaptureStatusCommand,
    result: ChangeCaptureStatusResult,
    timeoutMs: 45 * SECONDS,
  }),
  /** The answer is the first records, read within the Agent's own time-out of 60 s. */
  previewQuery: defineCommand({ request: PreviewQueryCommand, result: PreviewResult, timeoutMs: 90 * SECONDS }),
  nativeQueryTest: defineCommand({ request: NativeQueryTestCommand, result: PreviewResult, timeoutMs: 90 * SECONDS }),
  /** Answered from the Agent's run queue at once, like startSolution. */
  reprocessRun: defineCommand({ request: ReprocessRunCommand, result: ReprocessRunResult, timeoutMs: 10 * SECONDS }),
  /** Answered from the Agent's open runs and outbox at once. */
  knownRuns: defineCommand({ request: KnownRunsCommand, result: KnownRunsResult, timeoutMs: 10 * SECONDS }),
  /** Answered once the Agent removed its local failed records past the History window, a large store in chunks. */
  pruneFailedRecords: defineCommand({
    request: PruneFailedRecordsCommand,
    result: PruneFailedRecordsResult,
    timeoutMs: 5 * MINUTES,
  }),
  /** Answered at once: a run of the Solution takes its messages (docs/events.md). */
  messagesWaiting: defineCommand({
    request: MessagesWaitingCommand,
    result: MessagesWaitingResult,
    timeoutMs: 10 * SECONDS,
  }),
  /** Answered with the Map's reply; the caller's own time-out (FERRY_EVENT_REQUEST_TIMEOUT) ends the wait first. */
  runRequest: defineCommand({ request: RunRequestCommand, result: RunRequestResult, timeoutMs: 10 * MINUTES }),
} as const;

type Table = typeof COMMANDS;

/** A command kind: a key of {@link COMMANDS}, the `type` of its request. */
export type CommandKind = keyof Table;

/** The request of kind `K` as it travels (with its message `id`). */
export type CommandRequest<K extends CommandKind> = z.output<Table[K]['request']>;

/** The result of kind `K` as the Service reads it (parsed by its schema). */
export type CommandResult<K extends CommandKind> = z.output<Table[K]['result']>;

/** The result of kind `K` as the Agent answers it (before the Service's parse). */
export type CommandAnswer<K extends CommandKind> = z.input<Table[K]['result']>;

/** A command of any kind as it travels. */
export type ServiceRequest = { [K in CommandKind]: CommandRequest<K> }[CommandKind];

const requests = Object.values(COMMANDS).map((c) => c.request) as [
  Table[CommandKind]['request'],
  ...Table[CommandKind]['request'][],
];

/** Every command request, told apart by `type`: what the Agent parses a command with. */
export const ServiceRequest: z.ZodType<ServiceRequest> = z.discriminatedUnion('type', requests);

/** Anything the Agent may receive: a command, a reply to its own request, a keepalive. */
export const FromService = z.union([ServiceRequest, Reply, Ping, Pong]);
export type FromService = z.infer<typeof FromService>;

/** Whether `kind` names a command of the table. */
export function isCommandKind(kind: string): kind is CommandKind {
  return Object.hasOwn(COMMANDS, kind);
}
