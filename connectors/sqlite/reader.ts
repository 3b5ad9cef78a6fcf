/**
 * The reading half of a SQLite session's reader thread (thread.ts): runs a query's statement on a
 * connection of its own and hands its rows over in packed batches, one batch ahead of the session.
 * better-sqlite3 steps statements synchronously and builds every value on the calling thread; in
 * the thread, that work runs beside the session's own (converting the previous batch, writing it
 * to the target).
 *
 * The handler refers to nothing outside its own body: the thread runs it from its source text.
 * Values cross packed, as the writer thread's do (executor.ts): numbers in a Float64Array, text as
 * one string cut at `ends`, blobs in a list; whole numbers beyond 2^53 cross as their decimal text
 * and become bigint again on the session's side, so the value converters see what a query on the
 * session's thread gives them.
 */

export type ReadBind = number | bigint | string | Uint8Array | null;

export type ReadRequest =
  /** Prepares the statement on a new read-only connection and answers its first batch. */
  | { op: 'open'; sql: string; params: ReadBind[]; batch: number; cols: number; bytes?: boolean }
  | { op: 'next'; cursor: number }
  /** Releases the statement and its connection (the reader stopped early). */
  | { op: 'close'; cursor: number };

export interface ReadBatch {
  cursor: number;
  rows: number;
  /** No rows follow: the statement and its connection are released. */
  done: boolean;
  /** Per value, row by row: 0 null, 1 number (`nums`), 2 text, 3 whole number as text, 4 blob (`blobs`). */
  tags: Uint8Array;
  nums: Float64Array;
  text: string;
  ends: Uint32Array;
  /**
   * For a cursor opened with `bytes`: the text as UTF-8, and `ends` in bytes (`text` is then
   * empty). A packed query writes text cells from these bytes without making strings.
   */
  bytes?: Uint8Array;
  blobs: Uint8Array[];
}

/** What the thread's source text passes the factory: the connection settings of the session's readers. */
export interface ReaderSettings {
  file: string;
  busyTimeoutMs: number;
  pragmas: string[];
}

interface ReaderDb {
  pragma(sql: string): unknown;
  prepare(sql: string): {
    raw(on: boolean): { safeIntegers(on: boolean): { iterate(...params: unknown[]): Iterator<unknown[]> } };
  };
  close(): void;
  readonly open: boolean;
}

type ReaderDbClass = new (
  file: string,
  options: { readonly: boolean; fileMustExist: boolean; timeout: number },
) => ReaderDb;

/** The thread's request handler, bound to the better-sqlite3 class and the session's settings. */
// eslint-disable-next-line max-lines-per-function -- shipped as source text into the thread; it cannot call helpers outside its body
export function sqliteReader(
  Db: ReaderDbClass,
  settings: ReaderSettings,
): (req: ReadRequest) => { reply: ReadBatch | { closed: true }; transfer: ArrayBuffer[] } {
  interface Cursor {
    db: ReaderDb;
    it: Iterator<unknown[]>;
    batch: number;
    cols: number;
    bytes: boolean;
    ready: ReadBatch | undefined;
    error: unknown;
    done: boolean;
    timer: ReturnType<typeof setImmediate> | undefined;
  }
  const cursors = new Map<number, Cursor>();
  const encoder = new TextEncoder();
  let nextCursor = 1;

  // The statement and connection of a cursor; the cursor itself stays until its last batch is answered.
  const finish = (cur: Cursor): void => {
    if (cur.timer !== undefined) clearImmediate(cur.timer);
    cur.timer = undefined;
    try {
      if (!cur.done) cur.it.return?.();
    } finally {
      cur.done = true;
      if (cur.db.open) cur.db.close();
    }
  };
  const release = (id: number, cur: Cursor): void => {
    cursors.delete(id);
    finish(cur);
  };

  // A batch ends early once its text passes this many characters: one string must hold it.
  const textBudget = 1 << 25;
  const produce = (id: number, cur: Cursor): ReadBatch => {
    // Room for 256 rows first, doubled as rows come: a query that returns a few rows of a wide
    // table in large batches does not allocate the whole batch.
    let cap = Math.min(cur.batch, 256) * cur.cols;
    let tags = new Uint8Array(cap);
    let nums = new Float64Array(cap);
    let ends = new Uint32Array(cap);
    const blobs: Uint8Array[] = [];
    let text = '';
    let v = 0;
    let s = 0;
    let rows = 0;
    for (; rows < cur.batch && text.length < textBudget; rows++) {
      const r = cur.it.next();
      if (r.done) {
        cur.done = true;
        break;
      }
      if (v + cur.cols > cap) {
        cap = Math.min(cap * 2, cur.batch * cur.cols);
        const t2 = new Uint8Array(cap);
        t2.set(tags);
        tags = t2;
        const n2 = new Float64Array(cap);
        n2.set(nums);
        nums = n2;
        const e2 = new Uint32Array(cap);
        e2.set(ends);
        ends = e2;
      }
      const row = r.value;
      for (let i = 0; i < cur.cols; i++, v++) {
        const x = row[i];
        if (typeof x === 'string') {
          tags[v] = 2;
          text += x;
          ends[s++] = text.length;
        } else if (typeof x === 'bigint') {
          // Exact within ±(2^53 − 1); beyond, Number rounds to a value that is not a safe integer.
          const n = Number(x);
          if (Number.isSafeInteger(n)) {
            tags[v] = 1;
            nums[v] = n;
          } else {
            tags[v] = 3;
            text += x.toString();
            ends[s++] = text.length;
          }
        } else if (typeof x === 'number') {
          tags[v] = 1;
          nums[v] = x;
        } else if (x instanceof Uint8Array) {
          tags[v] = 4;
          blobs.push(x);
        }
      }
    }
    if (cur.done) finish(cur);
    if (!cur.bytes) return { cursor: id, rows, done: cur.done, tags, nums, text, ends, blobs };
    const bytes = encoder.encode(text);
    if (bytes.length !== text.length) {
      // Not all ASCII: the ends move to byte positions (UTF-8 lengths: 1 to 3 bytes a UTF-16 unit, 4 a surrogate pair).
      let c = 0;
      let b = 0;
      const byteEnds = new Uint32Array(s);
      for (let k = 0; k < s; k++) {
        const e = ends[k] as number;
        for (; c < e; c++) {
          const u = text.charCodeAt(c);
          if (u < 0x80) b += 1;
          else if (u < 0x800) b += 2;
          else if (u >= 0xd800 && u <= 0xdbff && c + 1 < e) {
            const lo = text.charCodeAt(c + 1);
            if (lo >= 0xdc00 && lo <= 0xdfff) {
              b += 4;
              c++;
            } else b += 3;
          } else b += 3;
        }
        byteEnds[k] = b;
      }
      // A surrogate pair split over two cells is one 4-byte character in the whole text: encode cell by cell.
      if (b !== bytes.length) {
        const parts: Uint8Array[] = [];
        let from = 0;
        let at = 0;
        for (let k = 0; k < s; k++) {
          const e = ends[k] as number;
          const part = encoder.encode(text.slice(from, e));
          parts.push(part);
          at += part.length;
          from = e;
          ends[k] = at;
        }
        const joined = new Uint8Array(at);
        let p = 0;
        for (const part of parts) {
          joined.set(part, p);
          p += part.length;
        }
        return { cursor: id, rows, done: cur.done, tags, nums, text: '', ends, bytes: joined, blobs };
      }
      ends.set(byteEnds);
    }
    return { cursor: id, rows, done: cur.done, tags, nums, text: '', ends, bytes, blobs };
  };

  // The next batch is read as soon as this one is answered, while the session converts this one.
  const prefetch = (id: number, cur: Cursor): void => {
    if (cur.done) return;
    cur.timer = setImmediate(() => {
      cur.timer = undefined;
      if (!cursors.has(id) || cur.ready || cur.error !== undefined) return;
      try {
        cur.ready = produce(id, cur);
      } catch (err) {
        cur.error = err;
      }
    });
  };

  const answer = (id: number, cur: Cursor, batch: ReadBatch): { reply: ReadBatch; transfer: ArrayBuffer[] } => {
    if (batch.done) cursors.delete(id);
    else prefetch(id, cur);
    const transfer = [
      batch.tags.buffer as ArrayBuffer,
      batch.nums.buffer as ArrayBuffer,
      batch.ends.buffer as ArrayBuffer,
    ];
    if (batch.bytes) transfer.push(batch.bytes.buffer as ArrayBuffer);
    return { reply: batch, transfer };
  };

  return (req) => {
    if (req.op === 'open') {
      const db = new Db(settings.file, { readonly: true, fileMustExist: true, timeout: settings.busyTimeoutMs });
      let it: Iterator<unknown[]>;
      try {
        for (const p of settings.pragmas) db.pragma(p);
        // Blobs arrive as Uint8Array; better-sqlite3 binds Buffers.
        const params = req.params.map((p) =>
          p instanceof Uint8Array ? Buffer.from(p.buffer, p.byteOffset, p.byteLength) : p,
        );
        it = db
          .prepare(req.sql)
          .raw(true)
          .safeIntegers(true)
          .iterate(...params);
      } catch (err) {
        db.close();
        throw err;
      }
      const id = nextCursor++;
      const cur: Cursor = {
        db,
        it,
        batch: Math.max(1, req.batch),
        cols: req.cols,
        bytes: req.bytes === true,
        ready: undefined,
        error: undefined,
        done: false,
        timer: undefined,
      };
      cursors.set(id, cur);
      let first: ReadBatch;
      try {
        first = produce(id, cur);
      } catch (err) {
        if (cursors.has(id)) release(id, cur);
        throw err;
      }
      return answer(id, cur, first);
    }
    const cur = cursors.get(req.cursor);
    if (req.op === 'close') {
      if (cur) release(req.cursor, cur);
      return { reply: { closed: true }, transfer: [] };
    }
    if (!cur) throw new Error('The query was already closed.');
    if (cur.error !== undefined) {
      const err = cur.error;
      release(req.cursor, cur);
      throw err instanceof Error ? err : new Error('The query failed in the reader thread.');
    }
    let batch = cur.ready;
    cur.ready = undefined;
    if (!batch) {
      if (cur.timer !== undefined) clearImmediate(cur.timer);
      cur.timer = undefined;
      try {
        batch = produce(req.cursor, cur);
      } catch (err) {
        if (cursors.has(req.cursor)) release(req.cursor, cur);
        throw err;
      }
    }
    return answer(req.cursor, cur, batch);
  };
}
