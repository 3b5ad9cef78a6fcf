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
import type { CopiedPart, CopyKey, FirstCopyStore, InitialCopyState } from '../maps/runtime/first-copy.js';
import { FileWatermark, MemoryWatermark, type WatermarkState, type WatermarkStore } from '../maps/runtime/watermark.js';

/** One entity's checkpoint. */
export interface EntityCheckpoint extends WatermarkStore, FirstCopyStore {
  /** Forgets it, and any first copy under way: the next run copies the entity in full (its target was created anew). */
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
    const initialFile = file.replace(/\.json$/, '.initial.json');
    const inner = new FileWatermark(file);
    const mkdir = async (): Promise<void> => {
      this.made ??= fs.mkdir(this.dir, { recursive: true });
      await this.made;
    };
    return {
      load: () => inner.load(),
      save: async (state: WatermarkState) => {
        await mkdir();
        await inner.save(state);
      },
      clear: async () => {
        await fs.rm(initialFile, { force: true });
        await fs.rm(file, { force: true });
      },
      loadInitial: async () => {
        try {
          return parseInitial(JSON.parse(await fs.readFile(initialFile, 'utf8')));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT' || err instanceof SyntaxError) return null;
          throw err;
        }
      },
      saveInitial: async (state: InitialCopyState) => {
        await mkdir();
        const tmp = `${initialFile}.${process.pid}.tmp`;
        await fs.writeFile(tmp, JSON.stringify(state) + '\n');
        await fs.rename(tmp, initialFile);
      },
      clearInitial: () => fs.rm(initialFile, { force: true }),
    };
  }
}

/** Checkpoints in memory (tests; a run that needs none kept). */
export class MemoryReplicationState implements ReplicationStateStore {
  private readonly stores = new Map<string, MemoryWatermark>();
  private readonly initial = new Map<string, InitialCopyState>();

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
        this.initial.delete(key);
        return Promise.resolve();
      },
      loadInitial: () => Promise.resolve(this.initial.get(key) ?? null),
      saveInitial: (state) => {
        this.initial.set(key, {
          parts: state.parts.map((p) => ({ ...p })),
          mark: state.mark,
          atMark: [...state.atMark],
        });
        return Promise.resolve();
      },
      clearInitial: () => {
        this.initial.delete(key);
        return Promise.resolve();
      },
    };
  }
}

/**
 * A first copy's progress as read from its file; null when it is not one (the copy then starts
 * over). A file from before parts were kept (`afterKey` and the first part's `mark`) is one part:
 * that first part's newest stamp bounds every later change of the records up to `afterKey`, also
 * those a resumed part read after it.
 */
function parseInitial(j: unknown): InitialCopyState | null {
  if (typeof j !== 'object' || j === null) return null;
  const { parts, afterKey, mark, atMark } = j as {
    parts?: unknown;
    afterKey?: unknown;
    mark?: unknown;
    atMark?: unknown;
  };
  if (!(mark === null || typeof mark === 'string')) return null;
  const ids = Array.isArray(atMark) ? atMark.filter((x): x is string => typeof x === 'string') : [];
  if (parts === undefined)
    return isKey(afterKey) ? { parts: [{ upTo: afterKey, since: mark }], mark, atMark: ids } : null;
  if (!Array.isArray(parts)) return null;
  const read: CopiedPart[] = [];
  for (const p of parts as unknown[]) {
    const { upTo, since } = (p ?? {}) as { upTo?: unknown; since?: unknown };
    if (!isKey(upTo) || !(since === null || typeof since === 'string')) return null;
    read.push({ upTo, since });
  }
  return { parts: read, mark, atMark: ids };
}

function isKey(k: unknown): k is CopyKey {
  return typeof k === 'string' || (typeof k === 'number' && Number.isFinite(k));
}
