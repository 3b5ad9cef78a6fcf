import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { FerryError } from '../../src/errors/ferry-error.js';
import { MetricsListener, parseListenAddress } from '../../src/metrics/metrics-listener.js';
import type { ServiceConfig } from '../config.js';
import type { ServiceMetrics } from './service-metrics.js';

/** The path Prometheus scrapes, on the API's port (with a token) and on the metrics listener. */
export const METRICS_PATH = '/metrics';

/** SHA-256 of a text: both sides of a comparison have the same length, so it takes the same time whatever they hold. */
const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** Whether the request carries `Authorization: Bearer <token>`, compared in constant time. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer[ \t]+(\S+)\s*$/i.exec(header ?? '');
  return timingSafeEqual(digest(m?.[1] ?? ''), digest(token)) && m !== null;
}

/**
 * Counts every answered request by method, route pattern and status (`onResponse`: after the reply
 * left, off the request's own time); serves `GET /metrics` on the API's port when a token is
 * configured (FERRY_METRICS_TOKEN), only to `Authorization: Bearer <token>`, and opens the listener
 * of their own when FERRY_METRICS_LISTEN names one (with the app: before it listens, a port that
 * cannot be opened fails the start; closed with it). Without a token the path has no route (404).
 */
export function registerMetrics(
  app: FastifyInstance,
  metrics: ServiceMetrics,
  config: Pick<ServiceConfig, 'metricsToken' | 'metricsListen'>,
): void {
  app.addHook('onResponse', (req, reply, done) => {
    metrics.httpRequest(req.method, req.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  const address = config.metricsListen === undefined ? undefined : parseListenAddress(config.metricsListen);
  if (address) {
    const listener = new MetricsListener(metrics, (err) => app.log.warn({ err }, 'metrics scrape failed'));
    app.addHook('onReady', async () => {
      metrics.listenerUrl = await listener.listen(address.host, address.port);
      app.log.info({ url: metrics.listenerUrl }, 'metrics listening');
    });
    app.addHook('onClose', () => listener.close());
  }
  app.addHook('onClose', async () => metrics.close());
  const token = config.metricsToken;
  if (token === undefined) return;
  app.get(
    METRICS_PATH,
    // Not part of the /v1 API: no Basic auth, no Security Rule, not in the OpenAPI document.
    { config: { access: 'public' }, schema: { hide: true } },
    async (req: FastifyRequest, reply) => {
      if (!bearerMatches(req.headers.authorization, token)) {
        void reply.header('WWW-Authenticate', 'Bearer realm="Ferry metrics"');
        throw new FerryError(
          'API_UNAUTHENTICATED',
          'Send Authorization: Bearer <token> with the metrics token this Service was started with (FERRY_METRICS_TOKEN).',
        );
      }
      const text = await metrics.scrape();
      return reply.header('Content-Type', metrics.contentType).header('Cache-Control', 'no-store').send(text);
    },
  );
}
