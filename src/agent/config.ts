import path from 'node:path';
import { z } from 'zod';
import { FerryError } from '../errors/ferry-error.js';
import { defaultHome } from './home.js';

/**
 * The Agent's own configuration (not its identity, which is the instance's `config.json`): parsed
 * once from flags and `FERRY_AGENT_*` variables by {@link parseAgentConfig} and passed down frozen.
 */
export const AgentConfigSchema = z.object({
  /** Folder that holds the instance folders `ferry-agent-<n>/`. */
  home: z.string().min(1),
  /** Instance number or service name (`2` or `ferry-agent-2`); needed only when several exist. */
  instance: z.string().min(1).optional(),
  /** Reach the Service here instead of the URL in config.json (the Service moved, or `ferry up` on another port). */
  serviceUrl: z.url().optional(),
  /** Above this resident set size the Agent drains and restarts (SPEC: WaitingToRestartAgentMemoryLimit). */
  maxRssMb: z.coerce.number().positive().default(1024),
  /** How often the memory watchdog samples the RSS. */
  watchdogMs: z.coerce.number().int().min(10).default(5_000),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Also write log lines to stdout (containers, `ferry agent run` in a terminal). */
  logStdout: z.stringbool().default(false),
  /** pino-roll size limit of one log file, e.g. `10m`. */
  logMaxSize: z
    .string()
    .regex(/^\d+[kmg]?$/i)
    .default('10m'),
  /** Rotated log files kept besides the active one (daily rotation: about two weeks). */
  logFiles: z.coerce.number().int().min(1).max(1000).default(14),
  /** Application-level ping interval; a socket silent for two intervals is dropped as half-open. */
  pingMs: z.coerce.number().int().min(10).default(15_000),
  /** Time-out of a request on the channel (hello, heartbeat, report). */
  requestTimeoutMs: z.coerce.number().int().min(10).default(30_000),
  /** Reconnect back-off: first delay and cap (full jitter below the cap). */
  backoffBaseMs: z.coerce.number().int().min(1).default(1_000),
  backoffMaxMs: z.coerce.number().int().min(1).default(60_000),
  /** How long a graceful stop waits for running work, then for the outbox to reach the Service. */
  stopGraceMs: z.coerce.number().int().min(0).default(20_000),
  /** The hosted Cloud Agent reports ShutdownCloud instead of Shutdown. */
  cloud: z.stringbool().default(false),
  /** Solution runs at once on this Agent; more wait in its queue. */
  runConcurrency: z.coerce.number().int().min(1).max(64).default(2),
  /** How long a run's write waits for a datastore that went away (retried with back-off) before the run ends with RUN_TARGET_UNAVAILABLE. */
  targetRetryMs: z.coerce.number().int().min(0).default(90_000),
  /** A due time missed while the Agent was down still runs once if it is at most this old (ms); older ones are recorded as missed. */
  scheduleGraceMs: z.coerce
    .number()
    .int()
    .min(0)
    .default(10 * 60_000),
  /**
   * Serve Prometheus metrics on this port (GET /metrics, docs/metrics.md); absent: not served.
   * 0 takes a free port (the log says which).
   */
  metricsPort: z.coerce.number().int().min(0).max(65535).optional(),
  /** The address the metrics port listens on: loopback unless a Prometheus elsewhere must reach it. */
  metricsHost: z.string().min(1).default('127.0.0.1'),
});

export type AgentConfig = Readonly<z.infer<typeof AgentConfigSchema>>;
export type AgentConfigInput = z.input<typeof AgentConfigSchema>;

/** Each `FERRY_AGENT_*` variable and its configuration key. */
export const AGENT_ENV_KEYS: Readonly<Record<string, keyof AgentConfigInput>> = {
  FERRY_AGENT_HOME: 'home',
  FERRY_AGENT_INSTANCE: 'instance',
  FERRY_AGENT_SERVICE_URL: 'serviceUrl',
  FERRY_AGENT_MAX_RSS_MB: 'maxRssMb',
  FERRY_AGENT_WATCHDOG_MS: 'watchdogMs',
  FERRY_AGENT_LOG_LEVEL: 'logLevel',
  FERRY_AGENT_LOG_STDOUT: 'logStdout',
  FERRY_AGENT_LOG_MAX_SIZE: 'logMaxSize',
  FERRY_AGENT_LOG_FILES: 'logFiles',
  FERRY_AGENT_PING_MS: 'pingMs',
  FERRY_AGENT_REQUEST_TIMEOUT_MS: 'requestTimeoutMs',
  FERRY_AGENT_BACKOFF_BASE_MS: 'backoffBaseMs',
  FERRY_AGENT_BACKOFF_MAX_MS: 'backoffMaxMs',
  FERRY_AGENT_STOP_GRACE_MS: 'stopGraceMs',
  FERRY_AGENT_CLOUD: 'cloud',
  FERRY_AGENT_RUN_CONCURRENCY: 'runConcurrency',
  FERRY_AGENT_SCHEDULE_GRACE_MS: 'scheduleGraceMs',
  FERRY_AGENT_TARGET_RETRY_MS: 'targetRetryMs',
  FERRY_AGENT_METRICS_PORT: 'metricsPort',
  FERRY_AGENT_METRICS_HOST: 'metricsHost',
};

/**
 * Reads the `FERRY_AGENT_*` variables of `env`, lets `overrides` (flags) win, validates and
 * freezes. `home` defaults to the platform's service data location ({@link defaultHome}).
 */
export function parseAgentConfig(
  env: Record<string, string | undefined>,
  overrides: Partial<AgentConfigInput> = {},
): AgentConfig {
  const input: Record<string, unknown> = {};
  for (const [name, key] of Object.entries(AGENT_ENV_KEYS)) {
    const value = env[name];
    if (value !== undefined && value !== '') input[key] = value;
  }
  for (const [key, value] of Object.entries(overrides)) if (value !== undefined) input[key] = value;
  input['home'] ??= defaultHome({ env });
  const parsed = AgentConfigSchema.safeParse(input);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new FerryError('AGT_CONFIG', `Invalid Agent configuration:\n  ${lines.join('\n  ')}`, {
      errors: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
    });
  }
  if (parsed.data.backoffMaxMs < parsed.data.backoffBaseMs) {
    throw new FerryError('AGT_CONFIG', 'Invalid Agent configuration: backoffMaxMs must not be below backoffBaseMs');
  }
  return Object.freeze({ ...parsed.data, home: path.resolve(parsed.data.home) });
}
