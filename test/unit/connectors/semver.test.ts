import { describe, expect, it } from 'vitest';
import { satisfies } from '../../../src/connectors/semver.js';

describe('satisfies', () => {
  it.each([
    ['1.0.0', '^1.0.0', true],
    ['1.9.3', '^1.2.0', true],
    ['2.0.0', '^1.2.0', false],
    ['0.2.5', '^0.2.1', true],
    ['0.3.0', '^0.2.1', false],
    ['1.2.9', '~1.2.0', true],
    ['1.3.0', '~1.2.0', false],
    ['1.5.0', '>=1.0.0 <2.0.0', true],
    ['2.0.0', '>=1.0.0 <2.0.0', false],
    ['3.1.0', '^1.0.0 || ^3.0.0', true],
    ['1.0.0-beta.1', '>=1.0.0', false],
    ['1.4.2', '1.4.2', true],
    ['1.4.2', '1', true],
    ['nonsense', '^1.0.0', false],
  ])('%s in %s is %s', (v, range, ok) => {
    expect(satisfies(v, range)).toBe(ok);
  });
});
