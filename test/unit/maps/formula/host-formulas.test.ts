/**
 * Bare fields and literals are evaluated in the host, with the same values and record errors as
 * the sandbox gives; only the other formulas, with the fields they read, cross into the isolate.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileFormulas, FormulaEngine, type FormulaRecord } from '../../../../src/maps/formula/evaluator.js';

let engine: FormulaEngine;
beforeAll(async () => {
  engine = await FormulaEngine.create({ maxTextLength: 20 });
});
afterAll(() => engine.dispose());

const VALUES: unknown[] = [
  'text',
  '',
  'é😀',
  'x'.repeat(20),
  0,
  -0,
  1.5,
  -7,
  Number.MAX_VALUE,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  false,
  null,
  undefined,
  new Date('2024-03-05T14:07:09.123Z'),
  new Date(Number.NaN),
  12n,
  2n ** 70n,
  new Uint8Array([1, 2, 255]),
  { a: [1, 'b'] },
  [1, 2],
];

describe('host formulas', () => {
  it('a bare field gives what the sandbox gives for the same value, whatever its type', async () => {
    const records: FormulaRecord[] = VALUES.map((v) => ({ Q: { F: v } }));
    records.push({ Q: {} }, { Other: { F: 1 } }, { Q: null }, {});
    const host = compileFormulas(['Q.F']);
    const sandboxed = compileFormulas(['IF(TRUE, Q.F)']);
    expect(host.sandboxed).toBeNull();
    expect(sandboxed.sandboxed).not.toBeNull();
    const a = await engine.evaluate(host, records);
    const b = await engine.evaluate(sandboxed, records);
    expect(a.values).toEqual(b.values);
    expect(Object.is(a.values[5]?.[0], 0)).toBe(true);
    // texts over the limit of 20 (the date's ISO text, 2^70's digits) fail alike
    const brief = (e: (typeof a.errors)[number]) => [e.record, e.formula, e.error.code, e.error.message];
    expect(a.errors.map(brief)).toEqual(b.errors.map(brief));
    expect(a.errors.map((e) => e.record)).toEqual([15, 18]);
  });

  it('literals give what the sandbox gives', async () => {
    const literals = ['"abc"', '""', '0', '-0', '12.5', '-3', 'TRUE', 'FALSE', 'NULL'];
    const host = compileFormulas(literals);
    expect(host.sandboxed).toBeNull();
    const sandboxed = compileFormulas(literals.map((l) => `IF(TRUE, ${l})`));
    const a = await engine.evaluate(host, [{}]);
    const b = await engine.evaluate(sandboxed, [{}]);
    expect(a.values).toEqual(b.values);
  });

  it('a copied text over the length limit fails with the same record error as in the sandbox', async () => {
    const records: FormulaRecord[] = [{ Q: { F: 'short' } }, { Q: { F: 'y'.repeat(21) } }];
    const a = await engine.evaluate(compileFormulas([{ key: 'name', formula: 'Q.F', blockId: 'b-1' }]), records);
    const b = await engine.evaluate(
      compileFormulas([{ key: 'name', formula: 'IF(TRUE, Q.F)', blockId: 'b-1' }]),
      records,
    );
    expect(b.errors).toHaveLength(1);
    // the same error but for the span, which is the whole formula in both
    const whole = (e: (typeof a.errors)[number]) => ({
      ...e,
      error: { ...e.error, details: { ...e.error.details, position: { offset: 0 } } },
    });
    expect(a.errors.map(whole)).toEqual(b.errors.map(whole));
    expect(a.errors[0]).toMatchObject({
      record: 1,
      formula: 0,
      key: 'name',
      error: { code: 'FML_TEXT_TOO_LONG', details: { position: { offset: 0, length: 3 } } },
    });
    expect(a.values).toEqual([['short'], [null]]);
  });

  it('a mixed set: values in the set order, errors numbered by the whole set, only the formulas fields cross', async () => {
    const compiled = compileFormulas([
      { key: 'id', formula: 'Q.Id' },
      { key: 'name', formula: 'UPPER(Q.Name)' },
      { key: 'kind', formula: '"person"' },
      { key: 'n', formula: 'TOINTEGER(Q.N)' },
      { key: 'email', formula: 'Q.Email' },
    ]);
    expect(compiled.sandboxed?.indices).toEqual([1, 3]);
    expect(compiled.sandboxed?.fields).toEqual([
      { block: 'Q', field: 'Name' },
      { block: 'Q', field: 'N' },
    ]);
    expect(compiled.fields.map((f) => f.field)).toEqual(['Id', 'Name', 'N', 'Email']);
    const { values, errors } = await engine.evaluate(compiled, [
      { Q: { Id: 1, Name: 'ada', N: '4', Email: 'a@x' } },
      { Q: { Id: 2, Name: 'alan', N: 'four', Email: 'b@x' } },
    ]);
    expect(values).toEqual([
      [1, 'ADA', 'person', 4, 'a@x'],
      [2, 'ALAN', 'person', null, 'b@x'],
    ]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      record: 1,
      formula: 3,
      key: 'n',
      error: { code: 'FML_NOT_A_NUMBER', details: { formula: 'n', function: 'TOINTEGER' } },
    });
  });

  it('a disposed engine refuses every set, even one that needs no sandbox', async () => {
    const gone = await FormulaEngine.create();
    gone.dispose();
    await expect(gone.evaluate(compileFormulas(['Q.A', '"x"']), [{ Q: { A: 1 } }])).rejects.toMatchObject({
      code: 'FML_SANDBOX',
    });
  });
});
