/**
 * Lookups inside the sandbox answer exactly as `src/maps/lookup/lookup-set.ts` does: the same
 * table resolution (ID first, then name ignoring case), the same "first in code-point order" rule
 * for duplicate keys, the same errors.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  buildLookupTableSet,
  lookupTableValue1,
  lookupTableValue2,
  type LookupPair,
} from '../../../../src/maps/lookup/lookup-set.js';
import { compileFormulas, FormulaEngine } from '../../../../src/maps/formula/evaluator.js';

/** A deterministic generator, so that a failure can be reproduced. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const ALPHABET = ['a', 'b', 'B', 'é', '\u{1F600}', '\uFF21', ' ', '1'];
const TABLE_ID = '6f0c1e2a-3b4c-4d5e-8f60-718293a4b5c6';

describe('lookups in the sandbox', () => {
  const random = prng(42);
  const word = (): string =>
    Array.from({ length: 1 + Math.floor(random() * 3) }, () => ALPHABET[Math.floor(random() * ALPHABET.length)]).join(
      '',
    );
  const pairs: LookupPair[] = Array.from({ length: 400 }, () => ({ value1: word(), value2: word() }));
  const tables = [{ id: TABLE_ID, name: 'Codes', values: pairs }];
  const set = buildLookupTableSet(tables);
  let engine: FormulaEngine | undefined;
  afterAll(() => engine?.dispose());

  it('match lookup-set.ts for every key, in both directions, with duplicates', async () => {
    engine = await FormulaEngine.create({ lookupTables: tables });
    const keys = [...new Set([...pairs.map((p) => p.value1), ...pairs.map((p) => p.value2), 'absent'])];
    const compiled = compileFormulas([
      'LOOKUPTABLEVALUE2_DEFAULT("codes", Q.K, null)',
      `LOOKUPTABLEVALUE1_DEFAULT("${TABLE_ID.toUpperCase()}", Q.K, null)`,
    ]);
    const { values, errors } = await engine.evaluate(
      compiled,
      keys.map((k) => ({ Q: { K: k } })),
    );
    expect(errors).toEqual([]);
    const expected = keys.map((k) => [set.value2('Codes', k) ?? null, set.value1(TABLE_ID, k) ?? null]);
    expect(values).toEqual(expected);
  });

  it('fail as lookup-set.ts fails', async () => {
    engine ??= await FormulaEngine.create({ lookupTables: tables });
    const { errors } = await engine.evaluate(
      compileFormulas(['LOOKUPTABLEVALUE1(" CODES ", "absent")', 'LOOKUPTABLEVALUE2("Other", "x")']),
      [{}],
    );
    const fromSet = (f: () => unknown): string => {
      try {
        f();
      } catch (err) {
        return (err as Error).message;
      }
      return '';
    };
    expect(errors[0]?.error.code).toBe('MAP_LOOKUP_NO_MATCH');
    expect(errors[0]?.error.message).toContain(fromSet(() => lookupTableValue1(set, ' CODES ', 'absent')));
    expect(errors[1]?.error.code).toBe('MAP_LOOKUP_TABLE_NOT_FOUND');
    expect(errors[1]?.error.message).toContain(fromSet(() => lookupTableValue2(set, 'Other', 'x')));
  });
});
