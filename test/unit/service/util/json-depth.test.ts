import { describe, expect, it } from 'vitest';
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from '../../../../service/util/json-depth.js';

describe('jsonNestsDeeperThan', () => {
  const arrays = (n: number): string => `${'['.repeat(n)}${']'.repeat(n)}`;

  it('counts arrays and objects, mixed, up to the limit', () => {
    expect(jsonNestsDeeperThan(arrays(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonNestsDeeperThan(arrays(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonNestsDeeperThan('{"a":[{"b":[1]}]}', 4)).toBe(false);
    expect(jsonNestsDeeperThan('{"a":[{"b":[1]}]}', 3)).toBe(true);
    // Siblings do not add up: depth is nesting, not count.
    expect(jsonNestsDeeperThan(`[${Array.from({ length: 1000 }, () => '[1]').join(',')}]`, 2)).toBe(false);
  });

  it('ignores brackets inside strings, escaped quotes and backslashes included', () => {
    expect(jsonNestsDeeperThan(`{"a":"${'[{'.repeat(1000)}"}`, 1)).toBe(false);
    expect(jsonNestsDeeperThan('{"a":"x\\"[[[[","b":"\\\\"}', 1)).toBe(false);
    expect(jsonNestsDeeperThan('{"a":"\\\\",  "b":[[1]]}', 2)).toBe(true);
  });

  it('answers quickly, without recursion, for a million levels', () => {
    expect(jsonNestsDeeperThan(arrays(1_000_000))).toBe(true);
    expect(jsonNestsDeeperThan(`"${'['.repeat(1_000_000)}"`)).toBe(false);
  });
});
