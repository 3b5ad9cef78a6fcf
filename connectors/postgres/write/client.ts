import type { Pool, PoolClient } from 'pg';
import { throwIfAborted, type CallContext } from '../../../src/connectors/sdk.js';
import { cancelOnAbort, checkout } from '../cursor.js';

/** A checked-out client and how to give it back (an error: it is not pooled again). */
export interface WritingClient {
  client: PoolClient;
  release: (err?: Error) => void;
}

/**
 * A client for a write call whose statement is cancelled on the server when the call's signal
 * fires (a stop past its grace, a restart, the host's time-out): a write waiting on a lock ends
 * then, not when the lock is released. A client that saw its signal fire is not pooled again.
 */
export async function writingClient(pool: Pool, ctx: CallContext): Promise<WritingClient> {
  const { client, release } = await checkout(pool, ctx);
  const stopCancel = cancelOnAbort(pool.options, client, ctx);
  // Once the signal fired the call sends nothing more: a fallback after the cancelled statement
  // (another way to write the batch) would wait on the same lock and commit after the run ended.
  const query = client.query.bind(client) as (...a: unknown[]) => unknown;
  const guarded = (...args: unknown[]): unknown => {
    throwIfAborted(ctx.signal);
    return query(...args);
  };
  Object.defineProperty(client, 'query', { value: guarded, configurable: true, writable: true });
  return {
    client,
    release: (err) => {
      void stopCancel();
      delete (client as { query?: unknown }).query;
      release(err ?? (ctx.signal.aborted ? new Error('cancelled') : undefined));
    },
  };
}
