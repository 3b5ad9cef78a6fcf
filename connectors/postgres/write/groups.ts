import { coerceValue, failed, INVALID, type ConnectorRecord, type WriteResult } from '../../../src/connectors/sdk.js';
import type { PgColumn, PgTable } from '../catalogue.js';

/** Records of a batch that have one field set: the table's columns for it, and their positions in the batch. */
export interface Group {
  cols: PgColumn[];
  indices: number[];
}

/**
 * Checks each record and groups the valid ones by their field set (in column order), keeping input
 * order inside a group. Invalid records get their result here.
 */
export function groupRecords(
  table: PgTable,
  byName: Map<string, PgColumn>,
  keys: PgColumn[],
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
): Group[] {
  const groups = new Map<string, Group>();
  let prevKeys: string[] | undefined;
  let prevGroup: Group | undefined;
  for (let r = 0; r < batch.length; r++) {
    const rec = batch[r] as ConnectorRecord;
    if (prevKeys && prevGroup && sameKeys(prevKeys, rec)) {
      if (keys.length && !hasKeys(rec, keys, results, r)) continue;
      prevGroup.indices.push(r);
      continue;
    }
    const names = Object.keys(rec);
    const cols: PgColumn[] = [];
    let bad: WriteResult | undefined;
    for (const n of names) {
      const c = byName.get(n);
      if (!c) bad = failed('UnknownField', `The entity ${table.fullName} has no field ${n}.`, { field: n });
      else if (c.readOnly)
        bad = failed('InvalidValue', `The field ${n} is generated and cannot be written.`, { field: n });
      if (bad) break;
      cols.push(c as PgColumn);
    }
    if (bad) {
      results[r] = bad;
      continue;
    }
    if (keys.length && !hasKeys(rec, keys, results, r)) continue;
    // Grouped by field set; the group's columns keep its first record's order (its COPY reads
    // records in that order).
    const sig = [...cols]
      .sort((a, b) => a.attnum - b.attnum)
      .map((c) => c.name)
      .join('\u0000');
    let g = groups.get(sig);
    if (!g) {
      g = { cols, indices: [] };
      groups.set(sig, g);
    }
    g.indices.push(r);
    prevKeys = names;
    prevGroup = g;
  }
  return [...groups.values()];
}

/** The record has exactly these fields in this order (checked without allocating). */
function sameKeys(names: string[], rec: ConnectorRecord): boolean {
  let n = 0;
  for (const k in rec) if (names[n++] !== k) return false;
  return n === names.length;
}

function hasKeys(rec: ConnectorRecord, keys: PgColumn[], results: WriteResult[], r: number): boolean {
  for (const k of keys) {
    const v = rec[k.fullName];
    if (v === null || v === undefined) {
      results[r] = failed('MissingKey', `The record has no value for the key field ${k.fullName}.`, {
        field: k.fullName,
      });
      return false;
    }
  }
  return true;
}

/** The group's records in `n` lanes by a hash of their key values; one key, one lane, in order. */
export function splitByKey(g: Group, keys: PgColumn[], batch: readonly ConnectorRecord[], n: number): number[][] {
  const lanes: number[][] = Array.from({ length: n }, () => []);
  for (const i of g.indices) {
    const rec = batch[i] as ConnectorRecord;
    let h = 0x811c9dc5;
    for (const k of keys) {
      // FNV-1a of the value's canonical text: values the server takes for one key (7 and '07',
      // datetimes in two zones) land in one lane.
      const raw = rec[k.fullName];
      const c = coerceValue(k.type, raw);
      const t = String(c === INVALID ? raw : c);
      for (let j = 0; j < t.length; j++) h = Math.imul(h ^ t.charCodeAt(j), 0x01000193);
      h = Math.imul(h ^ 0x1f, 0x01000193);
    }
    (lanes[(h >>> 0) % n] as number[]).push(i);
  }
  return lanes.filter((l) => l.length > 0);
}

/** Splits a group into consecutive runs in which no key repeats, so each statement sees a key once. */
export function uniqueKeySegments(g: Group, keys: PgColumn[], batch: readonly ConnectorRecord[]): number[][] {
  const out: number[][] = [];
  let seen = new Set<unknown>();
  let cur: number[] = [];
  const single = keys.length === 1 ? (keys[0] as PgColumn).fullName : undefined;
  for (const i of g.indices) {
    const rec = batch[i] as ConnectorRecord;
    // One key field: its value itself (a Set tells 1 from '1' as the tagged text below does).
    const key =
      single !== undefined
        ? rec[single]
        : keys.map((k) => `${typeof rec[k.fullName]}:${String(rec[k.fullName])}`).join('\u0001');
    if (seen.has(key)) {
      out.push(cur);
      cur = [];
      seen = new Set();
    }
    seen.add(key);
    cur.push(i);
  }
  if (cur.length) out.push(cur);
  return out;
}
