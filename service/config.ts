import path from 'node:path';
import { z } from 'zod';
import { parseListenAddress } from '../src/metrics/metrics-listener.js';

/**
 * The Service configuration, parsed once from flags and the environment by {@link parseServiceConfig}
 * and passed down frozen. Nothing below the composition root reads `process.env`.
 */
export const ServiceConfigSchema = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(8780),
  host: z.string().min(1).default('127.0.0.1'),
  dataDir: z.string().min(1).default('./data'),
  /** Absent: a SQLite file in the data dir. `postgres://…`: PostgreSQL. */
  databaseUrl: z.string().min(1).optional(),
  adminEmail: z.email().default('admin@ferry.local'),
  /** Generated and printed once when absent. */
  adminPassword: z.string().min(8).optional(),
  /** Comma-separated ranges (`a-b`, CIDR or one address) for the bootstrap Security Rule. */
  bootstrapAllow: z.string().min(1).default('127.0.0.1,::1'),
  bootstrapOrgName: z.string().min(1).default('Ferry'),
  /** Addresses or CIDRs of reverse proxies whose X-Forwarded-For is believed. */
  trustProxy: z.string().optional(),
  rateLimitPerMinute: z.coerce.number().int().min(1).default(60),
  rateLimitPerDay: z.coerce.number().int().min(1).default(15_000),
  /**
   * Where the rate limits and the failed-login counts are kept: `database` (shared by every replica
   * on one PostgreSQL, one query per counted call) or `memory` (each process its own: the only choice
   * on SQLite; on PostgreSQL right for one Service process only). Absent: database on PostgreSQL,
   * memory on SQLite.
   */
  limitCounts: z.enum(['database', 'memory']).optional(),
  /** Largest request body in bytes (Lookup Tables of 200,000 values fit in the default). */
  bodyLimit: z.coerce
    .number()
    .int()
    .min(1024)
    .default(64 * 1024 * 1024),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** base64 of 32 bytes; absent: `<dataDir>/master.key`, created on first start. Replicas share one. */
  masterKey: z.string().optional(),
  /** Base URL the Service is reached at, for Location headers and download links. */
  publicUrl: z.string().optional(),
  /** Seconds without contact after which an Agent is HeartbeatLate (SPEC: 15 minutes). */
  heartbeatLateAfter: z.coerce.number().positive().default(900),
  /** Seconds without contact after which an Agent is HeartbeatFailed (SPEC: 60 minutes). */
  heartbeatFailedAfter: z.coerce.number().positive().default(3600),
  /** Heartbeat interval the Service tells Agents in the hello reply (milliseconds). */
  agentHeartbeatMs: z.coerce.number().int().min(100).default(30_000),
  /**
   * Seconds an Agent channel may stay without any traffic before the Service drops it as half-open
   * (a frozen Agent, a pulled cable); the Service pings every third of it, and a live Agent answers.
   */
  agentChannelTimeout: z.coerce.number().min(1).default(60),
  /** Lifetime of an Agent installation key in seconds. */
  agentKeyTtl: z.coerce.number().positive().default(86_400),
  /** `on`: this Service provisions Cloud Agents and runs them as supervised child processes. */
  cloudAgents: z.enum(['on', 'off']).default('on'),
  /** The `ferry` CLI script Cloud Agents are started with; absent: the package's `dist/src/cli/main.js`. */
  cloudAgentEntry: z.string().min(1).optional(),
  /** A folder of extra Connector plugins (vendor and Managed Connectors) offered beside the built-in ones. */
  connectorsDir: z.string().min(1).optional(),
  /**
   * The Agent versions this Service offers (docs/agents.md "Updates"): `ferry-agent-<version>.tgz`
   * packages; Agents older than the newest are updated. Absent: `<dataDir>/agent-packages`.
   */
  agentPackagesDir: z.string().min(1).optional(),
  /** Agents older than this version are not updated automatically and show `Obsolete, install new Agent`. */
  agentObsoleteBelow: z
    .string()
    .regex(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/, 'a version such as 1.2.0')
    .optional(),
  /** Seconds an Agent may take to finish a Connector install before it is InstallTimedOut. */
  connectorInstallTimeout: z.coerce.number().positive().default(900),
  /**
   * Days of History kept: executions that started longer ago (and ended), their record errors and
   * failed records are removed, on the Service and on the Agents (SPEC.md "Limits": 45 days).
   */
  historyRetentionDays: z.coerce.number().int().min(1).max(36_500).default(45),
  /**
   * Seconds a stopping Service (SIGTERM) answers `/readyz` with 503 while it still serves, before
   * it closes its Agent channels and connections: the time a load balancer needs to take it out.
   * Absent: 5 on PostgreSQL (replicas behind a load balancer), 0 on SQLite (one process).
   */
  drainDelay: z.coerce.number().min(0).max(300).optional(),
  /**
   * Seconds a replica's Agent channel and liveness leases last unless renewed (every third of it):
   * how long the Agents of a replica that died still count as connected (PostgreSQL only).
   */
  replicaLease: z.coerce.number().min(0.3).max(300).default(15),
  /**
   * The mail server notification mails go through: `smtp://user:pass@host:587` (STARTTLS when the
   * server offers it) or `smtps://…:465` (TLS). Absent: no notification mail is queued or sent.
   */
  smtpUrl: z
    .string()
    .min(1)
    .refine(
      (v) => URL.canParse(v) && ['smtp:', 'smtps:'].includes(new URL(v).protocol) && new URL(v).hostname !== '',
      'must be an smtp:// or smtps:// URL with a host',
    )
    .optional(),
  /** The From address of notification mails. */
  smtpFrom: z.string().min(3).max(320).default('Ferry <ferry@localhost>'),
  /**
   * The most messages one Message Endpoint's queue may hold (received, not yet taken by its Map): a
   * POST past it answers 429 with Retry-After and stores nothing (docs/events.md).
   */
  eventQueueLimit: z.coerce.number().int().min(1).default(100_000),
  /** Seconds a request to a request/reply Map waits for its reply before 504 (docs/events.md). */
  eventRequestTimeout: z.coerce.number().min(1).max(600).default(90),
  /**
   * Prometheus metrics on the API's port (docs/metrics.md): `GET /metrics` answers only with
   * `Authorization: Bearer <this token>`. Absent: no /metrics route on the API's port (404).
   */
  metricsToken: z.string().min(16, 'must be at least 16 characters').max(512).optional(),
  /**
   * Prometheus metrics on a listener of their own, `host:port` (e.g. `127.0.0.1:9464`): serves only
   * `GET /metrics`, without a token; the bind address is the protection. Absent: no such listener.
   */
  metricsListen: z
    .string()
    .refine((v) => parseListenAddress(v) !== undefined, 'must be host:port, e.g. 127.0.0.1:9464')
    .optional(),
});

export type ServiceConfig = Readonly<z.infer<typeof ServiceConfigSchema>>;
export type ServiceConfigInput = z.input<typeof ServiceConfigSchema>;

/** Maps each `FERRY_*` variable to its configuration key. */
const ENV_KEYS: Record<string, keyof ServiceConfigInput> = {
  FERRY_PORT: 'port',
  FERRY_HOST: 'host',
  FERRY_DATA_DIR: 'dataDir',
  FERRY_DATABASE_URL: 'databaseUrl',
  FERRY_ADMIN_EMAIL: 'adminEmail',
  FERRY_ADMIN_PASSWORD: 'adminPassword',
  FERRY_BOOTSTRAP_ALLOW: 'bootstrapAllow',
  FERRY_BOOTSTRAP_ORG_NAME: 'bootstrapOrgName',
  FERRY_TRUST_PROXY: 'trustProxy',
  FERRY_RATE_LIMIT_PER_MINUTE: 'rateLimitPerMinute',
  FERRY_RATE_LIMIT_PER_DAY: 'rateLimitPerDay',
  FERRY_LIMIT_COUNTS: 'limitCounts',
  FERRY_BODY_LIMIT: 'bodyLimit',
  FERRY_LOG_LEVEL: 'logLevel',
  FERRY_PUBLIC_URL: 'publicUrl',
  FERRY_MASTER_KEY: 'masterKey',
  FERRY_HEARTBEAT_LATE_AFTER: 'heartbeatLateAfter',
  FERRY_HEARTBEAT_FAILED_AFTER: 'heartbeatFailedAfter',
  FERRY_AGENT_HEARTBEAT_MS: 'agentHeartbeatMs',
  FERRY_AGENT_CHANNEL_TIMEOUT: 'agentChannelTimeout',
  FERRY_AGENT_KEY_TTL: 'agentKeyTtl',
  FERRY_CLOUD_AGENTS: 'cloudAgents',
  FERRY_CLOUD_AGENT_ENTRY: 'cloudAgentEntry',
  FERRY_CONNECTORS_DIR: 'connectorsDir',
  FERRY_AGENT_PACKAGES_DIR: 'agentPackagesDir',
  FERRY_AGENT_OBSOLETE_BELOW: 'agentObsoleteBelow',
  FERRY_CONNECTOR_INSTALL_TIMEOUT: 'connectorInstallTimeout',
  FERRY_HISTORY_RETENTION_DAYS: 'historyRetentionDays',
  FERRY_DRAIN_DELAY: 'drainDelay',
  FERRY_REPLICA_LEASE: 'replicaLease',
  FERRY_SMTP_URL: 'smtpUrl',
  FERRY_SMTP_FROM: 'smtpFrom',
  FERRY_EVENT_QUEUE_LIMIT: 'eventQueueLimit',
  FERRY_EVENT_REQUEST_TIMEOUT: 'eventRequestTimeout',
  FERRY_METRICS_TOKEN: 'metricsToken',
  FERRY_METRICS_LISTEN: 'metricsListen',
};

/** Reads the `FERRY_*` variables of `env`, lets `overrides` (flags) win, validates, and freezes. */
export function parseServiceConfig(
  env: Record<string, string | undefined>,
  overrides: Partial<ServiceConfigInput> = {},
): ServiceConfig {
  const fromEnv: Record<string, string> = {};
  for (const [name, key] of Object.entries(ENV_KEYS)) {
    const value = env[name];
    if (value !== undefined && value !== '') fromEnv[key] = value;
  }
  const parsed = ServiceConfigSchema.safeParse({ ...fromEnv, ...stripUndefined(overrides) });
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new Error(`Invalid Service configuration:\n  ${lines.join('\n  ')}`);
  }
  if (parsed.data.heartbeatFailedAfter <= parsed.data.heartbeatLateAfter) {
    throw new Error(
      'Invalid Service configuration:\n  heartbeatFailedAfter: must be above heartbeatLateAfter (FERRY_HEARTBEAT_FAILED_AFTER > FERRY_HEARTBEAT_LATE_AFTER)',
    );
  }
  if (parsed.data.limitCounts === 'database' && !parsed.data.databaseUrl) {
    throw new Error(
      'Invalid Service configuration:\n  limitCounts: `database` needs PostgreSQL (FERRY_DATABASE_URL); on SQLite the one process counts in memory',
    );
  }
  return Object.freeze({ ...parsed.data, dataDir: path.resolve(parsed.data.dataDir) });
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
