/**
 * The statements of one write batch, run in one transaction: the part of a SQLite write that runs
 * either on the session's thread or in its writer thread (`WriteThread`, thread.ts). Everything the
 * executor needs is in its parameters and the job: it refers to nothing outside its own body,
 * because the writer thread runs it from its source text.
 *
 * A job carries its records' values packed (numbers in a Float64Array, text as one string cut at
 * `ends`), so a batch crosses to the writer thread as a few transferable buffers instead of
 * thousands of structured-cloned objects.
 */

/** The subset of a better-sqlite3 Database the executor uses. */
export interface ExecDatabase {
  prepare(sql: string): { run(params: unknown[]): { changes: number; lastInsertRowid: number | bigint } };
  readonly inTransaction: boolean;
}

/** Consecutive records of a job that share one column list and one statement shape. */
export interface ExecChunk {
  /** Records in the chunk. */
  rows: number;
  /** Values per record. */
  cols: number;
  /** Create / Upsert of all `rows` records in one statement; absent = record by record. */
  multi?: string;
  /** The statement for one record: insert, upsert, update or delete. */
  one: string;
  /** Update / UpdateInsert / Delete: positions of the key values (bound last, in this order) and of the others. */
  keyPos?: number[];
  setPos?: number[];
  /** UpdateInsert: the insert run when the update matched nothing. */
  insert?: string;
  /** Create: report the rowid SQLite gave the record. */
  rowid?: boolean;
}

/**
 * Part of a batch. The batch's transaction opens with its first job (`begin`) and commits with its
 * last (`commit`), so a long batch can be handed over in parts while the next part is prepared.
 */
export interface ExecJob {
  begin: boolean;
  commit: boolean;
  /** Undo the open batch instead (its sender stopped before its last part); no records. */
  abort?: boolean;
  /** With `commit`: statements run last in the batch's transaction (a caller's checkpoint), each with its parameters. */
  finally?: { sql: string; params: unknown[] }[];
  action: 'Create' | 'Upsert' | 'Update' | 'UpdateInsert' | 'Delete';
  chunks: ExecChunk[];
  /** Per value, in record then column order: 0 null, 1 number (`nums`), 2 text (`text` up to the next `ends`), 3 other (`others`). */
  tags: Uint8Array;
  nums: Float64Array;
  text: string;
  ends: Uint32Array;
  others: unknown[];
}

/** Per record of the job: affected rows (≥ 0), {@link NOT_FOUND} or {@link FAILED} (its error in `errors`). */
export interface ExecResult {
  status: Int32Array;
  /** Create: the rowid of each record that asked for it, NaN for the others. */
  rowids?: Float64Array;
  errors: { at: number; code: string; message: string }[];
}

export const NOT_FOUND = -1;
export const FAILED = -2;

/**
 * An executor bound to one connection. `recordCodes` are the SQLite error codes that concern
 * the record alone: a statement failing with one of them fails that record; any other error, or
 * one after which SQLite ended the transaction, is thrown and fails the whole job (nothing of it
 * is committed). `owned`: only the executor uses the connection (the writer thread's), so a
 * transaction it finds open at a batch's start is one of its own batches left unfinished, and is
 * undone; on a shared connection (the session's) the batch runs inside it, as a savepoint.
 */
export function sqliteExecutor(
  db: ExecDatabase,
  recordCodes: readonly string[],
  owned: boolean,
): (job: ExecJob) => ExecResult {
  // The statuses once more: the body must not refer to anything outside it (the types keep them equal).
  const notFound: typeof NOT_FOUND = -1;
  const failedStatus: typeof FAILED = -2;
  let nested = false;
  const statements = new Map<string, ReturnType<ExecDatabase['prepare']>>();
  const stmt = (sql: string): ReturnType<ExecDatabase['prepare']> => {
    let s = statements.get(sql);
    if (!s) {
      // Bounded: records with ever new field sets must not grow it without end.
      if (statements.size >= 500) statements.clear();
      s = db.prepare(sql);
      statements.set(sql, s);
    }
    return s;
  };
  const recordError = (err: unknown): { code: string; message: string } => {
    const code = (err as { code?: unknown } | null)?.code;
    if (typeof code !== 'string' || !recordCodes.includes(code) || !db.inTransaction) throw err;
    return { code, message: err instanceof Error ? err.message : String(err) };
  };

  return (job) => {
    const { tags, nums, text, ends, others } = job;
    let total = 0;
    for (const c of job.chunks) total += c.rows;
    const status = new Int32Array(total);
    const errors: ExecResult['errors'] = [];
    let rowids: Float64Array | undefined;
    let v = 0;
    let s = 0;
    let pos = 0;
    let o = 0;
    const values = (n: number): unknown[] => {
      const p = new Array<unknown>(n);
      for (let i = 0; i < n; i++, v++) {
        const t = tags[v];
        if (t === 1) p[i] = nums[v];
        else if (t === 2) {
          const e = ends[s++] as number;
          p[i] = text.slice(pos, e);
          pos = e;
        } else if (t === 3) p[i] = others[o++];
        else p[i] = null;
      }
      return p;
    };
    const one = (c: ExecChunk, vals: unknown[], at: number): void => {
      try {
        switch (job.action) {
          case 'Create': {
            const info = stmt(c.one).run(vals);
            status[at] = 1;
            if (c.rowid) {
              rowids ??= new Float64Array(total).fill(NaN);
              rowids[at] = Number(info.lastInsertRowid);
            }
            return;
          }
          case 'Upsert':
            stmt(c.one).run(vals);
            status[at] = 1;
            return;
          case 'Delete': {
            const info = stmt(c.one).run((c.keyPos ?? []).map((k) => vals[k]));
            status[at] = info.changes > 0 ? info.changes : notFound;
            return;
          }
          case 'Update':
          case 'UpdateInsert': {
            const bound = (c.setPos ?? []).map((k) => vals[k]);
            for (const k of c.keyPos ?? []) bound.push(vals[k]);
            const info = stmt(c.one).run(bound);
            if (info.changes > 0) status[at] = info.changes;
            else if (job.action === 'Update' || !c.insert) status[at] = notFound;
            else {
              stmt(c.insert).run(vals);
              status[at] = 1;
            }
            return;
          }
        }
      } catch (err) {
        const e = recordError(err);
        status[at] = failedStatus;
        errors.push({ at, code: e.code, message: e.message });
      }
    };

    if (job.abort) {
      if (nested && db.inTransaction) {
        stmt('ROLLBACK TO ferry_batch').run([]);
        stmt('RELEASE ferry_batch').run([]);
      } else if (!nested && db.inTransaction) stmt('ROLLBACK').run([]);
      nested = false;
      return { status, errors };
    }
    if (job.begin) {
      // Owned: a batch whose sender stopped before its last part left its transaction open.
      if (db.inTransaction && owned) stmt('ROLLBACK').run([]);
      nested = db.inTransaction;
      stmt(nested ? 'SAVEPOINT ferry_batch' : 'BEGIN IMMEDIATE').run([]);
    } else if (!db.inTransaction) throw new Error('The transaction of this batch ended before its last part.');
    try {
      let at = 0;
      for (const c of job.chunks) {
        const vals = values(c.rows * c.cols);
        let done = false;
        if (c.multi) {
          try {
            stmt(c.multi).run(vals);
            status.fill(1, at, at + c.rows);
            done = true;
          } catch (err) {
            recordError(err); // rethrows what is not one record's fault; else record by record below
          }
        }
        if (!done) {
          // Each refused record throws a SqliteError, whose stack capture costs more than the
          // statement: a batch whose every record fails (a Create run again over the same keys)
          // spent most of its time there. Only a record error's code and message are kept.
          const stackLimit = Error.stackTraceLimit;
          Error.stackTraceLimit = 0;
          try {
            for (let r = 0; r < c.rows; r++)
              one(c, c.rows === 1 ? vals : vals.slice(r * c.cols, (r + 1) * c.cols), at + r);
          } finally {
            Error.stackTraceLimit = stackLimit;
          }
        }
        at += c.rows;
      }
      if (job.commit) {
        for (const f of job.finally ?? []) stmt(f.sql).run(f.params);
        stmt(nested ? 'RELEASE ferry_batch' : 'COMMIT').run([]);
      }
    } catch (err) {
      if (nested && db.inTransaction) {
        stmt('ROLLBACK TO ferry_batch').run([]);
        stmt('RELEASE ferry_batch').run([]);
      } else if (db.inTransaction) stmt('ROLLBACK').run([]);
      throw err;
    }
    return rowids ? { status, rowids, errors } : { status, errors };
  };
}
