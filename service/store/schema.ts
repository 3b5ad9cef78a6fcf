import type { Generated, Insertable, Selectable, Updateable } from 'kysely';
import type { Flag } from '../util/values.js';
import type {
  AgentChannelsTable,
  AgentCommandsTable,
  LimitWindowsTable,
  LogArchiveChunksTable,
  ServiceLeasesTable,
} from './schema-replicas.js';
import type {
  EventIdempotencyTable,
  EventMessagesTable,
  EventRepliesTable,
  MessageEndpointsTable,
} from './schema-events.js';
import type { AgentUpdateColumns } from './schema-agent-updates.js';
import type { CloneTables } from './schema-clones.js';
import type { ConsoleTables } from './schema-console.js';

export type * from './schema-events.js';
export type * from './schema-replicas.js';

/**
 * Table types of the Service store, in camelCase (the CamelCasePlugin maps them to snake_case
 * columns). Booleans are stored as 0/1 integers and timestamps as ISO-8601 UTC text on both SQLite
 * and PostgreSQL, so that one repository serves both; repositories convert at the edge.
 */
export interface Database extends CloneTables, ConsoleTables {
  agents: AgentsTable;
  agentInstallationKeys: AgentInstallationKeysTable;
  agentReports: AgentReportsTable;
  agentLogs: AgentLogsTable;
  orgs: OrgsTable;
  securityRules: SecurityRulesTable;
  users: UsersTable;
  memberships: MembershipsTable;
  invitations: InvitationsTable;
  subscriptions: SubscriptionsTable;
  subscriptionUsage: SubscriptionUsageTable;
  lookupTables: LookupTablesTable;
  lookupTableValues: LookupTableValuesTable;
  exports: ExportsTable;
  connections: ConnectionsTable;
  connectionTests: ConnectionTestsTable;
  connectionMetadata: ConnectionMetadataTable;
  metadataRequests: MetadataRequestsTable;
  orgConnectors: OrgConnectorsTable;
  agentConnectorInstalls: AgentConnectorInstallsTable;
  managedConnectors: ManagedConnectorsTable;
  managedConnectorCustomers: ManagedConnectorCustomersTable;
  solutions: SolutionsTable;
  maps: MapsTable;
  mapRevisions: MapRevisionsTable;
  executions: ExecutionsTable;
  executionErrors: ExecutionErrorsTable;
  scheduleSkips: ScheduleSkipsTable;
  prepareJobs: PrepareJobsTable;
  preparedSolutions: PreparedSolutionsTable;
  solutionMoves: SolutionMovesTable;
  failedRecords: FailedRecordsTable;
  mapExports: MapExportsTable;
  mapPreviews: MapPreviewsTable;
  mapRuns: MapRunsTable;
  mapValidations: MapValidationsTable;
  historyExports: HistoryExportsTable;
  mailOutbox: MailOutboxTable;
  agentChannels: AgentChannelsTable;
  agentCommands: AgentCommandsTable;
  limitWindows: LimitWindowsTable;
  serviceLeases: ServiceLeasesTable;
  logArchiveChunks: LogArchiveChunksTable;
  messageEndpoints: MessageEndpointsTable;
  eventMessages: EventMessagesTable;
  eventIdempotency: EventIdempotencyTable;
  eventReplies: EventRepliesTable;
}

/** 0 or 1: a boolean column (SQLite has no boolean type). */
export type { Flag };

export interface OrgsTable {
  id: Generated<number>;
  name: string;
  parentId: number | null;
  tenantId: string;
  city: string | null;
  country: string | null;
  dataCenterId: number;
  isSvcOrg: Flag;
  /** Encrypted under the master key. */
  apiCryptoToken: string;
  /** Encrypted under the master key. */
  eventSolutionAccessToken: string;
  captureOnFailedRecordsForReprocessing: Flag;
  captureDuringCloudAppRuns: Flag;
  captureDuringLocalAgentAppRuns: Flag;
  isSourceDataLocal: Flag;
  isAgentLogDownloadAllowed: Flag;
  createdAt: string;
  modifiedAt: string;
  modificationBy: string | null;
}

export interface SecurityRulesTable {
  id: string;
  orgId: number;
  name: string;
  allowedIpRangeStartAddress: string;
  allowedIpRangeEndAddress: string;
  apiAccessEnabled: Flag;
  eventSolutionAccessEnabled: Flag;
  position: number;
  createdAt: string;
}

export interface UsersTable {
  id: string;
  email: string;
  /** Lower-cased email: the unique login key. */
  emailKey: string;
  firstName: string | null;
  lastName: string | null;
  company: string | null;
  country: string | null;
  state: string | null;
  postalCode: string | null;
  phone: string | null;
  jobTitle: string | null;
  httpReferrer: string | null;
  leadSource: string | null;
  isApproved: Flag;
  /** scrypt hash; null until the person has set a password. */
  passwordHash: string | null;
  createdAt: string;
  modifiedAt: string;
}

export type RoleType = 'Administrator' | 'User' | 'ReadOnly';

export interface MembershipsTable {
  orgId: number;
  userId: string;
  roleType: RoleType;
  connectorActivationEmail: Flag;
  eventFailedJobEmail: Flag;
  failedJobEmail: Flag;
  failedRowsEmail: Flag;
  heartbeatEmail: Flag;
  systemUpdateEmail: Flag;
  createdAt: string;
}

export interface InvitationsTable {
  id: string;
  orgId: number;
  email: string;
  emailKey: string;
  roleType: RoleType;
  statusType: 'Pending' | 'Declined';
  sender: string;
  message: string | null;
  invitedDate: string;
  /** SHA-256 of the one-time registration token, for people without an account. */
  tokenHash: string | null;
  tokenExpiresAt: string | null;
}

export interface SubscriptionsTable {
  id: string;
  orgId: number;
  name: string;
  description: string | null;
  startDate: string;
  expirationDate: string;
  isTrial: Flag;
  recordsAllowed: string;
  recordsProcessed: number;
  sku: string | null;
  tscAccountId: string | null;
  tscRegion: string | null;
  tscSubscriptionId: string | null;
  /** Most Connections per Connector in the Organization; null: no limit. */
  connectionsPerConnector: Generated<number | null>;
}

export interface SubscriptionUsageTable {
  subscriptionId: string;
  /** First day of the month, `YYYY-MM-01`. */
  month: string;
  recordsProcessed: number;
}

export interface LookupTablesTable {
  id: string;
  orgId: number;
  name: string;
  /** Lower-cased name: unique per Organization. */
  nameKey: string;
  description: string | null;
  creationDate: string;
  lastModificationDate: string;
  modificationBy: string | null;
}

export interface LookupTableValuesTable {
  id: string;
  tableId: string;
  /** Insertion order within the table. */
  seq: number;
  value1: string;
  value2: string;
  creationDate: string;
  lastModificationDate: string;
}

export interface ExportsTable {
  id: Generated<number>;
  orgId: number;
  kind: string;
  resourceId: string;
  createdAt: string;
  usedAt: string | null;
}

export type OrgRow = Selectable<OrgsTable>;
export type NewOrgRow = Insertable<OrgsTable>;
export type OrgUpdate = Updateable<OrgsTable>;
export type SecurityRuleRow = Selectable<SecurityRulesTable>;
export type UserRow = Selectable<UsersTable>;
export type MembershipRow = Selectable<MembershipsTable>;
export type InvitationRow = Selectable<InvitationsTable>;
export type SubscriptionRow = Selectable<SubscriptionsTable>;
export type LookupTableRow = Selectable<LookupTablesTable>;
export type LookupTableValueRow = Selectable<LookupTableValuesTable>;

/** An Agent: On-Premise (registered with an installation key) or the Organization's Cloud Agent. */
export interface AgentsTable extends AgentUpdateColumns {
  id: string;
  orgId: number;
  name: string;
  /** Lower-cased name: unique per Organization. */
  nameKey: string;
  machineName: string;
  serviceName: string;
  isCloudAgent: Flag;
  isUpdating: Flag;
  /** One of AGENT_STATUSES (src/protocol/agent-status.ts). */
  status: string;
  lastContactTime: string | null;
  lastShutdownTime: string | null;
  lastStartTime: string | null;
  version: string | null;
  /** JSON array of `{connectorId, version}`. */
  installedConnectors: string;
  /** SHA-256 of the Agent's bearer secret; null until it registered. */
  secretHash: string | null;
  /** Installation fingerprint from registration (or the first hello); another one is a clone. */
  fingerprint: string | null;
  createdAt: string;
  modifiedAt: string;
}

export interface AgentInstallationKeysTable {
  /** SHA-256 of the key; the key itself is shown once. */
  keyHash: string;
  orgId: number;
  /** The Cloud Agent a key was made for, or the Agent a used key registered. */
  agentId: string | null;
  createdBy: string | null;
  createdAt: string;
  expiresAt: string;
  usedAt: string | null;
}

/** One row per (agent, durable message ID): what makes a resent report count once. */
export interface AgentReportsTable {
  agentId: string;
  messageId: string;
  kind: string;
  /** The report as JSON. */
  body: string;
  receivedAt: string;
}

export type AgentLogState = 'Requested' | 'Ready' | 'Downloaded' | 'Failed';

export interface AgentLogsTable {
  /** The logId. */
  id: string;
  orgId: number;
  agentId: string;
  solutionId: string | null;
  requesterIp: string;
  requestedBy: string;
  state: AgentLogState;
  sizeBytes: number | null;
  error: string | null;
  requestedAt: string;
  uploadedAt: string | null;
  downloadedAt: string | null;
}

export type AgentRow = Selectable<AgentsTable>;
export type NewAgentRow = Insertable<AgentsTable>;
export type AgentUpdate = Updateable<AgentsTable>;
export type AgentInstallationKeyRow = Selectable<AgentInstallationKeysTable>;
export type AgentLogRow = Selectable<AgentLogsTable>;

/** A Connection: a Connector plus the properties that reach one datastore. */
export interface ConnectionsTable {
  id: string;
  orgId: number;
  name: string;
  /** Lower-cased name (the name filter). */
  nameKey: string;
  alias: string;
  connectorId: string;
  color: string;
  /** JSON object `{property: value}` of plain values, sealed as a whole with the SecretBox. */
  properties: string;
  createDateTime: string;
  lastModificationDateTime: string;
  modificationBy: string | null;
  /** The Agent that last tested the Connection with SUCCESS or loaded its metadata (migration 027); null until one did. */
  lastTestedAgentId: Generated<string | null>;
}

export type ConnectionTestStatus = 'Requested' | 'Completed';

/** A Connection test sent to an Agent, and its result once the Agent replied. */
export interface ConnectionTestsTable {
  /** The commandId. */
  id: string;
  orgId: number;
  agentId: string;
  /** Null when an unsaved Connection model was tested. */
  connectionId: string | null;
  /** The Connection's name. */
  name: string;
  status: ConnectionTestStatus;
  /** SUCCESS or the error message. */
  reply: string | null;
  requestedAt: string;
  completedAt: string | null;
  /** `test` (a Connection test) or `preconnect` (a Connector's preconnect step). */
  kind: Generated<ConnectionCommandKind>;
  /** JSON `[{key, value}]` the plugin answered with (values sealed under the master key), or null. */
  replyData: Generated<string | null>;
}

export type ConnectionCommandKind = 'test' | 'preconnect';

export type ConnectionRow = Selectable<ConnectionsTable>;
export type ConnectionUpdate = Updateable<ConnectionsTable>;
export type ConnectionTestRow = Selectable<ConnectionTestsTable>;

/** The metadata cache of a Connection. */
export interface ConnectionMetadataTable {
  connectionId: string;
  orgId: number;
  /** The Agent that loaded it (and loads it again after a reset when no agentId is given). */
  agentId: string;
  /** The Agent's ConnectionMetadata as JSON; null after a reset (the next call reloads). */
  metadata: string | null;
  loadedAt: string | null;
}

export type MetadataRequestState = 'Requested' | 'Completed' | 'Failed';

/** A metadata load sent to an Agent. */
export interface MetadataRequestsTable {
  id: string;
  orgId: number;
  connectionId: string;
  agentId: string;
  /** The Connection's name when the request was made. */
  objectName: string | null;
  startDate: string;
  endDate: string | null;
  state: MetadataRequestState;
  errorMessage: string | null;
  /** 1 once a metadata call has answered with this failure (the next call starts a new load). */
  errorSeen: Generated<Flag>;
  /** The Service replica that sent the load (PostgreSQL with replicas; null on SQLite). */
  replicaId: string | null;
}

export type ConnectionMetadataRow = Selectable<ConnectionMetadataTable>;
export type MetadataRequestRow = Selectable<MetadataRequestsTable>;

/** A Connector installed in an Organization: the version its Agents run, and its lock. */
export interface OrgConnectorsTable {
  orgId: number;
  connectorId: string;
  /** The version installed (the locked one while locked). */
  version: string;
  isLocked: Flag;
  lockCreatedAt: string | null;
  lockModifiedAt: string | null;
  lockModifiedBy: string | null;
  installedAt: string;
  installedBy: string | null;
}

/** The Marketplace install statuses of SPEC.md, in order. */
export const INSTALL_STATUSES = [
  'SendingCommandToTheAgent',
  'AgentReceivedCommand',
  'AgentDownloadingConnectorUpdate',
  'AgentServiceRestarting',
  'InstallFailed',
  'InstallTimedOut',
  'Installed',
] as const;
export type InstallStatus = (typeof INSTALL_STATUSES)[number];
/** Statuses after which nothing more happens. */
export const FINAL_INSTALL_STATUSES: readonly InstallStatus[] = ['InstallFailed', 'InstallTimedOut', 'Installed'];

/** The latest install or uninstall of a Connector on one Agent. */
export interface AgentConnectorInstallsTable {
  agentId: string;
  connectorId: string;
  orgId: number;
  operation: 'install' | 'uninstall';
  version: string;
  status: InstallStatus;
  error: string | null;
  requestedAt: string;
  updatedAt: string;
}

/** The vendor Organization that manages a private (Managed) Connector. */
export interface ManagedConnectorsTable {
  connectorId: string;
  vendorOrgId: number;
  assignedAt: string;
}

/** An Organization the vendor granted a Managed Connector to. */
export interface ManagedConnectorCustomersTable {
  connectorId: string;
  orgId: number;
  provisionedBy: string;
  provisionedDate: string;
}

export type OrgConnectorRow = Selectable<OrgConnectorsTable>;
export type AgentConnectorInstallRow = Selectable<AgentConnectorInstallsTable>;
export type ManagedConnectorCustomerRow = Selectable<ManagedConnectorCustomersTable>;

/** A Solution (SPEC.md "Solution"); its Maps, schedule and runs live in their own tables. */
export interface SolutionsTable {
  id: string;
  orgId: number;
  name: string;
  /** Lower-cased name: unique per Organization. */
  nameKey: string;
  description: string;
  /** Replication, Integration, IntegrationEvent or Migration. */
  solutionType: string;
  agentId: string;
  /** Replication Solutions only. */
  connectionIdForSource: string | null;
  connectionIdForTarget: string | null;
  /** JSON `{selectionType, entities}` of a Replication Solution; null for the other types. */
  replicationSettings: string | null;
  checkForBulk: Flag;
  isDisabled: Flag;
  /** 0 while enabled, 1 when a user disabled it. */
  reasonDisabled: number;
  /** Whether prepare ran since the definition last changed. */
  prepared: Flag;
  lastRunTime: string | null;
  /** The result of the last run that finished (a History result; see migration 012); null before the first. */
  lastRunResult: string | null;
  /** Start of the current run; null when none runs. */
  inProgressStartTime: string | null;
  /** A by-reference copy (a shared-resource target): the source Solution whose Maps it runs (migration 039). */
  sharedFrom: string | null;
  minAgentVersion: string | null;
  /** The Schedule model as last set (JSON); null = on demand. */
  schedule: string | null;
  /** The compiled ScheduleRule (JSON) due times are computed from; null = on demand. */
  scheduleRule: string | null;
  /** Preparing while a prepare job runs, ProvisionError when the last one failed; null otherwise. */
  prepareState: string | null;
  creationDate: string;
  lastModificationDate: string;
  modificationBy: string | null;
}

export type SolutionRow = Selectable<SolutionsTable>;
export type SolutionUpdate = Updateable<SolutionsTable>;

/** A Map of a Solution: its latest revision's summary; the models live in map_revisions. */
export interface MapsTable {
  /** Unique across the Service, never reused. */
  id: Generated<number>;
  solutionId: string;
  orgId: number;
  /** Its place in the Solution's run order, from 0. */
  linkIndex: number;
  enabled: Flag;
  name: string;
  description: string;
  mapType: string;
  /** The latest revision's number. */
  revision: number;
  valid: Flag;
  /** JSON arrays of the Connection IDs the Map reads from and writes to. */
  sources: string;
  targets: string;
  creationDate: string;
  lastModificationDate: string;
  modifiedBy: string | null;
  /** The login email of the user holding the Map's lock; null when unlocked (migration 015). */
  lockedBy: string | null;
  lockDate: string | null;
}

export type MapRow = Selectable<MapsTable>;
export type MapUpdate = Updateable<MapsTable>;

/** One saved revision of a Map: the model as saved (JSON, version 3.0). */
export interface MapRevisionsTable {
  mapId: number;
  revision: number;
  model: string;
  comment: string;
  revisionDate: string;
  modifiedBy: string | null;
}

export type MapRevisionRow = Selectable<MapRevisionsTable>;

/** A prepare job (SPEC.md "Prepare job"). */
export interface PrepareJobsTable {
  id: string;
  solutionId: string;
  orgId: number;
  creationDate: string;
  finishDate: string | null;
  isComplete: Flag;
  hasError: Flag;
  message: string;
  /** JSON `[{mapId, message}]`. */
  mapErrors: string;
  /** The Service replica the job runs on (null: written before replicas, or by a single process). */
  replicaId?: string | null;
}

export type PrepareJobRow = Selectable<PrepareJobsTable>;

/** What the last successful prepare built for the Solution's Agent (PreparedSolution without properties, JSON). */
export interface PreparedSolutionsTable {
  solutionId: string;
  agentId: string;
  body: string;
  preparedAt: string;
}

export type PreparedSolutionRow = Selectable<PreparedSolutionsTable>;

/** One run of a Solution as its Agent reported it (History, migration 012). */
export interface ExecutionsTable {
  /** The History `id` clients see: an integer, never reused. */
  id: Generated<number>;
  /** The run's ID (`processExecutionId`): every report about the run names it. */
  runId: string;
  solutionId: string;
  orgId: number;
  /** The Agent that ran it; no foreign key, so History never holds an Agent back. */
  agentId: string;
  /** `start` or `schedule` (src/protocol/solutions.ts RUN_TRIGGERS). */
  trigger: string;
  /** The due time a scheduled run fired for. */
  dueAt: string | null;
  start: string;
  /** Null while the run is on. */
  stop: string | null;
  /** A RUN_RESULTS value; null while the run is on (shown InProgress). */
  result: string | null;
  recordsProcessed: number;
  recordsFailed: number;
  /** The fatal error's text, or why the run stopped early. */
  details: string | null;
  stopped: Flag;
  isReprocessJob: Flag;
  sourceDataLocal: Flag;
  /** JSON array of RunMapStats (src/protocol/solutions.ts). */
  statistics: string;
  lastProgressAt: string | null;
  /** The mark of its record errors that have none of their own (migration 023); `POST H/{id}/mark` sets it. */
  markDefault: Generated<Flag>;
}

/** One record error of an execution. */
export interface ExecutionErrorsTable {
  /** The error's own ID from the report. */
  id: string;
  executionId: number;
  /** 1, 2, … in order of arrival within the execution: the order of the list and its page key. */
  seq: number;
  mapId: number | null;
  mapName: string;
  sourceEntity: string;
  blockId: string | null;
  blockName: string | null;
  code: string;
  errorMessage: string;
  errorDetail: string;
  canReprocess: Flag;
  /**
   * The mark set on this error alone; null follows the execution's `markDefault` (migration 023).
   * Read through the repositories, which answer the mark in effect (ExecutionErrorRow).
   */
  marked: Flag | null;
  failedRecordId: string | null;
  created: string;
  /** The source record's key as a JSON object (migration 028); null when the error came without one. */
  sourceKey: string | null;
  /** The source record's position in the run's read, from 1 (migration 028). */
  sourceRow: number | null;
  /** The reprocess run that took this error (migration 019); null until one did. */
  reprocessRunId: Generated<string | null>;
}

/** A due time of a Solution's schedule that did not start a run. */
export interface ScheduleSkipsTable {
  solutionId: string;
  dueAt: string;
  /** `running`, `missed` or `paused` (src/protocol/solutions.ts ScheduleSkippedReport). */
  reason: string;
  /** When the Agent decided it. */
  at: string;
}

export type ExecutionRow = Selectable<ExecutionsTable>;
export type NewExecutionRow = Insertable<ExecutionsTable>;
export type ExecutionUpdate = Updateable<ExecutionsTable>;
/**
 * A record error as the repositories read it: `marked` is the mark in effect, its own or else the
 * execution's default, and never on an error that can no longer be reprocessed.
 */
export type ExecutionErrorRow = Omit<Selectable<ExecutionErrorsTable>, 'marked'> & { marked: Flag };
export type ScheduleSkipRow = Selectable<ScheduleSkipsTable>;

/** A Solution moved away from `fromAgentId`, which has not yet confirmed an assignment list without it. */
export interface SolutionMovesTable {
  solutionId: string;
  fromAgentId: string;
  movedAt: string;
}

/** A failed source record kept in the cloud; `source` is the record's JSON sealed under the master key. */
export interface FailedRecordsTable {
  id: string;
  runId: string;
  solutionId: string;
  orgId: number;
  mapId: number | null;
  mapName: string;
  entity: string;
  blockId: string;
  blockName: string;
  code: string;
  errorMessage: string;
  source: string;
  created: string;
}

export type FailedRecordRow = Selectable<FailedRecordsTable>;

/** One validation of a Map (migration 017): what was validated, against which metadata, and the findings. */
export interface MapValidationsTable {
  id: string;
  orgId: number;
  solutionId: string;
  mapId: number;
  /** The stored revision validated; null when the request sent its own model. */
  revision: number | null;
  state: 'Running' | 'Completed' | 'Failed';
  /** The 3.0 model validated (JSON). */
  model: string;
  /** JSON MetadataByConnection: the entities the Map's Blocks name (and their related entities); null until loaded. */
  metadata: string | null;
  valid: Flag;
  /** JSON array of the validator's results. */
  results: string;
  creationDate: string;
  finishDate: string | null;
  createdBy: string | null;
}

export type MapValidationRow = Selectable<MapValidationsTable>;

/** A preview query or native query test of a Map, run on the Solution's Agent (migration 018). */
export interface MapPreviewsTable {
  id: string;
  orgId: number;
  solutionId: string;
  /** The path's Map ID (the Map need not exist when the request sent its own model). */
  mapId: number;
  kind: 'previewquery' | 'nativequerytest';
  blockId: string;
  blockName: string;
  entity: string | null;
  connectionId: string;
  recordLimit: number;
  status: 'Requested' | 'Completed' | 'Failed';
  /** JSON PreviewResult (src/protocol/previews.ts) once Completed. */
  result: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  requestedAt: string;
  completedAt: string | null;
  expiresAt: string;
}

export type MapPreviewRow = Selectable<MapPreviewsTable>;

/** A single-Map run requested through the Maps API (migration 018); its status is read from History by `runId`. */
export interface MapRunsTable {
  /** The commandId. */
  id: string;
  orgId: number;
  solutionId: string;
  mapId: number;
  /** The run started, or the one in progress when the command was ignored. */
  runId: string | null;
  ignored: Flag;
  /** The prepare the run waits for, when the Solution was not prepared. */
  prepareId: string | null;
  message: string;
  requestedAt: string;
  expiresAt: string;
}

export type MapRunRow = Selectable<MapRunsTable>;

/** A pending Map export (migration 016): the file, downloadable once until `expiresAt`. */
export interface MapExportsTable {
  id: Generated<number>;
  orgId: number;
  solutionId: string;
  /** The download's file name: the Solution's name with `.json`. */
  fileName: string;
  /** The file: JSON text. */
  body: string;
  createdAt: string;
  expiresAt: string;
  createdBy: string | null;
}

export type MapExportRow = Selectable<MapExportsTable>;

/** A pending export of an execution's record errors (migration 020); the CSV is read at download. */
export interface HistoryExportsTable {
  id: Generated<number>;
  orgId: number;
  solutionId: string;
  executionId: number;
  createdAt: string;
  expiresAt: string;
  createdBy: string | null;
}

export type HistoryExportRow = Selectable<HistoryExportsTable>;

/** A notification mail to one recipient (migration 022): queued, claimed, sent or retried. */
export interface MailOutboxTable {
  id: string;
  /** Unique: one event mails one recipient once. */
  dedupeKey: string;
  /** The notification switch that made it: failedJobEmail, heartbeatEmail, … */
  kind: string;
  orgId: number;
  recipient: string;
  subject: string;
  body: string;
  createdAt: string;
  attempts: number;
  nextAttemptAt: string;
  /** The sender that holds it until `claimedUntil`. */
  claimedBy: string | null;
  claimedUntil: string | null;
  sentAt: string | null;
  /** Set when the mail server refused it for good (an unknown recipient). */
  failedAt: string | null;
  lastError: string | null;
}

export type MailOutboxRow = Selectable<MailOutboxTable>;
