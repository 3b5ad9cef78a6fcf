/** The API's models, as far as the console reads them (docs/openapi.json has them whole). */

export interface Org {
  id: number;
  name: string;
}

export interface Agent {
  id: string;
  name: string;
  machineName: string;
  serviceName: string;
  isCloudAgent: boolean;
  isUpdating: boolean;
  status: string;
  isConnected: boolean;
  lastContactTime: string | null;
  lastStartTime: string | null;
  version: string | null;
  installedConnectors: Array<{ connectorId: string; version: string }>;
  usedInSolutions?: unknown[];
}

export interface Solution {
  id: string;
  name: string;
  description: string;
  solutionType: string;
  status: string;
  agentId: string;
  isDisabled: boolean;
  reasonDisabled?: string | null;
  inProgressStartTime: string | null;
  lastRunTime: string | null;
  nextRunTime: string | null;
}

export interface MapStatistic {
  mapId: number | null;
  mapName: string;
  entityName: string | null;
  recordsProcessed: number;
  recordsFailed: number;
  average: number;
  totalTimeFormatted: string;
  fatalError: string | null;
}

export interface Execution {
  id: number;
  processExecutionId: string;
  solutionId: string;
  start: string;
  stop: string | null;
  duration: number | null;
  result: string;
  details: string | null;
  recordsProcessed: number;
  recordsFailed: number;
  reprocessRecordsRemaining: number;
  isReprocessJob: boolean;
  sourceDataLocal: boolean;
  trigger?: string;
  mapStatistics?: MapStatistic[];
}

export interface RecordError {
  id: string;
  failedRecordId: string | null;
  mapName: string;
  sourceEntity: string;
  errorMessage: string;
  errorDetail: string | null;
  canReprocess: boolean;
  marked: boolean;
  mapId: number | null;
  blockName: string | null;
  code: string | null;
  created: string;
  sourceKey: Record<string, unknown> | null;
  sourceRow: number | null;
}

export interface FailedRecord {
  id: string;
  name: string;
  properties: Array<{ key: string; value: unknown }>;
  sourceData: Record<string, unknown>;
}

export interface Monitor {
  solutionId: string;
  running: boolean;
  runId: string | null;
  startedAt: string | null;
  recordsProcessed: number;
  recordsFailed: number;
}

export interface Connection {
  id: string;
  name: string;
  alias: string;
  connectorId: string;
  connectorType: string;
  color: string;
  lastTestedAgentId: string | null;
  lastModificationDateTime: string | null;
}

export interface Field {
  name: string;
  isPrimaryKey: boolean;
  nullable: boolean;
  presentationType: string | null;
  propertyType?: string | null;
  nativeType?: string | null;
  size?: number | null;
}

export interface FieldMapping {
  targetField: string;
  targetFormula: string;
}

export interface Block {
  blockId: string;
  name: string;
  blockType: string;
  action?: string;
  connectionId?: string | null;
  entity?: string | null;
  fieldMappings?: FieldMapping[];
  [key: string]: unknown;
}

export interface MapModel {
  id: number;
  name: string;
  description: string | null;
  mapType: string;
  version: string;
  revision: number;
  revisionDate: string | null;
  valid: boolean;
  lockedBy: string | null;
  lastRunDate: string | null;
  blocks: Block[];
  [key: string]: unknown;
}

export interface Revision {
  id: number;
  revision: number;
  revisionDate: string;
  revisionComment: string | null;
  modifiedBy: string | null;
}

export interface ValidationResult {
  blockId: string | null;
  blockName: string | null;
  severity: string;
  code: string;
  message: string;
  formula?: string | null;
  field?: string | null;
}

export interface LookupTable {
  id: string;
  name: string;
  description: string | null;
  lastModificationDate: string | null;
}

export interface LookupValue {
  id: string;
  value1: string;
  value2: string;
}

export interface Endpoint {
  id: number;
  entityName: string;
  mapName: string;
  mapDescription: string | null;
  messageCount: number;
  lastModificationDate: string | null;
}
