import { createHash } from 'node:crypto';
import type { ConnectionMetadata } from './sdk.js';

interface Entry {
  fingerprint: string;
  loadedAt: Date | undefined;
  value: Promise<ConnectionMetadata>;
}

/**
 * Metadata per Connection, loaded once and kept until reloaded. An entry is keyed by connectionId
 * and stamped with a fingerprint of the connector version and the connection properties, so a
 * Connection whose properties changed loads afresh. Concurrent loads of one Connection share one
 * call; a failed load is not kept.
 */
export class MetadataCache {
  private readonly entries = new Map<string, Entry>();

  /** The cached metadata, or the result of `load` (stored for next time). */
  async get(
    connectionId: string,
    fingerprint: string,
    load: () => Promise<ConnectionMetadata>,
  ): Promise<ConnectionMetadata> {
    const hit = this.entries.get(connectionId);
    if (hit && hit.fingerprint === fingerprint) return hit.value;
    const entry: Entry = { fingerprint, loadedAt: undefined, value: load() };
    this.entries.set(connectionId, entry);
    try {
      const value = await entry.value;
      entry.loadedAt = new Date();
      return value;
    } catch (err) {
      if (this.entries.get(connectionId) === entry) this.entries.delete(connectionId);
      throw err;
    }
  }

  /** When the cached metadata of a Connection was loaded; undefined when none is cached. */
  loadedAt(connectionId: string): Date | undefined {
    return this.entries.get(connectionId)?.loadedAt;
  }

  /** Forgets a Connection's metadata: the next `get` loads it again. */
  invalidate(connectionId: string): void {
    this.entries.delete(connectionId);
  }

  clear(): void {
    this.entries.clear();
  }
}

/** A stable fingerprint of a connector version and connection properties (never stored in clear). */
export function metadataFingerprint(
  connectorId: string,
  version: string,
  properties: Readonly<Record<string, string>>,
): string {
  const h = createHash('sha256');
  h.update(`${connectorId}\0${version}\0`);
  for (const k of Object.keys(properties).sort()) h.update(`${k}\0${properties[k] ?? ''}\0`);
  return h.digest('hex');
}
