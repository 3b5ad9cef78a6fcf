import { describe, expect, it } from 'vitest';
import { Filter, filterFields, MAX_FILTER_DEPTH, and, cmp, not, isNull } from '../../../src/protocol/filter.js';

describe('the filter model', () => {
  it('accepts the operators and names the fields a filter uses', () => {
    const f = and(
      cmp('a', '>=', 1),
      not(isNull('b')),
      { op: 'in', field: 'a', values: ['x', null] },
      { op: 'like', field: 'c', pattern: 'x%' },
    );
    expect(Filter.parse(f)).toEqual(f);
    expect(filterFields(f)).toEqual(['a', 'b', 'c']);
  });

  it('refuses field names that are not fullNames, unknown operators, extra keys and deep nesting', () => {
    expect(Filter.safeParse(cmp('a b', '=', 1)).success).toBe(false);
    expect(Filter.safeParse({ op: '~', field: 'a', value: 1 }).success).toBe(false);
    expect(Filter.safeParse({ op: '=', field: 'a', value: 1, sql: 'DROP' }).success).toBe(false);
    expect(Filter.safeParse({ op: '=', field: 'a', value: Infinity }).success).toBe(false);
    let deep = cmp('a', '=', 1);
    for (let i = 0; i < MAX_FILTER_DEPTH; i++) deep = not(deep);
    expect(Filter.safeParse(deep).success).toBe(false);
  });
});
