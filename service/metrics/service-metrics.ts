import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AGENT_STATUSES } from '../../src/protocol/agent-status.js';

/** The outcome of a command sent to an Agent, as the command round-trip histogram labels it. */
export type CommandOutcome = 'ok' | 'failed' | 'timeout' | 'disconnected';

/** What an Agent's heartbeat says of its durable outbox (optional fields of the heartbeat). */
export interface OutboxReading {
  readonly outboxDepth?: number | undefined;
  readonly outboxAgeSeconds?: number | undefined;
}

/** The counts the store answers at scrape time (service/metrics/store-gauges.ts). */
export interface StoreReading {
  /** Agents of every Organization by status. */
  readonly agentsByStatus: ReadonlyMap<string, number>;
  /** Messages waiting in every Message Endpoint's queue, and the age of the oldest (seconds). */
  readonly eventQueue: { readonly messages: number; readonly oldestAgeSeconds: number };
  /** Each job queue's waiting jobs and the age of the oldest (seconds). */
  readonly jobs: ReadonlyMap<string, { readonly queued: number; readonly oldestAgeSeconds: number }>;
}

/** What the metrics read from the rest of the Service at scrape time. */
export interface ScrapeSources {
  /** Agent IDs whose channel this process holds. */
  connectedAgents(): readonly string[];
  /** One short read of the store (a few aggregate queries). */
  readStore(): Promise<StoreReading>;
}

/** Latency buckets of the HTTP API (seconds): 5 ms to 10 s. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Round-trip buckets of Agent commands (seconds): a ping-sized answer to a long prepare. */
const COMMAND_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** Run duration buckets (seconds): one second to a day. */
const RUN_BUCKETS = [1, 5, 15, 30, 60, 300, 900, 1800, 3600, 7200, 21_600, 86_400];
/** The HTTP methods labelled as themselves; any other is `other`, so a client cannot grow the label set. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Longest a scrape waits for the store before it answers with the figures it read last. */
const STORE_READ_TIMEOUT_MS = 5_000;

/**
 * The Prometheus metrics of one Service process: one registry per process (made by the composition
 * root; several Services in one test process keep theirs apart). Hot paths only add to counters
 * and histograms; what the store knows (Agents by status, queues) is read once per scrape by
 * {@link scrape}, through {@link ScrapeSources}.
 *
 *   fastify onResponse ─▶ httpRequest()          gateway sessions ─▶ channelMessage(), commandDone()
 *   History (run end)  ─▶ runFinished()          heartbeats       ─▶ heartbeat() (outbox of each Agent)
 *   GET /metrics ─▶ scrape() ─▶ sources: connected Agents, store reading ─▶ gauges ─▶ text format
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly #http: Counter<'method' | 'route' | 'status_code'>;
  readonly #httpSeconds: Histogram<'method' | 'route' | 'status_code'>;
  readonly #messages: Counter<'type' | 'direction'>;
  readonly #commandSeconds: Histogram<'command' | 'outcome'>;
  readonly #runs: Counter<'result' | 'solution_type'>;
  readonly #records: Counter<'solution_type'>;
  readonly #recordsFailed: Counter<'solution_type'>;
  readonly #runSeconds: Histogram<'result' | 'solution_type'>;
  readonly #agents: Gauge<'status'>;
  readonly #connected: Gauge;
  readonly #outboxMessages: Gauge;
  readonly #outboxAge: Gauge;
  readonly #eventQueue: Gauge;
  readonly #eventQueueAge: Gauge;
  readonly #jobsQueued: Gauge<'queue'>;
  readonly #jobsAge: Gauge<'queue'>;
  readonly #scrapeErrors: Counter;
  /** Each label set's counter and histogram, with its label hash computed once (a request costs two lookups). */
  readonly #httpChildren = new Map<string, { count: () => void; observe: (seconds: number) => void }>();
  /** The URL of the listener of their own (FERRY_METRICS_LISTEN) once it listens. */
  listenerUrl: string | undefined;
  /** The last outbox reading of each Agent that sent one (kept for the Agents this process holds). */
  readonly #outboxes = new Map<string, { depth: number; ageSeconds: number }>();
  #sources: ScrapeSources | undefined;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'ferry_' });
    const labels = <T extends string>(...names: T[]) => ({ labelNames: names, registers });
    this.#http = new Counter({
      name: 'ferry_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code.',
      ...labels('method', 'route', 'status_code'),
    });
    this.#httpSeconds = new Histogram({
      name: 'ferry_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method, route pattern and status code.',
      buckets: HTTP_BUCKETS,
      ...labels('method', 'route', 'status_code'),
    });
    this.#messages = new Counter({
      name: 'ferry_channel_messages_total',
      help: 'Agent channel messages, by message type and direction (in: from Agents, out: to Agents).',
      ...labels('type', 'direction'),
    });
    this.#commandSeconds = new Histogram({
      name: 'ferry_channel_command_duration_seconds',
      help: 'Round-trip time of commands sent to Agents, from send to reply, by command and outcome.',
      buckets: COMMAND_BUCKETS,
      ...labels('command', 'outcome'),
    });
    this.#runs = new Counter({
      name: 'ferry_solution_runs_total',
      help: 'Solution runs History recorded as ended, by result and Solution type.',
      ...labels('result', 'solution_type'),
    });
    this.#records = new Counter({
      name: 'ferry_solution_records_processed_total',
      help: 'Records processed by ended Solution runs, by Solution type.',
      ...labels('solution_type'),
    });
    this.#recordsFailed = new Counter({
      name: 'ferry_solution_records_failed_total',
      help: 'Records that failed in ended Solution runs, by Solution type.',
      ...labels('solution_type'),
    });
    this.#runSeconds = new Histogram({
      name: 'ferry_solution_run_duration_seconds',
      help: 'Duration of ended Solution runs (start to stop), by result and Solution type.',
      buckets: RUN_BUCKETS,
      ...labels('result', 'solution_type'),
    });
    this.#agents = new Gauge({
      name: 'ferry_agents',
      help: 'Agents of every Organization by status, as the store holds them (the same on every replica).',
      ...labels('status'),
    });
    this.#connected = new Gauge({
      name: 'ferry_agents_connected',
      help: 'Agents whose channel is open to this Service process (sum over replicas).',
      registers,
    });
    this.#outboxMessages = new Gauge({
      name: 'ferry_agents_outbox_messages',
      help: 'Reports waiting in the outboxes of the Agents connected to this process, as their last heartbeats said.',
      registers,
    });
    this.#outboxAge = new Gauge({
      name: 'ferry_agents_outbox_oldest_age_seconds',
      help: 'Age of the oldest report waiting in the outbox of any Agent connected to this process.',
      registers,
    });
    this.#eventQueue = new Gauge({
      name: 'ferry_event_queue_messages',
      help: 'Messages waiting in the queues of all Message Endpoints.',
      registers,
    });
    this.#eventQueueAge = new Gauge({
      name: 'ferry_event_queue_oldest_age_seconds',
      help: 'Age of the oldest message waiting in any Message Endpoint queue (0 when none waits).',
      registers,
    });
    this.#jobsQueued = new Gauge({
      name: 'ferry_jobs_queued',
      help: 'Jobs waiting or running in each Service job queue (prepare, clone, mail, metadata, connection_test).',
      ...labels('queue'),
    });
    this.#jobsAge = new Gauge({
      name: 'ferry_jobs_oldest_age_seconds',
      help: 'Age of the oldest job waiting or running in each Service job queue (0 when empty).',
      ...labels('queue'),
    });
    this.#scrapeErrors = new Counter({
      name: 'ferry_metrics_store_read_errors_total',
      help: 'Scrapes whose store reading failed or took too long (their store gauges keep the last values).',
      registers,
    });
  }

  /** Where scrapes read the connected Agents and the store; set once the composition root has them. */
  readFrom(sources: ScrapeSources): void {
    this.#sources = sources;
  }

  /** An HTTP request was answered. `route` is the route's pattern (never the raw URL); none for a path without a route. */
  httpRequest(method: string, route: string | undefined, statusCode: number, seconds: number): void {
    const m = METHODS.has(method) ? method : 'other';
    const r = route ?? 'unmatched';
    const key = `${m} ${statusCode} ${r}`;
    let child = this.#httpChildren.get(key);
    if (!child) {
      const labels = { method: m, route: r, status_code: String(statusCode) };
      const counter = this.#http.labels(labels);
      const histogram = this.#httpSeconds.labels(labels);
      child = { count: () => counter.inc(), observe: (s) => histogram.observe(s) };
      this.#httpChildren.set(key, child);
    }
    child.count();
    child.observe(seconds);
  }

  /** A message crossed an Agent channel; `type` is a protocol message type (a bounded set). */
  message(type: string, direction: 'in' | 'out'): void {
    this.#messages.inc({ type, direction });
  }

  /** A command sent to an Agent got its answer (or none). */
  commandDone(command: string, outcome: CommandOutcome, seconds: number): void {
    this.#commandSeconds.observe({ command, outcome }, seconds);
  }

  /** History recorded a run's end for the first time. */
  runFinished(run: {
    result: string;
    solutionType: string;
    processed: number;
    failed: number;
    seconds: number | undefined;
  }): void {
    const solutionType = { solution_type: run.solutionType };
    this.#runs.inc({ result: run.result, ...solutionType });
    if (run.processed > 0) this.#records.inc(solutionType, run.processed);
    if (run.failed > 0) this.#recordsFailed.inc(solutionType, run.failed);
    if (run.seconds !== undefined && run.seconds >= 0)
      this.#runSeconds.observe({ result: run.result, ...solutionType }, run.seconds);
  }

  /** An Agent's heartbeat arrived; its outbox reading (when it sends one) is kept until the next. */
  heartbeat(agentId: string, reading: OutboxReading): void {
    if (reading.outboxDepth === undefined) return;
    this.#outboxes.set(agentId, { depth: reading.outboxDepth, ageSeconds: reading.outboxAgeSeconds ?? 0 });
  }

  /** The exposition in Prometheus' text format, with the scrape-time gauges read first. */
  async scrape(): Promise<string> {
    await this.#refresh();
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops the collectors; the registry answers no more. */
  close(): void {
    this.registry.clear();
    this.#outboxes.clear();
    this.#httpChildren.clear();
  }

  async #refresh(): Promise<void> {
    const sources = this.#sources;
    if (!sources) return;
    const connected = sources.connectedAgents();
    this.#connected.set(connected.length);
    this.#readOutboxes(new Set(connected));
    let timer: NodeJS.Timeout | undefined;
    try {
      const reading = await Promise.race([
        sources.readStore(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('store reading timed out')), STORE_READ_TIMEOUT_MS);
        }),
      ]);
      this.#setStore(reading);
    } catch {
      this.#scrapeErrors.inc();
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sums and maxima over the Agents connected here; readings of Agents gone from this process are dropped. */
  #readOutboxes(connected: ReadonlySet<string>): void {
    let depth = 0;
    let age = 0;
    for (const [agentId, reading] of this.#outboxes) {
      if (!connected.has(agentId)) {
        this.#outboxes.delete(agentId);
        continue;
      }
      depth += reading.depth;
      if (reading.depth > 0) age = Math.max(age, reading.ageSeconds);
    }
    this.#outboxMessages.set(depth);
    this.#outboxAge.set(age);
  }

  #setStore(reading: StoreReading): void {
    // Every known status has a series (0 when no Agent has it), so that a status that empties reads 0.
    for (const status of AGENT_STATUSES) this.#agents.set({ status }, reading.agentsByStatus.get(status) ?? 0);
    let other = 0;
    for (const [status, n] of reading.agentsByStatus)
      if (!(AGENT_STATUSES as readonly string[]).includes(status)) other += n;
    this.#agents.set({ status: 'other' }, other);
    this.#eventQueue.set(reading.eventQueue.messages);
    this.#eventQueueAge.set(reading.eventQueue.oldestAgeSeconds);
    for (const [queue, q] of reading.jobs) {
      this.#jobsQueued.set({ queue }, q.queued);
      this.#jobsAge.set({ queue }, q.oldestAgeSeconds);
    }
  }
}
