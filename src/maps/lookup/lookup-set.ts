/**
 * Lookup Tables in memory, as a Map run uses them: the formula functions LOOKUPTABLEVALUE1,
 * LOOKUPTABLEVALUE2 and their _DEFAULT variants.
 *
 * A run loads the tables its Map uses once (the Service's `loadLookupTables`) and answers every
 * record from here. Each table keeps two plain `Map<string, string>`s, one per direction, holding
 * only the answer for each key: when a key has duplicates, the first of the other values in
 * code-point order, which is the order SQLite (BINARY) and PostgreSQL (`COLLATE "C"`) sort in, so
 * a lookup answers the same in a run as through the REST API.
 *
 * No Node imports: the Map engine may run this inside its sandbox.
 */
import { FerryError } from '../../errors/ferry-error.js';

/** One pair of a Lookup Table. */
export interface LookupPair {
  readonly value1: string;
  readonly value2: string;
}

/**
 * Orders two strings by Unicode code point, as UTF-8 byte comparison does (SQLite's BINARY
 * collation, PostgreSQL's "C"). JavaScript's `<` compares UTF-16 code units instead, which puts
 * characters above U+FFFF (surrogate pairs) before U+E000–U+FFFF; this corrects exactly that case.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // A surrogate (U+D800–U+DFFF) stands for a code point above U+FFFF: it ranks above U+E000–U+FFFF.
    if (x >= 0xd800 && y >= 0xd800) return rank(x) - rank(y);
    return x - y;
  }
  return a.length - b.length;
}

/** Moves surrogates above every other code unit while keeping their own order. */
const rank = (unit: number): number => (unit >= 0xd800 && unit <= 0xdfff ? unit + 0x10000 : unit);

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a table reference has the shape of a GUID (and is therefore tried as an ID first). */
export const isGuid = (text: string): boolean => GUID.test(text);

/** The case-insensitive key of a Lookup Table name: names are unique per Organization ignoring case. */
export const nameKeyOf = (name: string): string => name.trim().toLowerCase();

/** One Lookup Table reduced to its two answers per key. */
export class LookupTableIndex {
  readonly #byValue1 = new Map<string, string>();
  readonly #byValue2 = new Map<string, string>();
  #pairs = 0;

  constructor(
    readonly id: string,
    readonly name: string,
  ) {}

  /** Adds a pair, in any order: the first-in-code-point-order rule is applied as pairs arrive. */
  add(value1: string, value2: string): void {
    this.#pairs += 1;
    const v2 = this.#byValue1.get(value1);
    if (v2 === undefined || compareCodePoints(value2, v2) < 0) this.#byValue1.set(value1, value2);
    const v1 = this.#byValue2.get(value2);
    if (v1 === undefined || compareCodePoints(value1, v1) < 0) this.#byValue2.set(value2, value1);
  }

  /** value2 of the pairs whose value1 is given (the first in code-point order); undefined when none. */
  value2(value1: string): string | undefined {
    return this.#byValue1.get(value1);
  }

  /** value1 of the pairs whose value2 is given (the first in code-point order); undefined when none. */
  value1(value2: string): string | undefined {
    return this.#byValue2.get(value2);
  }

  /** How many pairs were added, duplicates included. */
  get size(): number {
    return this.#pairs;
  }
}

/** The Lookup Tables a run has loaded, found by ID or by name. */
export class LookupTableSet {
  readonly #byId = new Map<string, LookupTableIndex>();
  readonly #byName = new Map<string, LookupTableIndex>();

  add(table: LookupTableIndex): this {
    this.#byId.set(table.id.toLowerCase(), table);
    this.#byName.set(nameKeyOf(table.name), table);
    return this;
  }

  /** The table a formula names: a GUID matches an ID first, then any text matches a name ignoring case. */
  table(idOrName: string): LookupTableIndex | undefined {
    const byId = isGuid(idOrName) ? this.#byId.get(idOrName.toLowerCase()) : undefined;
    return byId ?? this.#byName.get(nameKeyOf(idOrName));
  }

  /** value2 for a value1; undefined when the table is not loaded or nothing matches. */
  value2(table: string, value1: string): string | undefined {
    return this.table(table)?.value2(value1);
  }

  /** value1 for a value2; undefined when the table is not loaded or nothing matches. */
  value1(table: string, value2: string): string | undefined {
    return this.table(table)?.value1(value2);
  }

  /** The loaded tables. */
  tables(): LookupTableIndex[] {
    return [...this.#byId.values()];
  }
}

/** A table with its pairs, as {@link buildLookupTableSet} takes it. */
export interface LookupTableSource {
  readonly id: string;
  readonly name: string;
  readonly values: Iterable<LookupPair>;
}

/** Builds a set from tables held in memory (tests, the Map preview). */
export function buildLookupTableSet(tables: Iterable<LookupTableSource>): LookupTableSet {
  const set = new LookupTableSet();
  for (const source of tables) {
    const table = new LookupTableIndex(source.id, source.name);
    for (const pair of source.values) table.add(pair.value1, pair.value2);
    set.add(table);
  }
  return set;
}

function tableOf(set: LookupTableSet, table: string): LookupTableIndex {
  const found = set.table(table);
  if (!found) {
    throw new FerryError(
      'MAP_LOOKUP_TABLE_NOT_FOUND',
      `The Lookup Table "${table}" was not found; create it or correct the name in the formula.`,
      {
        details: { table },
      },
    );
  }
  return found;
}

function noMatch(fn: string, table: LookupTableIndex, column: 'value1' | 'value2', value: string): FerryError {
  return new FerryError(
    'MAP_LOOKUP_NO_MATCH',
    `${fn}: the Lookup Table "${table.name}" has no ${column} "${value}"; add the pair or use ${fn}_DEFAULT.`,
    {
      details: { table: table.name, tableId: table.id, [column]: value },
    },
  );
}

/**
 * LOOKUPTABLEVALUE1(table, value2): the value1 paired with value2. No match raises the record error
 * MAP_LOOKUP_NO_MATCH; a table that is not loaded raises MAP_LOOKUP_TABLE_NOT_FOUND.
 */
export function lookupTableValue1(set: LookupTableSet, table: string, value2: string): string {
  const t = tableOf(set, table);
  const found = t.value1(value2);
  if (found === undefined) throw noMatch('LOOKUPTABLEVALUE1', t, 'value2', value2);
  return found;
}

/** LOOKUPTABLEVALUE2(table, value1): the value2 paired with value1; errors as {@link lookupTableValue1}. */
export function lookupTableValue2(set: LookupTableSet, table: string, value1: string): string {
  const t = tableOf(set, table);
  const found = t.value2(value1);
  if (found === undefined) throw noMatch('LOOKUPTABLEVALUE2', t, 'value1', value1);
  return found;
}

/**
 * LOOKUPTABLEVALUE1_DEFAULT(table, value2, default): as LOOKUPTABLEVALUE1, but no match returns the
 * default. A table that is not loaded is still an error: a wrong table name is a mistake in the
 * Map, not a missing value.
 */
export function lookupTableValue1Default<D>(
  set: LookupTableSet,
  table: string,
  value2: string,
  fallback: D,
): string | D {
  return tableOf(set, table).value1(value2) ?? fallback;
}

/** LOOKUPTABLEVALUE2_DEFAULT(table, value1, default): as {@link lookupTableValue1Default}, the other way. */
export function lookupTableValue2Default<D>(
  set: LookupTableSet,
  table: string,
  value1: string,
  fallback: D,
): string | D {
  return tableOf(set, table).value2(value1) ?? fallback;
}
