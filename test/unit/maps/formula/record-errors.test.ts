/**
 * Record errors: plain data with a code, a kind, a message that names the place, and details with
 * the position in the formula, the formula's key and Block, and what went wrong.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { compileFormulas, FormulaEngine } from '../../../../src/maps/formula/evaluator.js';
import { lookupTablesOf, sharedEngine } from '../../../helpers/formulas.js';

const f = sharedEngine();
let engine: FormulaEngine | undefined;
afterAll(async () => {
  await f.close();
  engine?.dispose();
});

describe('record errors point at the place in the formula', () => {
  it('the operand that is not a number', async () => {
    const error = await f.error('1 + Q.Amount * 2', { 'Q.Amount': 'ten' });
    expect(error).toMatchObject({
      code: 'FML_NOT_A_NUMBER',
      details: { position: { offset: 4, line: 1, column: 5, length: 8 }, value: 'ten' },
    });
    expect(error.message).toBe('"ten" is not a number (line 1, column 5)');
  });

  it('the innermost call that failed, on its own line', async () => {
    const error = await f.error('CONCATENATE(\n  "a",\n  LEFT(Q.Name, TOINTEGER(Q.N))\n)', {
      'Q.Name': 'abc',
      'Q.N': 'x',
    });
    expect(error).toMatchObject({
      code: 'FML_NOT_A_NUMBER',
      details: { function: 'TOINTEGER', position: { line: 3, column: 16, length: 9 } },
    });
    expect(error.message).toBe('TOINTEGER: "x" is not a number (line 3, column 16)');
  });

  it('the operator that failed', async () => {
    expect((await f.error('10 / (Q.N - Q.N)', { 'Q.N': 3 })).details).toMatchObject({ position: { column: 4 } });
    expect((await f.error('"a" < 1')).details).toMatchObject({ position: { column: 5, length: 1 } });
  });

  it('the function that got a bad argument, naming it', async () => {
    const error = await f.error('UPPER(LEFT("abc", -1))');
    expect(error).toMatchObject({
      code: 'FML_INVALID_ARGUMENT',
      details: { function: 'LEFT', position: { column: 7 } },
    });
    expect(error.message).toBe('LEFT: count must not be negative (it is -1) (line 1, column 7)');
  });

  it('the condition of IF that is not a boolean', async () => {
    expect(await f.error('IF(Q.Flag, 1, 2)', { 'Q.Flag': 'maybe' })).toMatchObject({
      code: 'FML_NOT_A_BOOLEAN',
      details: { function: 'IF' },
    });
  });

  it('the lookup that found nothing, with the table and value', async () => {
    engine = await FormulaEngine.create({ lookupTables: lookupTablesOf({ States: [['California', 'CA']] }) });
    const compiled = compileFormulas([{ key: 'State', formula: 'LOOKUPTABLEVALUE2("States", Q.S)', blockId: 'b-1' }]);
    const { errors } = await engine.evaluate(compiled, [{ Q: { S: 'Oregon' } }, { Q: { S: 'California' } }]);
    expect(errors).toEqual([
      {
        record: 0,
        formula: 0,
        key: 'State',
        error: {
          code: 'MAP_LOOKUP_NO_MATCH',
          kind: 'config',
          message:
            'LOOKUPTABLEVALUE2: the Lookup Table "States" has no value1 "Oregon"; add the pair or use LOOKUPTABLEVALUE2_DEFAULT. (line 1, column 1)',
          details: {
            position: { offset: 0, line: 1, column: 1, length: 17 },
            formula: 'State',
            blockId: 'b-1',
            function: 'LOOKUPTABLEVALUE2',
            table: 'States',
            tableId: '00000000-0000-4000-8000-000000000001',
            value1: 'Oregon',
          },
        },
      },
    ]);
    const missing = await engine.evaluate(compileFormulas(['LOOKUPTABLEVALUE2_DEFAULT("Nope", "x", "d")']), [{}]);
    expect(missing.errors[0]?.error).toMatchObject({ code: 'MAP_LOOKUP_TABLE_NOT_FOUND', details: { table: 'Nope' } });
  });

  it('a result that is not a finite number or too long a text', async () => {
    expect((await f.error('POWER(10, 400)')).code).toBe('FML_OUT_OF_RANGE');
    expect((await f.error('REPEAT("ab", 6000000)')).code).toBe('FML_TEXT_TOO_LONG');
    expect((await f.error('REPEAT("ab", 3000000) & REPEAT("ab", 3000000)')).code).toBe('FML_TEXT_TOO_LONG');
  });
});

describe('record errors in a batch', () => {
  it('fail only the record and formula concerned, in record order', async () => {
    const e = await f.get();
    const compiled = compileFormulas({ Amount: 'TODECIMAL(Q.A)', Name: 'UPPER(Q.N)' });
    const records = [
      { Q: { A: '1.5', N: 'a' } },
      { Q: { A: 'x', N: 'b' } },
      { Q: { A: '2', N: 'c' } },
      { Q: { A: 'y', N: null } },
    ];
    const { values, errors } = await e.evaluate(compiled, records);
    expect(values).toEqual([
      [1.5, 'A'],
      [null, 'B'],
      [2, 'C'],
      [null, ''],
    ]);
    expect(errors.map((x) => [x.record, x.key, x.error.code])).toEqual([
      [1, 'Amount', 'FML_NOT_A_NUMBER'],
      [3, 'Amount', 'FML_NOT_A_NUMBER'],
    ]);
  });
});
