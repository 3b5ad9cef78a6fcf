/**
 * Every catalogue function called with arguments of every kind (null, empty text, numbers of all
 * signs and sizes, booleans, dates, odd text): each call gives a value or a record error with a
 * documented code — never FML_INTERNAL (a library bug), never a failed batch.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { FORMULA_FUNCTIONS } from '../../../../src/maps/formula/catalogue.js';
import { compileFormulas, FormulaEngine } from '../../../../src/maps/formula/evaluator.js';

const ARGS = [
  'null',
  '""',
  '" "',
  '"abc"',
  '"12.5"',
  '"-3"',
  '"2024-03-05"',
  '"2024-03-05T14:07:09+02:00"',
  '"day"',
  '"yyyy-MM-dd"',
  '"[a-z]+"',
  '"("',
  '"%E0%A4%A"',
  '"😀é"',
  '0',
  '1',
  '-1',
  '2.5',
  '-0.5',
  '1e300',
  '-1e300',
  '123456789012345678',
  'true',
  'false',
  'DATE(2024, 2, 29)',
  'NOW()',
  'Q.A',
  'Q.B',
];

function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('fuzzing the library', () => {
  let engine: FormulaEngine | undefined;
  afterAll(() => engine?.dispose());

  it('answers every call with a value or a documented record error', async () => {
    engine = await FormulaEngine.create({
      lookupTables: [{ id: 'fuzz', name: 'T', values: [{ value1: 'a', value2: 'b' }] }],
    });
    const random = prng(7);
    const pick = (): string => ARGS[Math.floor(random() * ARGS.length)] as string;
    const formulas: string[] = [];
    for (const f of FORMULA_FUNCTIONS) {
      const { min, max } = f.arity;
      for (let round = 0; round < 25; round++) {
        const n = min + Math.floor(random() * ((max ?? min + 3) - min + 1));
        formulas.push(`${f.name}(${Array.from({ length: n }, pick).join(', ')})`);
      }
    }
    const compiled = compileFormulas(formulas);
    const records = [{ Q: { A: null, B: 'x' } }, { Q: { A: 7, B: '2024-01-01' } }, { Q: { A: '', B: true } }];
    const { values, errors } = await engine.evaluate(compiled, records);
    expect(values).toHaveLength(records.length);
    const internal = errors.filter(
      (e) => e.error.code === 'FML_INTERNAL' || e.error.code === 'FML_TIMEOUT' || e.error.code === 'FML_MEMORY_LIMIT',
    );
    expect(internal.map((e) => `${formulas[e.formula]}: ${e.error.message}`)).toEqual([]);
    for (const row of values)
      for (const v of row) expect(['string', 'number', 'boolean', 'object']).toContain(typeof v);
  });
});
