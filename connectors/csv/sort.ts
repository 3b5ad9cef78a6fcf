import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { processAlive, type ConnectorRecord } from '../../src/connectors/sdk.js';

/** Records sorted in memory before a run is spilled to disk. */
export const RUN_SIZE = 50_000;

type Compare = (a: ConnectorRecord, b: ConnectorRecord) => number;

/**
 * Sorts a stream of records in bounded memory (an external merge sort): runs of {@link RUN_SIZE}
 * records are sorted and, when there is more than one, written to temporary NDJSON files and
 * merged with a heap. Stable: equal records keep their input order. Yields batches of `batchSize`.
 */
export async function* sortRecords(
  source: AsyncIterable<ConnectorRecord[]>,
  compare: Compare,
  batchSize: number,
  runSize = RUN_SIZE,
): AsyncGenerator<ConnectorRecord[], void, undefined> {
  let run: ConnectorRecord[] = [];
  const runFiles: string[] = [];
  let dir: string | undefined;
  let readers: RunReader[] = [];
  try {
    for await (const chunk of source) {
      for (const r of chunk) {
        run.push(r);
        if (run.length >= runSize) {
          dir ??= await spillDir();
          runFiles.push(await spill(run.sort(compare), path.join(dir, `run-${runFiles.length}.ndjson`)));
          run = [];
        }
      }
    }
    run.sort(compare);
    if (runFiles.length === 0) {
      for (let i = 0; i < run.length; i += batchSize) yield run.slice(i, i + batchSize);
      return;
    }
    readers = runFiles.map((f) => new RunReader(f));
    const memory = new MemoryRun(run);
    const sources: Head[] = [...readers, memory];
    const heap = new Heap<{ rec: ConnectorRecord; order: number }>(
      (a, b) => compare(a.rec, b.rec) || a.order - b.order,
    );
    for (let i = 0; i < sources.length; i++) {
      const rec = await (sources[i] as Head).next();
      if (rec) heap.push({ rec, order: i });
    }
    let batch: ConnectorRecord[] = [];
    while (heap.size > 0) {
      const top = heap.pop() as { rec: ConnectorRecord; order: number };
      batch.push(top.rec);
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
      const next = await (sources[top.order] as Head).next();
      if (next) heap.push({ rec: next, order: top.order });
    }
    if (batch.length) yield batch;
  } finally {
    for (const r of readers) r.close();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  }
}

/** Spill folders are named after the process: `ferry-csv-sort-<pid>-<random>`. */
const SPILL_DIR = /^ferry-csv-sort-(\d+)-/;

/**
 * A new folder for a sort's spill files. The folders of processes that no longer run (an Agent
 * killed in the middle of a sort cannot remove its own) are removed first, so they do not pile up
 * in the temporary directory.
 */
async function spillDir(): Promise<string> {
  const tmp = os.tmpdir();
  const names = await fsp.readdir(tmp).catch(() => [] as string[]);
  for (const name of names) {
    const pid = Number(SPILL_DIR.exec(name)?.[1] ?? NaN);
    if (!Number.isInteger(pid) || pid === process.pid || processAlive(pid)) continue;
    await fsp.rm(path.join(tmp, name), { recursive: true, force: true }).catch(() => undefined);
  }
  return fsp.mkdtemp(path.join(tmp, `ferry-csv-sort-${process.pid}-`));
}

async function spill(records: ConnectorRecord[], file: string): Promise<string> {
  const ws = fs.createWriteStream(file);
  let buf = '';
  for (const r of records) {
    buf += `${JSON.stringify(r)}\n`;
    if (buf.length > 1 << 20) {
      if (!ws.write(buf)) await once(ws, 'drain');
      buf = '';
    }
  }
  ws.end(buf);
  await once(ws, 'finish');
  return file;
}

interface Head {
  next(): Promise<ConnectorRecord | undefined>;
}

class MemoryRun implements Head {
  private i = 0;
  constructor(private readonly records: ConnectorRecord[]) {}
  async next(): Promise<ConnectorRecord | undefined> {
    return this.records[this.i++];
  }
}

/** Reads one spilled run line by line, a chunk at a time. */
class RunReader implements Head {
  private readonly it: AsyncIterator<string>;
  private rest = '';
  private lines: string[] = [];
  private i = 0;
  private readonly stream: fs.ReadStream;
  constructor(file: string) {
    this.stream = fs.createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 16 });
    this.it = (this.stream as AsyncIterable<string>)[Symbol.asyncIterator]();
  }
  async next(): Promise<ConnectorRecord | undefined> {
    while (this.i >= this.lines.length) {
      const r = await this.it.next();
      if (r.done) {
        if (!this.rest) return undefined;
        this.lines = [this.rest];
        this.rest = '';
      } else {
        const parts = (this.rest + r.value).split('\n');
        this.rest = parts.pop() ?? '';
        this.lines = parts;
      }
      this.i = 0;
    }
    return JSON.parse(this.lines[this.i++] as string) as ConnectorRecord;
  }
  close(): void {
    this.stream.destroy();
  }
}

class Heap<T> {
  private readonly a: T[] = [];
  constructor(private readonly less: (x: T, y: T) => number) {}
  get size(): number {
    return this.a.length;
  }
  push(v: T): void {
    const a = this.a;
    a.push(v);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.less(a[i] as T, a[p] as T) >= 0) break;
      [a[i], a[p]] = [a[p] as T, a[i] as T];
      i = p;
    }
  }
  pop(): T | undefined {
    const a = this.a;
    if (a.length === 0) return undefined;
    const top = a[0];
    const last = a.pop() as T;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.less(a[l] as T, a[m] as T) < 0) m = l;
        if (r < a.length && this.less(a[r] as T, a[m] as T) < 0) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m] as T, a[i] as T];
        i = m;
      }
    }
    return top;
  }
}
