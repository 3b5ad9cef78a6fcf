/**
 * The scan thread's handler (thread.ts): reads a file, decodes it, parses it with the connector's
 * parser and types each cell as the query's sink does (records.ts), and hands the records over in
 * packed batches, one batch ahead of the query. On the Agent's thread that work would stop
 * everything else (the Map, the target's encoding) for as long as it runs; in the thread it runs
 * beside them.
 *
 * The handler refers to nothing outside its own body: the thread runs it from its source text,
 * with the parser class and the cell readers it is given (also from their source text).
 *
 *   file ─ read ─ decode ─ CsvParser ─ type ─ pack ══ batch ══▶ Agent's thread: records (records.ts)
 *
 * What the thread cannot settle itself (a non-canonical number, boolean, date, or any type with
 * no fast form) crosses as the cell's text, tagged for the field's converter on the Agent's side,
 * so coercion and its once-per-field warning are the query's own.
 *
 * In packed mode (`settings.packed`, for queryPacked) the thread goes one step further: it packs
 * those batches into packed batches of the query's fields (src/connectors/packed.ts), exactly
 * `batchSize` rows each but the last, with the text as UTF-8 bytes, so the Agent's thread makes
 * no record and no string per row (reader.ts, records.ts `settlePacked`).
 */
import type { CellReaders } from './cells.js';
import type { CsvParser, CsvRow, CsvSink } from './parser.js';

/** How the thread types a column's cells. */
export interface ScanColumn {
  /**
   * `text`: a string field; `integer`, `double`: the plain-number fast path; `boolean`: true/false;
   * `decimal`: a plain decimal is kept as text; `pattern`: text that matches `pattern` is kept as
   * it is (canonical dates, datetimes); `raw`: always the converter.
   */
  kind: 'text' | 'integer' | 'double' | 'boolean' | 'decimal' | 'pattern' | 'raw';
  /** The source of the regular expression of a `pattern` column. */
  pattern?: string;
}

export interface ScanSettings {
  /** An open file descriptor of the file: the query owns it and closes it after the thread. */
  fd: number;
  encoding: 'utf8' | 'latin1' | 'utf16le';
  delimiter: string;
  hasHeader: boolean;
  columns: ScanColumn[];
  /** Bytes read at a time; a batch holds the records of at least one read. */
  chunk: number;
  /** Packed mode: answer {@link ScanPacked} batches of these columns instead of {@link ScanBatch}es. */
  packed?: PackedScan;
}

export interface PackedScan {
  /** The column index of each field of a row, in the query's field order. */
  fields: number[];
  /** Rows per batch: every batch but the last has exactly this many. */
  batchSize: number;
}

/** Tags of a batch's cells (`tags`). */
export const TAG = { null: 0, number: 1, text: 2, raw: 3, true: 4, false: 5 } as const;

export interface ScanBatch {
  rows: number;
  /** No records follow. */
  done: boolean;
  /** Per cell, row by row (columns × rows): a {@link TAG}. */
  tags: Uint8Array;
  /** The values of the `number` cells, in order. */
  nums: Float64Array;
  /**
   * The text of the `text` and `raw` cells: the e-th of them (in order) is
   * `text.slice(starts[e], ends[e])`. It holds the decoded text the batch's lines were cut from,
   * and the fields of its quoted records.
   */
  text: string;
  starts: Uint32Array;
  ends: Uint32Array;
}

/**
 * The tag of a packed cell the thread could not settle (a `raw` cell): its text is in `text` like
 * a CELL_TEXT cell's, and the field's converter decides its value on the Agent's thread. Never
 * leaves the connector: the other tags are packed.ts's CELL_ kinds.
 */
export const CELL_RAW = 7;

/**
 * A packed batch as the thread answers it in packed mode: the arrays of packed.ts's PackedBatch
 * (per cell, row by row over the query's fields, `rows × fields` cells at the front of each array),
 * with {@link CELL_RAW} cells still to settle.
 */
export interface ScanPacked {
  rows: number;
  /** No rows follow. */
  done: boolean;
  tags: Uint8Array;
  nums: Float64Array;
  ends: Uint32Array;
  /** The UTF-8 bytes of the text and raw cells. */
  text: Uint8Array;
  /** How many cells are CELL_RAW. */
  raws: number;
}

export interface ScanIo {
  readSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number;
  StringDecoder: new (encoding: ScanSettings['encoding']) => { write(buf: Uint8Array): string; end(): string };
}

export type ScanReply = { reply: ScanBatch; transfer: ArrayBuffer[] };
export type PackedReply = { reply: ScanPacked; transfer: ArrayBuffer[] };

/** The thread's request handler: each call answers the next batch and starts reading the one after. */
export function csvScanner(
  Parser: typeof CsvParser,
  cells: CellReaders,
  io: ScanIo,
  settings: ScanSettings & { packed: PackedScan },
): () => PackedReply;
export function csvScanner(
  Parser: typeof CsvParser,
  cells: CellReaders,
  io: ScanIo,
  settings: ScanSettings & { packed?: undefined },
): () => ScanReply;
// eslint-disable-next-line max-lines-per-function -- shipped as source text into the thread; it cannot call helpers outside its body
export function csvScanner(
  Parser: typeof CsvParser,
  cells: CellReaders,
  io: ScanIo,
  settings: ScanSettings,
): () => ScanReply | PackedReply {
  const { plainNumber, isPlainDecimal, equalsAt } = cells;
  const KINDS = ['text', 'integer', 'double', 'boolean', 'decimal', 'pattern', 'raw'];
  // 0 text, 1 integer, 2 double, 3 boolean, 4 decimal, 5 pattern, 6 raw.
  const kinds = Uint8Array.from(settings.columns, (c) => KINDS.indexOf(c.kind));
  const patterns = settings.columns.map((c) => (c.pattern ? new RegExp(c.pattern) : null));
  const n = kinds.length;
  const delim = settings.delimiter;
  const fd = settings.fd;
  const readBuf = new Uint8Array(settings.chunk);
  const decoder = new io.StringDecoder(settings.encoding);
  const byteLines = settings.encoding === 'utf8' || settings.encoding === 'latin1';
  /** Bytes at the start of readBuf read but not fed yet: the chunk before's last, partial line. */
  let carry = 0;
  let position = 0;
  let first = true;
  let header = settings.hasHeader;
  let eof = false;

  // The batch being filled. Each record takes n tags; nums, starts and ends grow with the tags
  // (a cell has at most one of each).
  let cap = 0;
  let tags = new Uint8Array(cap);
  let nums = new Float64Array(cap);
  let starts = new Uint32Array(cap);
  let ends = new Uint32Array(cap);
  // The batch's text: the parser's buffers its lines were cut from, with the fields of quoted
  // records (strings the parser builds) appended as they come.
  let text = '';
  let newSegment = true;
  let base = 0;
  let v = 0;
  let k = 0;
  let e = 0;
  let rows = 0;
  let lastCells = 1024;

  const grow = (need: number): void => {
    cap = Math.max(need, cap * 2);
    const t2 = new Uint8Array(cap);
    t2.set(tags.subarray(0, v));
    tags = t2;
    const n2 = new Float64Array(cap);
    n2.set(nums.subarray(0, k));
    nums = n2;
    const s2 = new Uint32Array(cap);
    s2.set(starts.subarray(0, e));
    starts = s2;
    const e2 = new Uint32Array(cap);
    e2.set(ends.subarray(0, e));
    ends = e2;
  };
  // A cell cut from the current segment: no string is made for it here.
  const addSpan = (tag: number, s: number, end: number): void => {
    tags[v++] = tag;
    starts[e] = base + s;
    ends[e++] = base + end;
  };
  // A cell of column i from a line of the current segment, between `s` and `end` (not empty).
  const lineCell = (buf: string, s: number, end: number, i: number): void => {
    switch (kinds[i]) {
      case 0:
        addSpan(2, s, end);
        return;
      case 1:
      case 2: {
        const x = plainNumber(buf, s, end, kinds[i] === 2);
        if (!Number.isNaN(x)) {
          tags[v++] = 1;
          nums[k++] = x;
          return;
        }
        break;
      }
      case 3:
        if (equalsAt(buf, s, end, 'true')) {
          tags[v++] = 4;
          return;
        }
        if (equalsAt(buf, s, end, 'false')) {
          tags[v++] = 5;
          return;
        }
        break;
      case 4:
        if (isPlainDecimal(buf, s, end)) {
          addSpan(2, s, end);
          return;
        }
        break;
      case 5:
        addSpan((patterns[i] as RegExp).test(buf.slice(s, end)) ? 2 : 3, s, end);
        return;
    }
    addSpan(3, s, end);
  };
  // A field of a quoted record: a string the parser made, added to the batch's text
  // and typed there as a line's cell.
  const fieldCell = (f: string, i: number): void => {
    const segment = base;
    base = text.length;
    text += f;
    lineCell(f, 0, f.length, i);
    base = segment;
  };

  // Before the cells of a record cut from `buf`: false for the header; else `buf` is in the
  // batch's text (once a segment) and there is room for a record's tags.
  const cellsOf = (buf: string): boolean => {
    if (header) {
      header = false;
      return false;
    }
    if (newSegment) {
      newSegment = false;
      base = text.length;
      text += buf;
    }
    if (v + n > cap) grow(v + n);
    return true;
  };
  // The cells of a record as the query's sink cuts and types them (records.ts): an empty unquoted
  // field is null; missing fields are null; extra fields are ignored.
  const sink: CsvSink<never> = {
    line(buf, start, end) {
      if (!cellsOf(buf)) return;
      let pos = start;
      for (let i = 0; i < n; i++) {
        if (pos > end) {
          for (; i < n; i++) tags[v++] = 0;
          break;
        }
        let fe = buf.indexOf(delim, pos);
        if (fe < 0 || fe > end) fe = end;
        if (fe === pos) tags[v++] = 0;
        else lineCell(buf, pos, fe, i);
        pos = fe + 1;
      }
      rows++;
    },
    // A record with quotes as spans of `buf` (parser.ts): cut and typed as a line's cells are.
    spans(buf, starts, ends, quoted, count) {
      if (!cellsOf(buf)) return;
      for (let i = 0; i < n; i++) {
        if (i >= count) {
          tags[v++] = 0;
          continue;
        }
        const s = starts[i] as number;
        const end = ends[i] as number;
        // Empty: null, but a quoted empty text is the empty string.
        if (s === end) {
          if (quoted[i] === 1 && kinds[i] === 0) addSpan(2, s, s);
          else tags[v++] = 0;
        } else lineCell(buf, s, end, i);
      }
      rows++;
    },
    row(fields: CsvRow) {
      if (header) {
        header = false;
        return;
      }
      if (v + n > cap) grow(v + n);
      for (let i = 0; i < n; i++) {
        const f = fields[i];
        // Empty: null, but a quoted empty text is the empty string.
        if (f === null || f === undefined || (f === '' && kinds[i] !== 0)) tags[v++] = 0;
        else fieldCell(f, i);
      }
      rows++;
    },
  };
  const parser = new Parser<never>(delim, '"', sink);
  const none: never[] = [];

  const feed = (chunk: string): void => {
    let s = chunk;
    if (first && s.length) {
      first = false;
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
    }
    newSegment = true;
    parser.push(s, none);
  };

  // Reads until the batch has a record or the file ends.
  const produce = (): ScanBatch => {
    v = k = e = rows = 0;
    text = '';
    cap = Math.max(n, lastCells + (lastCells >> 2));
    tags = new Uint8Array(cap);
    nums = new Float64Array(cap);
    starts = new Uint32Array(cap);
    ends = new Uint32Array(cap);
    newSegment = true;
    while (rows === 0 && !eof) {
      const got = io.readSync(fd, readBuf, carry, readBuf.length - carry, position);
      if (got === 0) {
        eof = true;
        feed(decoder.write(readBuf.subarray(0, carry)) + decoder.end());
        carry = 0;
        newSegment = true;
        parser.end(none);
      } else {
        position += got;
        const len = carry + got;
        // In UTF-8 and Latin-1 a newline byte is always a newline: the text fed ends at the chunk's
        // last one and the bytes after it start the next chunk, so the parser keeps no partial
        // line to join to the next text.
        const nl = byteLines ? readBuf.lastIndexOf(10, len - 1) : -1;
        if (nl >= 0) {
          feed(decoder.write(readBuf.subarray(0, nl + 1)));
          readBuf.copyWithin(0, nl + 1, len);
          carry = len - nl - 1;
        } else {
          feed(decoder.write(readBuf.subarray(0, len)));
          carry = 0;
        }
      }
    }
    if (v) lastCells = v;
    return { rows, done: eof, tags, nums, text, starts, ends };
  };

  // Packed mode: the ScanBatches of produce() cut into batches of `per` rows of the query's
  // fields. A ScanBatch's rows may go to two packed batches: `cur` is the one being packed, with
  // the cursor of its next row (cRow) and of that row's first tag, number and text cell.
  const out = settings.packed;
  const fields = Uint32Array.from(out ? out.fields : []);
  const m = fields.length;
  const per = out ? out.batchSize : 0;
  // One row's cells by column: tag, number, start and end in the ScanBatch's text.
  const rowTag = new Uint8Array(n);
  const rowNum = new Float64Array(n);
  const rowS = new Uint32Array(n);
  const rowE = new Uint32Array(n);
  // ScanBatch tag → packed.ts CELL_ kind: null 0, number 1, text 2, raw 7 (CELL_RAW), true 3, false 4.
  const CELL = Uint8Array.of(0, 1, 2, 7, 3, 4);
  let cur: ScanBatch | undefined;
  let cRow = 0;
  let cv = 0;
  let ck = 0;
  let ce = 0;
  // The ScanBatch's text as bytes when it is pure ASCII (one byte a character), else undefined.
  let ascii: Buffer | undefined;
  let textCap = 1 << 16;

  const producePacked = (): ScanPacked => {
    const cellCount = per * m;
    const tagsOut = new Uint8Array(cellCount);
    const numsOut = new Float64Array(cellCount);
    const endsOut = new Uint32Array(cellCount);
    // Its own ArrayBuffer, so that it can be transferred.
    let buf = Buffer.allocUnsafeSlow(textCap);
    let pos = 0;
    let w = 0;
    let got = 0;
    let raws = 0;
    while (got < per) {
      if (cur === undefined || cRow >= cur.rows) {
        if (cur !== undefined && cur.done) break;
        cur = produce();
        cRow = cv = ck = ce = 0;
        ascii = Buffer.byteLength(cur.text) === cur.text.length ? Buffer.from(cur.text, 'latin1') : undefined;
        continue;
      }
      const { tags: ct, nums: cn, starts: cs, ends: cEnds, text } = cur;
      const last = Math.min(cur.rows, cRow + (per - got));
      for (; cRow < last; cRow++, got++) {
        for (let i = 0; i < n; i++) {
          const t = ct[cv++] as number;
          rowTag[i] = t;
          if (t === 1) rowNum[i] = cn[ck++] as number;
          else if (t === 2 || t === 3) {
            rowS[i] = cs[ce] as number;
            rowE[i] = cEnds[ce++] as number;
          }
        }
        for (let j = 0; j < m; j++, w++) {
          const i = fields[j] as number;
          const t = rowTag[i] as number;
          if (t === 0) continue;
          tagsOut[w] = CELL[t] as number;
          if (t === 1) numsOut[w] = rowNum[i] as number;
          else if (t === 2 || t === 3) {
            if (t === 3) raws++;
            const s = rowS[i] as number;
            const e = rowE[i] as number;
            const need = pos + (ascii ? e - s : (e - s) * 3);
            if (need > buf.length) {
              const grown = Buffer.allocUnsafeSlow(Math.max(need, buf.length * 2));
              buf.copy(grown, 0, 0, pos);
              buf = grown;
            }
            numsOut[w] = pos;
            if (ascii === undefined) pos += buf.write(text.slice(s, e), pos, 'utf8');
            else if (e - s <= 32) for (let x = s; x < e; x++) buf[pos++] = ascii[x] as number;
            else pos += ascii.copy(buf, pos, s, e);
            endsOut[w] = pos;
          }
        }
      }
    }
    textCap = Math.max(textCap, pos + (pos >> 3));
    const done = cur !== undefined && cur.done && cRow >= cur.rows;
    return { rows: got, done, tags: tagsOut, nums: numsOut, ends: endsOut, text: buf.subarray(0, pos), raws };
  };

  let ready: ScanBatch | ScanPacked | undefined;
  let failure: Error | undefined;
  let timer: ReturnType<typeof setImmediate> | undefined;
  const make = out ? producePacked : produce;
  // The next batch is read as soon as this one is answered, while the query works on this one.
  const prefetch = (): void => {
    timer = setImmediate(() => {
      timer = undefined;
      if (ready || failure !== undefined) return;
      try {
        ready = make();
      } catch (err) {
        failure = err instanceof Error ? err : new Error(String(err));
      }
    });
  };
  prefetch();

  return () => {
    if (failure !== undefined) throw failure;
    let batch = ready;
    ready = undefined;
    if (!batch) {
      if (timer !== undefined) clearImmediate(timer);
      timer = undefined;
      batch = make();
    }
    if (!batch.done) prefetch();
    if ('raws' in batch)
      return {
        reply: batch,
        transfer: [
          batch.tags.buffer as ArrayBuffer,
          batch.nums.buffer as ArrayBuffer,
          batch.ends.buffer as ArrayBuffer,
          batch.text.buffer as ArrayBuffer,
        ],
      };
    return {
      reply: batch,
      transfer: [
        batch.tags.buffer as ArrayBuffer,
        batch.nums.buffer as ArrayBuffer,
        batch.starts.buffer as ArrayBuffer,
        batch.ends.buffer as ArrayBuffer,
      ],
    };
  };
}
