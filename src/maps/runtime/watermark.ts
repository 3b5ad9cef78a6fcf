/**
 * The net-change watermark ("most recent record processed"). The Query reads records whose
 * net-change field is at or after it, ascending. After each batch the watermark moves to the
 * newest value among the batch's records whose writes all succeeded and is checkpointed, so a run
 * that crashes resumes from its last finished batch. Records that failed are not re-read: they
 * are in the record errors and the failed-record store, from which they are reprocessed.
 */
import fs from 'node:fs/promises';
import type { Value } from '../../connectors/sdk.js';

/** Where a run checkpoints its watermark (the Service via the outbox, or a local file). */
export interface WatermarkStore {
  load(): Promise<string | null>;
  save(value: string): Promise<void>;
}

/** Orders two net-change values (ISO-8601 text of one field compares by instant). */
export function later(a: string | null, b: Value | undefined): string | null {
  if (b === null || b === undefined) return a;
  const v = String(b);
  if (a === null) return v;
  const ta = Date.parse(a);
  const tb = Date.parse(v);
  if (!Number.isNaN(ta) && !Number.isNaN(tb)) return tb > ta ? v : a;
  return v > a ? v : a;
}

/** A watermark in memory (tests, and runs the caller checkpoints itself through onCheckpoint). */
export class MemoryWatermark implements WatermarkStore {
  constructor(private value: string | null = null) {}
  load(): Promise<string | null> {
    return Promise.resolve(this.value);
  }
  save(value: string): Promise<void> {
    this.value = value;
    return Promise.resolve();
  }
}

/** A watermark in a JSON file, written atomically (rename) at each checkpoint. */
export class FileWatermark implements WatermarkStore {
  constructor(private readonly file: string) {}
  async load(): Promise<string | null> {
    try {
      const j = JSON.parse(await fs.readFile(this.file, 'utf8')) as { lastRunDate?: string | null };
      return j.lastRunDate ?? null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }
  async save(value: string): Promise<void> {
    const tmp = `${this.file}.${process.pid}.tmp`;
    await fs.writeFile(tmp, JSON.stringify({ lastRunDate: value }) + '\n');
    await fs.rename(tmp, this.file);
  }
}
