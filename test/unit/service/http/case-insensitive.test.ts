import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { normalizeKeys } from '../../../../service/http/case-insensitive.js';

const Rule = z.strictObject({ name: z.string(), apiAccessEnabled: z.boolean().optional() });
const Model = z.strictObject({
  name: z.string().optional(),
  parentId: z.number().optional(),
  securityRules: z.array(Rule).optional(),
});

describe('case-insensitive keys', () => {
  it('maps PascalCase keys onto the schema, recursively through arrays and optionals', () => {
    const out = normalizeKeys(Model, {
      Name: 'a',
      PARENTID: 1,
      SecurityRules: [{ NAME: 'r', ApiAccessEnabled: true }],
    });
    expect(out).toEqual({ name: 'a', parentId: 1, securityRules: [{ name: 'r', apiAccessEnabled: true }] });
    expect(Model.parse(out)).toBeTruthy();
  });

  it('keeps unknown keys for the strict schema to name, and prefers an exact key', () => {
    expect(normalizeKeys(Model, { Nmae: 'x' })).toEqual({ Nmae: 'x' });
    expect(normalizeKeys(Model, { Name: 'pascal', name: 'exact' })).toEqual({ name: 'exact' });
  });

  it('never sets a prototype from input', () => {
    const input = JSON.parse('{"__proto__": {"polluted": true}, "name": "n"}') as object;
    const out = normalizeKeys(Model, input) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('leaves scalars and non-object schemas alone', () => {
    expect(normalizeKeys(z.string(), 'x')).toBe('x');
    expect(normalizeKeys(Model, null)).toBeNull();
  });
});
