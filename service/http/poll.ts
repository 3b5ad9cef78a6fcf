import type { FastifyInstance } from 'fastify';
import { isFerryError } from '../../src/errors/ferry-error.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A POLL operation (its summary starts with "POLL"): answered 404 until a result is ready. Its
     * not-ready answers carry Retry-After, and its calls count in the polling bucket of the rate
     * limit, not the Organization's per-minute one (rate-limit.ts).
     */
    poll?: boolean;
    /**
     * A call a client repeats to watch a run (startmonitor, History reads, a Solution's status): it
     * answers at once, but counts in the polling bucket like a POLL operation, so a person watching
     * one run does not spend the Organization's calls for the minute.
     */
    polled?: boolean;
  }
}

/** What a not-ready answer of a POLL operation tells the caller to wait, in seconds. */
export const POLL_RETRY_AFTER_SECONDS = 2;

/**
 * Whether an error is a POLL operation's "not ready yet": metadata still loading, a preview the
 * Agent is still reading, a validation still running. Other 404s (an unknown ID) are final.
 */
function notReady(err: unknown): boolean {
  if (!isFerryError(err)) return false;
  if (err.code === 'API_METADATA_LOADING') return true;
  return err.code === 'API_NOT_FOUND' && (err.details?.['pending'] === true || err.details?.['running'] === true);
}

/** Marks the POLL routes from their summaries and adds Retry-After to their not-ready answers. */
export function registerPolling(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const summary = route.schema?.summary;
    if (typeof summary === 'string' && summary.startsWith('POLL')) route.config = { ...route.config, poll: true };
  });
  app.addHook('onError', async (req, reply, err) => {
    if (req.routeOptions.config.poll && notReady(err))
      void reply.header('Retry-After', String(POLL_RETRY_AFTER_SECONDS));
  });
}
