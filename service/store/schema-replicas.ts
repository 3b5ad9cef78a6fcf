/**
 * Table types of what Service replicas on one PostgreSQL share (docs/deploy.md): channel leases,
 * commands across replicas, shared limit counts, job leases and Agent log archives. Part of the
 * one schema (schema.ts); the tables exist, and stay all but empty, on SQLite too.
 */

/** Which Service replica holds an Agent's channel, until when (migration 029; gateway/replica-bus.ts). */
export interface AgentChannelsTable {
  agentId: string;
  replicaId: string;
  /** The channel's own ID: a reconnection makes a new one. */
  channelId: string;
  /** The lease's end, in ms since the epoch by the database's clock. */
  leaseUntilMs: number;
}

/** A command to an Agent whose channel another replica holds (migration 029; gateway/replica-bus.ts). */
export interface AgentCommandsTable {
  id: string;
  agentId: string;
  /** The replica that holds the channel and sends the command. */
  holder: string;
  /** The replica that waits for the reply. */
  sender: string;
  /** The command as JSON (AgentCommand). */
  command: string;
  timeoutMs: number;
  /** pending → taken (sent to the Agent) → done (reply written). */
  state: string;
  /** `{"ok":true,"result":…}` or `{"ok":false,"error":{code,message,details}}`. */
  reply: string | null;
  createdMs: number;
}

/** A count shared by the replicas, in a window ending at `windowEndMs` (migration 030; store/limit-windows.ts). */
export interface LimitWindowsTable {
  /** `rate:<orgId>:minute`, `login-pair:<sha256>`, … */
  key: string;
  count: number;
  windowEndMs: number;
}

/** A lease one Service replica holds on a job or on its own liveness (service/jobs/claims.ts). */
export interface ServiceLeasesTable {
  /** `job:<name>` or `replica:<id>`. */
  name: string;
  holder: string;
  /** The lease's end, in ms since the epoch by the database's clock. */
  untilMs: number;
}

/**
 * A piece of an Agent log archive, from the upload to the one download (migration 033;
 * store/log-archive-chunks.ts). Used on PostgreSQL; on SQLite archives are files.
 */
export interface LogArchiveChunksTable {
  /** The log request's ID (agent_logs.id), in lower case. */
  logId: string;
  /** The piece's place in the archive, from 0. */
  seq: number;
  data: Buffer;
}
