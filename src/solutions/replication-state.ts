/**
 * Where a Replication Solution keeps each entity's checkpoint (its net-change watermark) between
 * runs and across crashes: a folder of small JSON files on the Agent (one per entity and net-change
 * field, each replaced atomically by FileWatermark), or memory for tests.
 *
 * The file is named after the entity and the field: when the field the rule picks changes (the
 * source gained a better-named stamp), the old watermark, which measured another field, is not
 * read, and the entity is copied in full once more.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { FileWatermark, MemoryWatermark, type WatermarkState, type WatermarkStore } from '../maps/runtime/watermark.js';

/** One entity's checkpoint. */
export interface EntityCheckpoint extends WatermarkStore {
  /** Forgets it: the next run copies the entity in full (its target was created anew). */
  clear(): Promise<void>;
}

/** The checkpoints of one Replication Solution. */
export interface ReplicationStateStore {
  /** The checkpoint of `entity` (source fullName) read on `field`. */
  entity(entity: string, field: string): EntityCheckpoint;
}

/**
 * A file name for (entity, field) that is safe on every file system: fullNames are letters, digits
 * and underscores, but Windows and macOS fold case, so a hash of the exact names tells `Orders`
 * from `orders`.
 */
function fileName(entity: string, field: string): string {
  const hash = createHash('sha256').update(`${entity}\u0000${field}`).digest('hex').slice(0, 12);
  const readable = `${entity}.${field}`.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 150);
  return `${readable}.${hash}.json`;
}

/** Checkpoints as JSON files in `dir` (created on the first save). */
export class FileReplicationState implements ReplicationStateStore {
  private made: Promise<unknown> | undefined;

  constructor(private readonly dir: string) {}

  entity(entity: string, field: string): EntityCheckpoint {
    const file = path.join(this.dir, fileName(entity, field));
    const inner = new FileWatermark(file);
    return {
      load: () => inner.load(),
      save: async (state: WatermarkState) => {
        this.made ??= fs.mkdir(this.dir, { recursive: true });
        await this.made;
        await inner.save(state);
      },
      clear: () => fs.rm(file, { force: true }),
    };
  }
}

/** Checkpoints in memory (tests; a run that needs none kept). */
export class MemoryReplicationState implements ReplicationStateStore {
  private readonly stores = new Map<string, MemoryWatermark>();

  entity(entity: string, field: string): EntityCheckpoint {
    const key = `${entity}\u0000${field}`;
    const get = (): MemoryWatermark => {
      let s = this.stores.get(key);
      if (!s) this.stores.set(key, (s = new MemoryWatermark()));
      return s;
    };
    return {
      load: () => get().load(),
      save: (state) => get().save(state),
      clear: () => {
        this.stores.delete(key);
        return Promise.resolve();
      },
    };
  }
}
