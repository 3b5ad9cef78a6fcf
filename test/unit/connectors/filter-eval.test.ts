import { describe, expect, it } from 'vitest';
import { compileFilter, likeToRegExp } from '../../../src/connectors/filter-eval.js';
import type { Filter } from '../../../src/protocol/filter.js';
import type { PropertyType } from '../../../src/connectors/value.js';

const types: Record<string, PropertyType> = { n: 'integer', d: 'decimal', s: 'string', b: 'boolean', t: 'datetime' };
const test = (f: Filter, r: Record<string, string | number | boolean | null>): boolean =>
  compileFilter(f, (x) => types[x])(r);

describe('compileFilter', () => {
  it('uses three-valued logic: a comparison with null is unknown, and NOT unknown is unknown', () => {
    const eq: Filter = { op: '=', field: 'n', value: 1 };
    expect(test(eq, { n: null })).toBe(false);
    expect(test({ op: 'not', arg: eq }, { n: null })).toBe(false);
    expect(test({ op: 'or', args: [eq, { op: 'isNull', field: 'n' }] }, { n: null })).toBe(true);
    expect(
      test({ op: 'not', arg: { op: 'and', args: [eq, { op: '=', field: 's', value: 'x' }] } }, { n: null, s: 'y' }),
    ).toBe(true);
    expect(test({ op: 'in', field: 'n', values: [2, null] }, { n: 1 })).toBe(false);
    expect(test({ op: 'not', arg: { op: 'in', field: 'n', values: [2, null] } }, { n: 1 })).toBe(false);
  });

  it('compares in the field type: numbers, exact decimals, instants', () => {
    expect(test({ op: '<', field: 'n', value: '10' }, { n: 9 })).toBe(true);
    expect(test({ op: '=', field: 'd', value: '1.50' }, { d: '1.5' })).toBe(true);
    expect(test({ op: '>', field: 'd', value: '12345678901234567890.1' }, { d: '12345678901234567890.2' })).toBe(true);
    expect(test({ op: '=', field: 't', value: '2024-01-01T01:00:00+01:00' }, { t: '2024-01-01T00:00:00Z' })).toBe(true);
    expect(test({ op: '<', field: 't', value: '2024-01-01T00:00:00.5Z' }, { t: '2024-01-01T00:00:00Z' })).toBe(true);
    expect(test({ op: '=', field: 'b', value: 'true' }, { b: true })).toBe(true);
    // A literal that is not a value of the type matches nothing (like a failed cast).
    expect(test({ op: '<>', field: 'n', value: 'abc' }, { n: 1 })).toBe(false);
  });

  it('translates LIKE patterns with escapes, case-sensitively', () => {
    expect(likeToRegExp('a\\%b%').test('a%bcd')).toBe(true);
    expect(likeToRegExp('a\\%b%').test('axbcd')).toBe(false);
    expect(likeToRegExp('_.c').test('a.c')).toBe(true);
    expect(likeToRegExp('_.c').test('abc')).toBe(false);
    expect(test({ op: 'like', field: 's', pattern: 'A%' }, { s: 'abc' })).toBe(false);
    expect(test({ op: 'contains', field: 's', value: '50%' }, { s: 'save 50% now' })).toBe(true);
  });

  it('refuses unknown fields through the given error', () => {
    expect(() =>
      compileFilter(
        { op: 'isNull', field: 'zz' },
        (x) => types[x],
        (f) => new Error(`no ${f}`),
      ),
    ).toThrow('no zz');
  });
});
