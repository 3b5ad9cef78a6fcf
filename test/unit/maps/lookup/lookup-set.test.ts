import { describe, expect, it } from 'vitest';
import type { FerryError } from '../../../../src/errors/ferry-error.js';
import {
  buildLookupTableSet,
  compareCodePoints,
  isGuid,
  LookupTableIndex,
  lookupTableValue1,
  lookupTableValue1Default,
  lookupTableValue2,
  lookupTableValue2Default,
} from '../../../../src/maps/lookup/lookup-set.js';

const ID = '6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab';

const countries = buildLookupTableSet([
  {
    id: ID,
    name: 'Countries',
    values: [
      { value1: 'NO', value2: 'Norway' },
      { value1: 'NO', value2: 'Noreg' },
      { value1: 'SE', value2: 'Sweden' },
      { value1: 'SV', value2: 'Sweden' },
      { value1: 'empty', value2: '' },
      { value1: 'a/b c', value2: 'slash and space' },
    ],
  },
]);

function thrown(fn: () => unknown): FerryError {
  try {
    fn();
  } catch (err) {
    return err as FerryError;
  }
  throw new Error('expected an error');
}

describe('compareCodePoints', () => {
  it('orders by code point, which is UTF-8 byte order, not by UTF-16 unit', () => {
    // U+FF21 (fullwidth A) is one UTF-16 unit above the surrogates of U+1F600, but a lower code point.
    const words = ['😀', '\uff21', 'b', 'B', 'a', 'é', '', 'ab', 'a\u0000'];
    const sorted = [...words].sort(compareCodePoints);
    expect(sorted).toEqual(['', 'B', 'a', 'a\u0000', 'ab', 'b', 'é', '\uff21', '😀']);
    const byBytes = [...words].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(sorted).toEqual(byBytes);
  });

  it('agrees with UTF-8 byte order on random strings', () => {
    const alphabet = ['a', 'Z', '0', ' ', 'é', 'ß', '\u4e2d', '\ud7ff', '\ue000', '\uffff', '😀', '𝄞', '\u0000'];
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (seed * 48271) % 2147483647;
      return seed % n;
    };
    for (let i = 0; i < 2000; i++) {
      const a = Array.from({ length: rnd(4) }, () => alphabet[rnd(alphabet.length)]).join('');
      const b = Array.from({ length: rnd(4) }, () => alphabet[rnd(alphabet.length)]).join('');
      expect(Math.sign(compareCodePoints(a, b)), `${a} vs ${b}`).toBe(
        Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))),
      );
    }
  });
});

describe('LookupTableSet', () => {
  it('answers value2 for value1 and value1 for value2, the first in code-point order among duplicates', () => {
    expect(countries.value2('Countries', 'NO')).toBe('Noreg');
    expect(countries.value1('Countries', 'Sweden')).toBe('SE');
    expect(countries.value2('Countries', 'empty')).toBe('');
    expect(countries.value1('Countries', '')).toBe('empty');
    expect(countries.value2('Countries', 'a/b c')).toBe('slash and space');
  });

  it('applies the rule whatever the order pairs arrive in', () => {
    const a = new LookupTableIndex(ID, 'T');
    const b = new LookupTableIndex(ID, 'T');
    const pairs = [
      ['k', 'b'],
      ['k', 'a'],
      ['k', 'B'],
      ['k', '😀'],
      ['k', '\uff21'],
    ] as const;
    for (const [v1, v2] of pairs) a.add(v1, v2);
    for (const [v1, v2] of [...pairs].reverse()) b.add(v1, v2);
    expect(a.value2('k')).toBe('B');
    expect(b.value2('k')).toBe('B');
    expect(a.size).toBe(5);
  });

  it('matches values exactly: case, spaces and unicode count', () => {
    expect(countries.value2('Countries', 'no')).toBeUndefined();
    expect(countries.value2('Countries', 'NO ')).toBeUndefined();
    expect(countries.value2('Countries', 'missing')).toBeUndefined();
  });

  it('finds a table by ID (any case) first, then by name ignoring case and surrounding spaces', () => {
    expect(countries.table(ID)?.name).toBe('Countries');
    expect(countries.table(ID.toUpperCase())?.name).toBe('Countries');
    expect(countries.table(' countries ')?.id).toBe(ID);
    expect(countries.table('Cities')).toBeUndefined();
    expect(countries.value2('Cities', 'NO')).toBeUndefined();
    expect(isGuid(ID)).toBe(true);
    expect(isGuid('Countries')).toBe(false);
    const guidNamed = buildLookupTableSet([
      { id: '00000000-0000-4000-8000-000000000001', name: ID, values: [{ value1: 'x', value2: 'by name' }] },
      { id: ID, name: 'Other', values: [{ value1: 'x', value2: 'by id' }] },
    ]);
    expect(guidNamed.value2(ID, 'x')).toBe('by id');
    expect(guidNamed.tables()).toHaveLength(2);
  });
});

describe('the LOOKUPTABLEVALUE functions', () => {
  it('return the value when one matches', () => {
    expect(lookupTableValue2(countries, 'Countries', 'NO')).toBe('Noreg');
    expect(lookupTableValue1(countries, 'countries', 'Sweden')).toBe('SE');
    expect(lookupTableValue2Default(countries, 'Countries', 'SE', 'dflt')).toBe('Sweden');
    expect(lookupTableValue1Default(countries, 'Countries', 'Norway', 'dflt')).toBe('NO');
  });

  it('raise MAP_LOOKUP_NO_MATCH naming the table and the value where the _DEFAULT variants return the default', () => {
    const err = thrown(() => lookupTableValue2(countries, 'Countries', 'XX'));
    expect(err.code).toBe('MAP_LOOKUP_NO_MATCH');
    expect(err.kind).toBe('config');
    expect(err.message).toContain('"Countries"');
    expect(err.message).toContain('"XX"');
    expect(err.details).toMatchObject({ table: 'Countries', tableId: ID, value1: 'XX' });
    expect(thrown(() => lookupTableValue1(countries, 'Countries', 'Atlantis')).code).toBe('MAP_LOOKUP_NO_MATCH');
    expect(lookupTableValue2Default(countries, 'Countries', 'XX', 'dflt')).toBe('dflt');
    expect(lookupTableValue1Default(countries, 'Countries', 'Atlantis', null)).toBeNull();
  });

  it('return an empty value2 as a match, not as a miss', () => {
    expect(lookupTableValue2(countries, 'Countries', 'empty')).toBe('');
    expect(lookupTableValue2Default(countries, 'Countries', 'empty', 'dflt')).toBe('');
  });

  it('raise MAP_LOOKUP_TABLE_NOT_FOUND for a table that is not loaded, also in the _DEFAULT variants', () => {
    for (const call of [
      () => lookupTableValue2(countries, 'Cities', 'x'),
      () => lookupTableValue1(countries, 'Cities', 'x'),
      () => lookupTableValue2Default(countries, 'Cities', 'x', 'dflt'),
      () => lookupTableValue1Default(countries, 'Cities', 'x', 'dflt'),
    ]) {
      const err = thrown(call);
      expect(err.code).toBe('MAP_LOOKUP_TABLE_NOT_FOUND');
      expect(err.message).toContain('"Cities"');
    }
  });

  it('stays fast on a 200,000-value table', () => {
    const big = new LookupTableIndex(ID, 'Big');
    for (let i = 0; i < 200_000; i++) big.add(`K${i}`, `V${i % 1000}`);
    const set = buildLookupTableSet([]).add(big);
    const start = performance.now();
    for (let i = 0; i < 200_000; i++) lookupTableValue2(set, 'Big', `K${i}`);
    expect(performance.now() - start).toBeLessThan(2_000);
    expect(set.value1('Big', 'V7')).toBe('K100007');
  });
});
