import pg from 'pg';
import type { Pool, PoolClient, PoolConfig } from 'pg';
import { ConnectorError, throwIfAborted, type CallContext, type RecordBatch } from '../../src/connectors/sdk.js';
import { callError, isLost, markLost } from './errors.js';

/**
 * Checks a client out of the pool with an error listener attached: pg's pool removes its own while
 * a client is checked out, and an 'error' event without a listener would end the process. A client
 * whose connection fails while checked out is remembered as lost (errors.ts: what it throws next is
 * the connection's failure, not the statement's). A pool that cannot give a connection fails with
 * `Unreachable` unless the server refused the credentials or the database.
 */
export async function checkout(
  pool: Pool,
  ctx: CallContext,
): Promise<{ client: PoolClient; release: (err?: Error) => void }> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    const mapped = callError(err, 'No connection to the server');
    if (mapped !== err) throw mapped;
    throw new ConnectorError(
      'Unreachable',
      `No connection to the server: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  const onError = (err: Error): void => {
    markLost(client, err);
    ctx.log.warn(
      { err: { message: err.message, code: (err as { code?: string }).code } },
      'postgres connection failed while in use',
    );
  };
  const onEnd = (): void => markLost(client);
  client.on('error', onError);
  client.on('end', onEnd);
  let released = false;
  return {
    client,
    release: (err) => {
      if (released) return;
      released = true;
      client.removeListener('error', onError);
      client.removeListener('end', onEnd);
      // A lost client never goes back to the pool.
      client.release(err ?? (isLost(client) ? new Error('connection lost') : undefined));
    },
  };
}

/**
 * Cancels the statement a client runs when the signal fires (`pg_cancel_backend` from a short
 * connection of its own): a long sort before the first FETCH stops at once instead of at the end.
 *
 * The returned `stop()` resolves once a cancel in flight has been delivered (or 2 s passed) and
 * says whether one was sent. A client that saw a cancel must not go back to the pool: a late
 * cancel would hit whatever statement the next user runs on it. The caller destroys it instead.
 */
export function cancelOnAbort(config: PoolConfig, client: PoolClient, ctx: CallContext): () => Promise<boolean> {
  const pid = (client as unknown as { processID?: number }).processID;
  let sent: Promise<void> | undefined;
  const onAbort = (): void => {
    if (!pid) return;
    const c = new pg.Client({ ...config, types: undefined });
    c.on('error', () => undefined);
    sent = c
      .connect()
      .then(() => c.query('SELECT pg_cancel_backend($1)', [pid]))
      .then(() => undefined)
      .catch((err: unknown) => ctx.log.warn({ err: { message: (err as Error).message } }, 'postgres cancel failed'))
      .finally(() => void c.end().catch(() => undefined));
  };
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  return async () => {
    ctx.signal.removeEventListener('abort', onAbort);
    if (!sent) return ctx.signal.aborted;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([sent, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
    clearTimeout(timer);
    return true;
  };
}

let cursorSeq = 0;

/**
 * Streams a SELECT through a server-side cursor in a read-only transaction: `DECLARE … NO SCROLL
 * CURSOR`, then `FETCH FORWARD batchSize` until empty. The next FETCH is sent before the current
 * batch is handed on, so the server reads while the caller works. Only one batch (plus the one in
 * flight) is ever in memory.
 */
export async function* cursorRows(
  pool: Pool,
  config: PoolConfig,
  sql: string,
  params: unknown[],
  batchSize: number,
  ctx: CallContext,
): AsyncGenerator<RecordBatch, void, undefined> {
  throwIfAborted(ctx.signal);
  const { client, release } = await checkout(pool, ctx);
  const stopCancel = cancelOnAbort(config, client, ctx);
  const name = `ferry_cur_${++cursorSeq}`;
  let failed: Error | undefined;
  let pending: Promise<RecordBatch> | undefined;
  const fetch = (): Promise<RecordBatch> => {
    const p = client
      .query<Record<string, string | number | boolean | null>>(`FETCH FORWARD ${batchSize} FROM ${name}`)
      .then((r) => r.rows);
    p.catch(() => undefined);
    return p;
  };
  let sent = 0;
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await client.query(`DECLARE ${name} NO SCROLL CURSOR FOR ${sql}`, params);
    let next: Promise<RecordBatch> = fetch();
    pending = next;
    for (;;) {
      const rows = await next;
      pending = undefined;
      throwIfAborted(ctx.signal);
      if (rows.length === 0) break;
      if (rows.length === batchSize) pending = next = fetch();
      sent += rows.length;
      yield rows;
      ctx.progress({ records: sent });
      if (rows.length < batchSize) break;
    }
  } catch (err) {
    failed = err as Error;
    throw callError(err, 'The query failed', client);
  } finally {
    const cancelled = await stopCancel();
    if (pending) await pending.catch(() => undefined);
    if (cancelled) {
      // Never hand a cancelled session back to the pool (see cancelOnAbort).
      release(new Error('cancelled'));
    } else {
      try {
        await client.query(failed ? 'ROLLBACK' : `CLOSE ${name}; COMMIT`);
        release();
      } catch (err) {
        release(err as Error);
      }
    }
  }
}
