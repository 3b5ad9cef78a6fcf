import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { bootstrap, secretsFor, type BootstrapResult } from './bootstrap.js';
import type { ServiceConfig } from './config.js';
import { buildApp } from './http/app.js';
import { RateLimiter } from './http/rate-limit.js';
import { openStore, type Store } from './store/store.js';

export interface FerryService {
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly bootstrap: BootstrapResult;
  /** Listens on the configured host and port; resolves to the base URL. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

/** Secrets are removed from every log line by path. */
export const REDACT_PATHS = ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.apiToken', '*.apiCryptoToken', '*.eventSolutionAccessToken'];

/** The composition root of the Service: store, secrets, bootstrap, HTTP app. */
export async function buildService(config: ServiceConfig, opts: { logger?: Logger } = {}): Promise<FerryService> {
  const log = opts.logger ?? pino({ level: config.logLevel, redact: { paths: REDACT_PATHS, censor: '[redacted]' } });
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const secrets = secretsFor(config);
    const boot = await bootstrap(store, secrets, config);
    const app = await buildApp({ config, store, secrets, rateLimiter: new RateLimiter(config.rateLimitPerMinute, config.rateLimitPerDay), log });
    return {
      app,
      store,
      bootstrap: boot,
      async listen() {
        await app.listen({ port: config.port, host: config.host });
        const addr = app.server.address();
        const port = typeof addr === 'object' && addr ? addr.port : config.port;
        const host = config.host.includes(':') ? `[${config.host}]` : config.host;
        return `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${port}`;
      },
      async close() {
        await app.close();
        await store.close();
      },
    };
  } catch (err) {
    await store.close();
    throw err;
  }
}
