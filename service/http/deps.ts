import type { FastifyBaseLogger } from 'fastify';
import type { ServiceConfig } from '../config.js';
import type { LoginThrottling } from '../auth/login-throttle.js';
import type { SecretBox } from '../crypto/master-key.js';
import type { ConnectorInstalls } from '../marketplace/installs.js';
import type { AgentRuntime } from '../agents/runtime.js';
import type { ConnectionCommands } from '../connections/commands.js';
import type { Connections } from '../connections/connections.js';
import type { ConnectionMetadata } from '../connections/metadata.js';
import type { History } from '../history/history.js';
import type { SolutionMaps } from '../solutions/maps.js';
import type { MapPreviews } from '../solutions/map-preview.js';
import type { MapRuns } from '../solutions/map-run.js';
import type { Solutions } from '../solutions/solutions.js';
import type { PrepareJobs } from '../solutions/prepare.js';
import type { SolutionRuns } from '../solutions/runs.js';
import type { SolutionAssignments } from '../solutions/assignments.js';
import type { Store } from '../store/store.js';
import type { EventMessages } from '../events/events.js';
import type { ServiceMetrics } from '../metrics/service-metrics.js';
import type { RateLimiter } from './rate-limit.js';
import type { Readiness } from './readiness.js';

/** What every route plugin is handed by the composition root. */
export interface ServiceDeps {
  readonly config: ServiceConfig;
  readonly store: Store;
  readonly secrets: SecretBox;
  readonly rateLimiter: RateLimiter;
  /** Failed-login counts per account–address pair and per address. */
  readonly loginThrottle: LoginThrottling;
  readonly log: FastifyBaseLogger;
  /** Agent channel commands, log archives and Cloud Agents. */
  readonly agents: AgentRuntime;
  /** The Connector catalogue (Marketplace), packages and their installation in Organizations and on Agents. */
  readonly connectors: ConnectorInstalls;
  /** Connections: their records and sealed properties. */
  readonly connections: Connections;
  /** Connection metadata loaded by Agents, cached. */
  readonly metadata: ConnectionMetadata;
  /** Connection tests and Connector preconnect steps run on Agents. */
  readonly connectionCommands: ConnectionCommands;
  /** Solutions: their definitions and the status they are shown with. */
  readonly solutions: Solutions;
  /** The Maps of Solutions and their revisions. */
  readonly maps: SolutionMaps;
  /** Preview queries and native query tests of Maps, read through the Solutions' Agents. */
  readonly mapPreviews: MapPreviews;
  /** Single-Map runs on the Solutions' Agents. */
  readonly mapRuns: MapRuns;
  /** The History of Solutions: executions, record errors, skipped due times. */
  readonly history: History;
  /** Prepare jobs of Solutions. */
  readonly prepareJobs: PrepareJobs;
  /** Start, stop and monitor runs on the Solutions' Agents. */
  readonly solutionRuns: SolutionRuns;
  /** Keeps each Agent's copy of its Solutions current (a Connection or the capture switches changed). */
  readonly assignments: SolutionAssignments;
  /** Whether this process takes new work (`/readyz`); false while it drains before a stop. */
  readonly readiness: Readiness;
  /** Event Solutions' messages: the Agents' wake-ups, takes and acknowledgements. */
  readonly events: EventMessages;
  /** This process among those sharing the store: its replica ID, or a UUID of its own on SQLite. */
  readonly processId: string;
  /** This process's Prometheus metrics (service/metrics); absent: requests are not counted. */
  readonly metrics?: ServiceMetrics | undefined;
}
