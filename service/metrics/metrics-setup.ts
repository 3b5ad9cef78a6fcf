import type { SessionRegistry } from '../gateway/command-bus.js';
import type { FinishedExecution } from '../history/reports.js';
import type { Store } from '../store/store.js';
import { ServiceMetrics } from './service-metrics.js';
import { readStore } from './store-gauges.js';

/**
 * The metrics of one Service process (one registry per Service: tests run several Services in one
 * process), told where scrapes read the connected Agents and the store. The HTTP app serves them
 * and opens the listener of their own (service/metrics/metrics-route.ts).
 */
export function serviceMetricsFor(store: Store, registry: SessionRegistry): ServiceMetrics {
  const metrics = new ServiceMetrics();
  metrics.readFrom({
    connectedAgents: () => registry.all().map((s) => s.agentId),
    readStore: () => readStore(store.db),
  });
  return metrics;
}

/** A run's end as History recorded it, counted: result, records, duration (the Agent's clock at both ends). */
export function countFinishedRun(metrics: ServiceMetrics, finished: FinishedExecution): void {
  const { execution, solution } = finished;
  const start = Date.parse(execution.start);
  const stop = execution.stop === null ? Number.NaN : Date.parse(execution.stop);
  metrics.runFinished({
    result: execution.result ?? 'Unknown',
    solutionType: solution.solutionType,
    processed: Number(execution.recordsProcessed),
    failed: Number(execution.recordsFailed),
    seconds: Number.isFinite(start) && Number.isFinite(stop) ? (stop - start) / 1000 : undefined,
  });
}
