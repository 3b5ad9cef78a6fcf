import mysql from 'mysql2';
import type { FieldPacket, Pool, PoolConnection, PoolOptions, ResultSetHeader } from 'mysql2';
import type { Readable } from 'node:stream';
import { ConnectorError, throwIfAborted, type CallContext } from '../../src/connectors/sdk.js';
import { callError } from './errors.js';

/**
 * The connection pool and what every call does with a connection: session settings, a checkout
 * that maps failures to reach the server, statements as promises, and cancellation by `KILL QUERY`
 * from a connection of its own.
 */

/**
 * Each session: UTC (TIMESTAMP values come and go as UTC), strict mode for every table (a value
 * that does not fit is refused, never cut), backslash escapes on (write.ts escapes with them), and
 * a long net_write_timeout: a streaming query whose consumer is slow (a target that waits on a
 * lock) must not be dropped by the server after its default 60 s.
 */
const SESSION = `SET SESSION time_zone = '+00:00',
  sql_mode = CONCAT_WS(',', NULLIF(REPLACE(@@sql_mode, 'NO_BACKSLASH_ESCAPES', 'STRICT_ALL_TABLES'), ''), 'STRICT_ALL_TABLES'),
  net_write_timeout = 86400`;

export type Statement = string | { sql: string; values?: unknown[]; infile?: () => Readable };

/** A statement's outcome: rows of a SELECT, a header of a change, or an array of them (several statements). */
export type Outcome = unknown;

export function openPool(options: PoolOptions, ctx: CallContext): Pool {
  const pool = mysql.createPool(options);
  pool.on('connection', (conn) => {
    conn.query(SESSION, (err) => {
      if (err) ctx.log.warn({ err: { message: err.message, code: err.code } }, 'mariadb session settings failed');
    });
    // An idle connection that breaks emits 'error'; unheard, it would end the process.
    conn.on('error', (err) =>
      ctx.log.warn({ err: { message: err.message, code: err.code } }, 'idle mariadb connection failed'),
    );
  });
  return pool;
}

export function endPool(pool: Pool): Promise<void> {
  return new Promise((resolve) => pool.end(() => resolve()));
}

/** A connection of the pool; `release(broken)` gives it back, or destroys it when it cannot be trusted. */
export interface Checked {
  conn: PoolConnection;
  release: (broken?: boolean) => void;
}

export async function checkout(pool: Pool, ctx: CallContext): Promise<Checked> {
  throwIfAborted(ctx.signal);
  let conn: PoolConnection;
  try {
    conn = await new Promise<PoolConnection>((resolve, reject) =>
      pool.getConnection((err, c) => (err ? reject(err) : resolve(c))),
    );
  } catch (err) {
    const mapped = callError(err, 'No connection to the server');
    if (mapped !== err) throw mapped;
    throw new ConnectorError(
      'Unreachable',
      `No connection to the server: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  let released = false;
  return {
    conn,
    release: (broken) => {
      if (released) return;
      released = true;
      if (broken) conn.destroy();
      else conn.release();
    },
  };
}

/** Runs one statement (or several, `;`-separated) on a connection. */
export function run(conn: PoolConnection, st: Statement): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const opts =
      typeof st === 'string'
        ? { sql: st }
        : {
            sql: st.sql,
            ...(st.values ? { values: st.values } : {}),
            ...(st.infile ? { infileStreamFactory: st.infile } : {}),
          };
    conn.query(opts, (err, rows) => (err ? reject(err) : resolve(rows)));
  });
}

/** Rows of a SELECT. */
export async function rows<T>(conn: PoolConnection, sql: string, values: unknown[] = []): Promise<T[]> {
  return (await run(conn, { sql, values })) as T[];
}

/** The header of a change. */
export async function change(conn: PoolConnection, st: Statement): Promise<ResultSetHeader> {
  return (await run(conn, st)) as ResultSetHeader;
}

/**
 * Kills the statement a connection runs when the signal fires (`KILL QUERY` from a connection of
 * its own). `stop()` resolves once a kill in flight has been delivered (or 2 s passed) and says
 * whether one was sent: a connection that saw one must be destroyed, not given back, since a late
 * kill would hit the next user's statement.
 */
export function killOnAbort(options: PoolOptions, conn: PoolConnection, ctx: CallContext): () => Promise<boolean> {
  let sent: Promise<void> | undefined;
  const onAbort = (): void => {
    const id = conn.threadId;
    if (!id) return;
    sent = new Promise<void>((resolve) => {
      // The pool's own settings are not a connection's (mysql2 would complain of each).
      const { connectionLimit: _l, maxIdle: _m, idleTimeout: _i, ...connection } = options;
      const killer = mysql.createConnection({ ...connection, multipleStatements: false });
      killer.on('error', () => undefined);
      killer.query(`KILL QUERY ${Number(id)}`, (err) => {
        if (err) ctx.log.warn({ err: { message: err.message, code: err.code } }, 'mariadb kill failed');
        killer.end(() => resolve());
      });
    });
  };
  if (ctx.signal.aborted) onAbort();
  else ctx.signal.addEventListener('abort', onAbort, { once: true });
  return async () => {
    ctx.signal.removeEventListener('abort', onAbort);
    if (!sent) return ctx.signal.aborted;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([sent, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
    clearTimeout(timer);
    return true;
  };
}

/** Where a statement's batches go: what {@link pumpBatches} gives the code that runs the statement. */
export interface BatchSink<T> {
  batch(b: T): void;
  /** The last rows of the statement: called once, when it ended well. */
  end(): void;
  fail(err: unknown): void;
}

/**
 * The batches of one statement, pulled one at a time: `start` runs the statement on a connection of
 * the pool and hands its batches to the sink. The connection is paused while two full batches wait
 * for their consumer, so the rest of the server's rows stay in its socket, not in memory. Breaking
 * out of the loop (or an abort) kills the statement and destroys the connection.
 */
export async function* pumpBatches<T>(
  pool: Pool,
  options: PoolOptions,
  ctx: CallContext,
  start: (conn: PoolConnection, sink: BatchSink<T>) => void,
): AsyncGenerator<T, void, undefined> {
  const { conn, release } = await checkout(pool, ctx);
  const stopKill = killOnAbort(options, conn, ctx);
  const ready: T[] = [];
  let done = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const signal = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  let paused = false;
  let finished = false;
  start(conn, {
    batch: (b) => {
      ready.push(b);
      // Two batches ahead of the consumer: the server keeps sending while the caller writes one.
      if (!paused && ready.length >= 2) {
        paused = true;
        conn.pause();
      }
      signal();
    },
    end: () => {
      done = true;
      signal();
    },
    fail: (err) => {
      failure ??= err;
      signal();
    },
  });
  try {
    for (;;) {
      const next = ready.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (failure) throw failure as Error;
      if (done) {
        finished = true;
        return;
      }
      // Waiting starts before the resume: the driver may hand over the rows it held back at once.
      const woken = new Promise<void>((resolve) => (wake = resolve));
      if (paused) {
        paused = false;
        conn.resume();
      }
      await woken;
    }
  } catch (err) {
    throw callError(err, 'The query failed');
  } finally {
    // The last batch may have paused the connection as the statement ended: a connection given back paused would hang its next statement.
    if (paused) {
      paused = false;
      conn.resume();
    }
    const killed = await stopKill();
    if (!finished && !failure) {
      // Left early: the rest of the result would still flow; the connection cannot be reused.
      release(true);
    } else release(killed || failure !== undefined);
  }
}

/** Rows of a statement as arrays, in batches of at most `batchSize` ({@link pumpBatches}). */
export function streamRows(
  pool: Pool,
  options: PoolOptions,
  sql: string,
  values: unknown[],
  batchSize: number,
  ctx: CallContext,
  onFields?: (fields: FieldPacket[]) => void,
): AsyncGenerator<unknown[][], void, undefined> {
  return pumpBatches<unknown[][]>(pool, options, ctx, (conn, sink) => {
    let batch: unknown[][] = [];
    let failed = false;
    const q = conn.query({ sql, values, rowsAsArray: true });
    q.on('fields', (fields: FieldPacket[]) => onFields?.(fields));
    q.on('result', (row: unknown) => {
      batch.push(row as unknown[]);
      if (batch.length >= batchSize) {
        sink.batch(batch);
        batch = [];
      }
    });
    q.on('error', (err: Error) => {
      failed = true;
      sink.fail(err);
    });
    q.on('end', () => {
      if (failed) return;
      if (batch.length) sink.batch(batch);
      sink.end();
    });
  });
}
