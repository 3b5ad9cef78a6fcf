import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { WriteObserver } from '../connectors/connection.js';
import type { ReportBody } from '../protocol/channel.js';
import type { RunMapStats } from '../protocol/solutions.js';

/** What the Agent's gauges read at scrape time. */
export interface AgentGaugeSources {
  /** Reports waiting in the outbox, and when the oldest was stored (ISO-8601). */
  outbox(): { depth: number; oldestCreated: string | undefined };
  /** Whether the channel to the Service is open (it said hello). */
  connected(): boolean;
  /** Runs and commands in progress. */
  runningWork(): number;
}

/** Write latency buckets (seconds): 1 ms to a minute. */
const WRITE_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Run duration buckets (seconds): one second to a day. */
const RUN_BUCKETS = [1, 5, 15, 30, 60, 300, 900, 1800, 3600, 7200, 21_600, 86_400];

/**
 * The Prometheus metrics of an Agent process (served on its opt-in port, docs/metrics.md), one
 * registry per Agent made by its composition root. They are fed off the hot path:
 *
 *   runner reports (outbox) ─▶ report(): runs started / ended by result, duration, records
 *                               processed and failed (progress as it comes), records read at the end
 *   runner, after each batch ─▶ batch()
 *   connector host writes    ─▶ write(): latency, records written and refused
 *   scrape ─▶ outbox depth and age, channel connected, work running (read then, from the sources)
 */
export class AgentMetrics {
  readonly registry = new Registry();
  readonly #runsStarted: Counter;
  readonly #runs: Counter<'result'>;
  readonly #runSeconds: Histogram<'result'>;
  readonly #processed: Counter;
  readonly #failed: Counter;
  readonly #read: Counter;
  readonly #batches: Counter;
  readonly #writeSeconds: Histogram<'outcome'>;
  readonly #written: Counter;
  readonly #refused: Counter;
  readonly #captureRetained: Gauge;
  readonly #retained = new Map<string, number>();
  /** What each run in progress was counted with so far (its progress is cumulative). */
  readonly #counted = new Map<string, { processed: number; failed: number }>();

  constructor(sources: AgentGaugeSources, now: () => number = Date.now) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'ferry_' });
    const counter = (name: string, help: string) => new Counter({ name, help, registers });
    this.#runsStarted = counter('ferry_agent_runs_started_total', 'Solution runs this Agent started.');
    this.#runs = new Counter({
      name: 'ferry_agent_runs_total',
      help: 'Solution runs this Agent ended, by result.',
      labelNames: ['result'],
      registers,
    });
    this.#runSeconds = new Histogram({
      name: 'ferry_agent_run_duration_seconds',
      help: 'Duration of the Solution runs this Agent ended, by result.',
      labelNames: ['result'],
      buckets: RUN_BUCKETS,
      registers,
    });
    this.#processed = counter('ferry_agent_records_processed_total', 'Records processed by Solution runs.');
    this.#failed = counter('ferry_agent_records_failed_total', 'Records that failed in Solution runs.');
    this.#read = counter('ferry_agent_records_read_total', 'Records read from sources by ended Solution runs.');
    this.#captureRetained = new Gauge({
      name: 'ferry_agent_change_capture_retained_bytes',
      help: "Bytes of log a source keeps for a Replication that reads it (its replication slot), at its last run's end: the most of this Agent's.",
      registers,
    });
    this.#batches = counter('ferry_agent_batches_total', 'Batches Solution runs completed (read, mapped, written).');
    this.#writeSeconds = new Histogram({
      name: 'ferry_agent_write_duration_seconds',
      help: 'Time of one write call to a target datastore, by outcome (ok: the call answered; error: it failed as a whole).',
      labelNames: ['outcome'],
      buckets: WRITE_BUCKETS,
      registers,
    });
    this.#written = counter('ferry_agent_records_written_total', 'Records target datastores accepted.');
    this.#refused = counter(
      'ferry_agent_records_refused_total',
      'Records target datastores refused, or whose write call failed.',
    );
    this.#gauges(sources, now, registers);
  }

  /** Every report the Agent's runs write to the outbox passes here first. */
  readonly report = (body: ReportBody): void => {
    if (body.kind === 'runStarted') {
      this.#runsStarted.inc();
      this.#counted.set(body.runId, { processed: 0, failed: 0 });
    } else if (body.kind === 'runProgress') this.#progress(body.runId, body.processed, body.failed);
    else if (body.kind === 'runFinished') {
      this.#progress(body.runId, body.processed, body.failed);
      this.#counted.delete(body.runId);
      this.#runs.inc({ result: body.result });
      const seconds = (Date.parse(body.at) - Date.parse(body.startedAt)) / 1000;
      if (Number.isFinite(seconds) && seconds >= 0) this.#runSeconds.observe({ result: body.result }, seconds);
      const read = body.statistics.reduce((sum, map) => sum + recordsRead(map), 0);
      if (read > 0) this.#read.inc(read);
    }
  };

  /** A run finished a batch. */
  readonly batch = (): void => this.#batches.inc();

  /**
   * A Replication reading its source's log read what the source keeps for it (docs/change-capture.md):
   * the gauge shows the most any of this Agent's Replications holds (Solution IDs stay out of labels).
   */
  readonly capture = (solutionId: string, retainedBytes: number): void => {
    this.#retained.set(solutionId, retainedBytes);
    this.#captureRetained.set(Math.max(...this.#retained.values()));
  };

  /** A plugin write call ended. */
  readonly write: WriteObserver = (call) => {
    this.#writeSeconds.observe({ outcome: call.ok ? 'ok' : 'error' }, call.seconds);
    if (call.records > call.refused) this.#written.inc(call.records - call.refused);
    if (call.refused > 0) this.#refused.inc(call.refused);
  };

  async scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  close(): void {
    this.registry.clear();
    this.#counted.clear();
  }

  /** Adds what a run counted since its last report (a run of an earlier process starts from 0). */
  #progress(runId: string, processed: number, failed: number): void {
    const before = this.#counted.get(runId) ?? { processed: 0, failed: 0 };
    if (processed > before.processed) this.#processed.inc(processed - before.processed);
    if (failed > before.failed) this.#failed.inc(failed - before.failed);
    this.#counted.set(runId, {
      processed: Math.max(processed, before.processed),
      failed: Math.max(failed, before.failed),
    });
  }

  #gauges(sources: AgentGaugeSources, now: () => number, registers: Registry[]): void {
    new Gauge({
      name: 'ferry_agent_outbox_messages',
      help: 'Reports waiting in the outbox to reach the Service.',
      registers,
      collect() {
        this.set(sources.outbox().depth);
      },
    });
    new Gauge({
      name: 'ferry_agent_outbox_oldest_age_seconds',
      help: 'Age of the oldest report waiting in the outbox (0 when it is empty).',
      registers,
      collect() {
        this.set(outboxAgeSeconds(sources.outbox().oldestCreated, now()));
      },
    });
    new Gauge({
      name: 'ferry_agent_channel_connected',
      help: '1 while the channel to the Service is open, else 0.',
      registers,
      collect() {
        this.set(sources.connected() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'ferry_agent_work_running',
      help: 'Solution runs and commands in progress.',
      registers,
      collect() {
        this.set(sources.runningWork());
      },
    });
  }
}

/** Seconds since an outbox row was stored, 0 for none. */
export function outboxAgeSeconds(oldestCreated: string | undefined, nowMs: number): number {
  if (oldestCreated === undefined) return 0;
  const ms = Date.parse(oldestCreated);
  return Number.isFinite(ms) ? Math.max(0, (nowMs - ms) / 1000) : 0;
}

/** A Map's records read: its Query Block's count, or (an entity of a Replication, without Blocks) what it processed. */
function recordsRead(map: RunMapStats): number {
  const query = map.blocks.find((b) => b.blockType === 'Query');
  return query ? query.processed : map.processed;
}
