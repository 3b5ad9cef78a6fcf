import type { Logger } from 'pino';
import type { ChannelClient } from '../channel/client.js';
import type { Outbox } from '../channel/outbox.js';
import { MetricsListener } from '../metrics/metrics-listener.js';
import type { Component } from './components.js';
import type { AgentConfig } from './config.js';
import { AgentMetrics, outboxAgeSeconds } from './metrics.js';
import type { WorkRegistry } from './work.js';

/**
 * The Agent's metrics when FERRY_AGENT_METRICS_PORT asks for them; undefined otherwise (nothing is
 * counted). Their gauges read the outbox, the channel and the work registry at scrape time.
 */
export function agentMetricsFor(
  config: AgentConfig,
  from: { readonly outbox: Outbox; readonly work: WorkRegistry; readonly channel: () => ChannelClient },
): AgentMetrics | undefined {
  if (config.metricsPort === undefined) return undefined;
  return new AgentMetrics({
    outbox: () => ({ depth: from.outbox.size, oldestCreated: from.outbox.oldestCreated() }),
    connected: () => from.channel().connected,
    runningWork: () => from.work.count,
  });
}

/**
 * The metrics port as a component: listens at start (a port that cannot be opened is logged at
 * warn, and the Agent runs on without it), closes at stop.
 */
export function metricsComponent(config: AgentConfig, metrics: AgentMetrics, log: Logger): Component {
  const listener = new MetricsListener(metrics, (err) => log.warn({ err }, 'metrics scrape failed'));
  const { metricsHost: host, metricsPort: port = 0 } = config;
  return {
    name: 'metrics',
    start() {
      listener.listen(host, port).then(
        (url) => log.info({ url }, 'metrics listening'),
        (err: unknown) => log.warn({ err, host, port }, 'metrics port could not be opened'),
      );
    },
    async stop() {
      await listener.close();
      metrics.close();
    },
  };
}

/** What a heartbeat tells the Service of the outbox (optional fields of the heartbeat; docs/metrics.md). */
export function outboxReading(outbox: Outbox, nowMs = Date.now()): { outboxDepth: number; outboxAgeSeconds: number } {
  const depth = outbox.size;
  return {
    outboxDepth: depth,
    outboxAgeSeconds: depth === 0 ? 0 : Math.round(outboxAgeSeconds(outbox.oldestCreated(), nowMs) * 1000) / 1000,
  };
}
