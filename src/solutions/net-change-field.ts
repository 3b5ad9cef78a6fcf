/**
 * Which field of a source entity a replication reads net change on: the rule is deterministic so
 * that every run of every Agent picks the same field from the same metadata (docs/solutions.md
 * "Replication").
 *
 *   1. only `datetime` fields (a `date` is too coarse: a whole day's records would sit at the
 *      watermark and be read again on every run);
 *   2. the name, lower-cased with everything but letters and digits removed, must be one of
 *      {prefix}{stem}{suffix}: prefix '' | 'last' | 'date' | 'datelast' | 'system' | 'sys';
 *      stem 'modified' | 'modification' | 'modify' | 'mod' | 'updated' | 'update' | 'changed' |
 *      'change'; suffix '' | 'at' | 'on' | 'date' | 'time' | 'datetime' | 'timestamp' | 'stamp' |
 *      'ts' | 'utc' | 'dateutc' | 'timeutc' — so modified, ModifiedOn, modified_date, LastModified,
 *      lastmodifieddate, updated, updated_at, UpdatedOn, last_update, date_modified, changed_at,
 *      SystemModstamp all qualify, and created_at, modified_by or updates_count do not;
 *   3. of several, a 'modif…'/'mod…' stem before 'updat…' before 'chang…', then the first in the
 *      entity's field order.
 *
 * No field qualifies: the entity has no net change, and every run copies all its records.
 */
import type { EntityMetadata } from '../connectors/sdk.js';

const PREFIXES = ['', 'last', 'date', 'datelast', 'system', 'sys'];
/** In order of preference (by the index of their group). */
const STEMS: readonly (readonly string[])[] = [
  ['modified', 'modification', 'modify', 'mod'],
  ['updated', 'update'],
  ['changed', 'change'],
];
const SUFFIXES = ['', 'at', 'on', 'date', 'time', 'datetime', 'timestamp', 'stamp', 'ts', 'utc', 'dateutc', 'timeutc'];

/** Normalised name → rank of its stem group; built once. */
const NAMES: ReadonlyMap<string, number> = (() => {
  const m = new Map<string, number>();
  STEMS.forEach((group, rank) => {
    for (const stem of group)
      for (const p of PREFIXES) for (const s of SUFFIXES) if (!m.has(p + stem + s)) m.set(p + stem + s, rank);
  });
  // 'mod' alone, or 'mod' + a date word without 'stamp', reads as "mode"/"module" too often.
  for (const p of PREFIXES) for (const s of SUFFIXES) if (s !== 'stamp' && s !== 'timestamp') m.delete(p + 'mod' + s);
  return m;
})();

/** The rank of a field name as a modification stamp (lower is preferred), or undefined when it is not one. */
export function modificationStampRank(name: string): number | undefined {
  return NAMES.get(name.toLowerCase().replace(/[^a-z0-9]/g, ''));
}

/** The entity's net-change field (a fullName), or undefined when none qualifies. */
export function netChangeField(entity: Pick<EntityMetadata, 'fields'>): string | undefined {
  let best: { name: string; rank: number } | undefined;
  for (const f of entity.fields) {
    if (f.propertyType !== 'datetime') continue;
    const rank = modificationStampRank(f.fullName);
    if (rank !== undefined && (!best || rank < best.rank)) best = { name: f.fullName, rank };
  }
  return best?.name;
}
