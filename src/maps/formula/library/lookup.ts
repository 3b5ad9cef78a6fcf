/**
 * Lookup functions over the run's Lookup Tables, which the host loads into the sandbox once per
 * sandbox (`L.loadLookupTables`). Runs INSIDE the sandbox: the installer refers only to `L` and
 * JavaScript built-ins (see core.ts).
 *
 * The semantics are those of `src/maps/lookup/lookup-set.ts` (which cannot be imported here): a
 * table is named by its ID (a GUID, tried first) or by its name ignoring case and surrounding
 * spaces; a key with several pairs answers with the first of the other values in code-point
 * order; the errors are MAP_LOOKUP_TABLE_NOT_FOUND and MAP_LOOKUP_NO_MATCH with the same messages.
 */
import type { FormulaLibrary, FValue, WireLookupTable } from './types.js';

export function installLookup(L: FormulaLibrary): void {
  const { text, fail } = L;
  const F = L.fn;
  interface Table {
    readonly id: string;
    readonly name: string;
    /** value1 → value2 */
    readonly byValue1: Map<string, string>;
    /** value2 → value1 */
    readonly byValue2: Map<string, string>;
  }
  let byId = new Map<string, Table>();
  let byName = new Map<string, Table>();
  const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

  /** Code-point order, as SQLite's BINARY and PostgreSQL's "C" collations sort. */
  const rank = (unit: number): number => (unit >= 0xd800 && unit <= 0xdfff ? unit + 0x10000 : unit);
  const compareCodePoints = (a: string, b: string): number => {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) {
      const x = a.charCodeAt(i);
      const y = b.charCodeAt(i);
      if (x === y) continue;
      if (x >= 0xd800 && y >= 0xd800) return rank(x) - rank(y);
      return x - y;
    }
    return a.length - b.length;
  };
  const keepFirst = (map: Map<string, string>, key: string, value: string): void => {
    const seen = map.get(key);
    if (seen === undefined || compareCodePoints(value, seen) < 0) map.set(key, value);
  };

  L.loadLookupTables = (json: string): void => {
    const tables = JSON.parse(json) as WireLookupTable[];
    byId = new Map();
    byName = new Map();
    for (const t of tables) {
      const table: Table = { id: t.id, name: t.name, byValue1: new Map(), byValue2: new Map() };
      for (const [v1, v2] of t.pairs) {
        keepFirst(table.byValue1, v1, v2);
        keepFirst(table.byValue2, v2, v1);
      }
      byId.set(t.id.toLowerCase(), table);
      byName.set(t.name.trim().toLowerCase(), table);
    }
  };

  const tableOf = (ref: FValue): Table => {
    const name = text(ref);
    const table = (GUID.test(name) ? byId.get(name.toLowerCase()) : undefined) ?? byName.get(name.trim().toLowerCase());
    return (
      table ??
      fail(
        'MAP_LOOKUP_TABLE_NOT_FOUND',
        `The Lookup Table "${name}" was not found; create it or correct the name in the formula.`,
        { table: name },
      )
    );
  };
  const noMatch = (fn: string, t: Table, column: 'value1' | 'value2', value: string): never =>
    fail(
      'MAP_LOOKUP_NO_MATCH',
      `${fn}: the Lookup Table "${t.name}" has no ${column} "${value}"; add the pair or use ${fn}_DEFAULT.`,
      {
        table: t.name,
        tableId: t.id,
        [column]: value,
      },
    );

  F.LOOKUPTABLEVALUE1 = (table: FValue, value2: FValue): string => {
    const t = tableOf(table);
    const v = text(value2);
    return L.checkText(t.byValue2.get(v) ?? noMatch('LOOKUPTABLEVALUE1', t, 'value2', v), 'LOOKUPTABLEVALUE1');
  };
  F.LOOKUPTABLEVALUE2 = (table: FValue, value1: FValue): string => {
    const t = tableOf(table);
    const v = text(value1);
    return L.checkText(t.byValue1.get(v) ?? noMatch('LOOKUPTABLEVALUE2', t, 'value1', v), 'LOOKUPTABLEVALUE2');
  };
  const checked = (v: FValue, fn: string): FValue => (typeof v === 'string' ? L.checkText(v, fn) : v);
  F.LOOKUPTABLEVALUE1_DEFAULT = (table: FValue, value2: FValue, fallback: FValue): FValue =>
    checked(tableOf(table).byValue2.get(text(value2)) ?? fallback, 'LOOKUPTABLEVALUE1_DEFAULT');
  F.LOOKUPTABLEVALUE2_DEFAULT = (table: FValue, value1: FValue, fallback: FValue): FValue =>
    checked(tableOf(table).byValue1.get(text(value1)) ?? fallback, 'LOOKUPTABLEVALUE2_DEFAULT');
}
