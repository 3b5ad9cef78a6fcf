import type { WatchedTable, WriteWatch } from '../store/write-watch.js';

/**
 * The writes that change what a message POST's admission reads (message-access.ts): the
 * Organization's token, its Security Rules, the endpoints, and their Solutions' state.
 */
export const ADMISSION_TABLES: readonly WatchedTable[] = [
  { table: 'orgs', columns: ['eventSolutionAccessToken', 'id'] },
  { table: 'securityRules' },
  { table: 'solutions', columns: ['isDisabled', 'agentId', 'name', 'orgId', 'id'] },
  { table: 'messageEndpoints', columns: ['orgId', 'solutionId', 'urlMapId', 'mapId', 'kind', 'id'] },
];

export interface AccessCacheOptions {
  /** How long an entry is used at most (default 1,000 ms): the bound on staleness nothing announced. */
  readonly ttlMs?: number;
  /** The most entries held (default 10,000); a full cache starts over. */
  readonly maxEntries?: number;
  readonly now?: () => number;
}

interface Entry {
  readonly value: unknown;
  readonly at: number;
}

/**
 * What a message POST's admission reads (the Organization and its token, its Security Rules with
 * eventSolutionAccessEnabled, the endpoint and its Solution), kept for a second: a sender at
 * thousands of POSTs a second costs three reads a second, not three a POST (docs/events.md,
 * "Throughput"). Every entry is dropped at once when this process writes one of the
 * {@link ADMISSION_TABLES} (the {@link WriteWatch} of the store), when another replica commits such a
 * write (its NOTIFY, migration 037), and when the listening connection that hears those was lost.
 * A read that was under way when an entry was dropped does not put its answer in the cache.
 */
export class AccessCache {
  readonly #entries = new Map<string, Entry>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  /** Counts the drops: a read begun before one is not kept. */
  #generation = 0;

  constructor(opts: AccessCacheOptions = {}) {
    this.#ttlMs = opts.ttlMs ?? 1000;
    this.#maxEntries = opts.maxEntries ?? 10_000;
    this.#now = opts.now ?? Date.now;
  }

  /** Drops every entry whenever `writes` sees a write to one of the admission tables. */
  follow(writes: WriteWatch): () => void {
    return writes.watch(ADMISSION_TABLES, () => this.clear());
  }

  /** The value of `key`, from the cache while it is fresh, else from `load` (kept when nothing changed meanwhile). */
  async get<T>(key: string, load: () => Promise<T>): Promise<T> {
    const now = this.#now();
    const hit = this.#entries.get(key);
    if (hit && now - hit.at < this.#ttlMs) return hit.value as T;
    const generation = this.#generation;
    const value = await load();
    if (generation === this.#generation) {
      if (this.#entries.size >= this.#maxEntries) this.#entries.clear();
      this.#entries.set(key, { value, at: now });
    }
    return value;
  }

  /** Drops every entry, and the answers of the reads under way. */
  clear(): void {
    this.#generation += 1;
    this.#entries.clear();
  }
}
