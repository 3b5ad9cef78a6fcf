/**
 * The rules of the formula language, one test each, through the real engine.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { sharedEngine } from '../../../helpers/formulas.js';

const f = sharedEngine();
afterAll(() => f.close());

describe('the rules of the issue', () => {
  it('"2"+"1" is 3', async () => expect(await f.value('"2"+"1"')).toBe(3));
  it('"TWO"+"1" is a record error', async () => {
    const error = await f.error('"TWO"+"1"');
    expect(error).toMatchObject({
      code: 'FML_NOT_A_NUMBER',
      kind: 'config',
      details: { position: { offset: 0, line: 1, column: 1, length: 5 } },
    });
  });
  it('2 & 1 is "21"', async () => expect(await f.value('2 & 1')).toBe('21'));
  it('null is empty text in concatenation', async () => {
    expect(await f.value('"a" & null & "b"')).toBe('ab');
    expect(await f.value('Q.Missing & "x"', {})).toBe('x');
    expect(await f.value('CONCATENATE(Q.N, "x")', { 'Q.N': null })).toBe('x');
  });
  it('conversions of null: TOSTRING → null, TOBOOLEAN → false, numbers → 0', async () => {
    expect(await f.value('TOSTRING(null)')).toBeNull();
    expect(await f.value('TOBOOLEAN(null)')).toBe(false);
    expect(await f.value('TOINTEGER(null)')).toBe(0);
    expect(await f.value('TODECIMAL(null)')).toBe(0);
    expect(await f.value('null + 1')).toBe(1);
  });
});

describe('literals and references', () => {
  it('reads text with doubled quotes, numbers, booleans and null in any case', async () => {
    expect(await f.value('"say ""hi"""')).toBe('say "hi"');
    expect(await f.value('.5 + 1.5e1')).toBe(15.5);
    expect(await f.value('True')).toBe(true);
    expect(await f.value('FALSE')).toBe(false);
    expect(await f.value('NULL')).toBeNull();
  });
  it('reads Block.Field from the record, null when absent', async () => {
    expect(await f.value('Query_Account.Name', { 'Query_Account.Name': 'Acme' })).toBe('Acme');
    expect(await f.value('Query_Account.Name', {})).toBeNull();
    expect(await f.value('[Query Account].[First Name]', { 'Query Account.First Name': 'Ada' })).toBe('Ada');
  });
  it('calls functions in any case', async () => expect(await f.value('upper("a") & Lower("B")')).toBe('Ab'));
});

describe('operators', () => {
  it('follows precedence: * / before + -, before &, before comparisons, before NOT, AND, OR', async () => {
    expect(await f.value('1 + 2 * 3')).toBe(7);
    expect(await f.value('(1 + 2) * 3')).toBe(9);
    expect(await f.value('"a" & 1 + 2')).toBe('a3');
    expect(await f.value('1 + 1 = 2')).toBe(true);
    expect(await f.value('NOT 1 = 2')).toBe(true);
    expect(await f.value('true OR false AND false')).toBe(true);
    expect(await f.value('-2 * -3')).toBe(6);
    expect(await f.value('10 - 2 - 3')).toBe(5);
    expect(await f.value('12 / 2 / 3')).toBe(2);
  });
  it('computes + - * / on the decimal values', async () => {
    expect(await f.value('0.1 + 0.2')).toBe(0.3);
    expect(await f.value('0.3 - 0.1')).toBe(0.2);
    expect(await f.value('1.1 * 1.1')).toBe(1.21);
    expect(await f.value('0.3 / 0.1')).toBe(3);
    expect(await f.value('1 / 3 * 3')).toBe(1);
    expect(await f.value('0.1 + 0.2 = 0.3')).toBe(true);
    expect(await f.value('Q.Amount * 2', { 'Q.Amount': '12.50' })).toBe(25);
  });
  it('fails division by zero and results too large', async () => {
    expect((await f.error('1 / 0')).code).toBe('FML_DIVISION_BY_ZERO');
    expect((await f.error('1e300 * 1e300')).code).toBe('FML_OUT_OF_RANGE');
  });
  it('accepts AND OR NOT, && ||, and AND(…) / OR(…)', async () => {
    expect(await f.value('true && false')).toBe(false);
    expect(await f.value('false || true')).toBe(true);
    expect(await f.value('AND(true, 1, "yes")')).toBe(true);
    expect(await f.value('OR(false, 0, "no")')).toBe(false);
    expect(await f.value('NOT(false)')).toBe(true);
    expect(await f.value('1 > 0 AND (2 > 1 OR 1 / 0 = 1)')).toBe(true);
  });
  it('short-circuits AND and OR', async () => {
    expect(await f.value('false AND 1 / 0 = 1')).toBe(false);
    expect(await f.value('true OR 1 / 0 = 1')).toBe(true);
  });
  it('compares numbers, text, booleans, dates and null', async () => {
    expect(await f.value('10 > 9')).toBe(true);
    expect(await f.value('"10" > 9')).toBe(true);
    expect(await f.value('"10" > "9"')).toBe(false);
    expect(await f.value('"B" < "a"')).toBe(true);
    expect(await f.value('"a" = "A"')).toBe(false);
    expect(await f.value('"abc" <> "abd"')).toBe(true);
    expect(await f.value('true > false')).toBe(true);
    expect(await f.value('"yes" = true')).toBe(true);
    expect(await f.value('DATE(2024, 3, 5) = "2024-03-05T00:00:00Z"')).toBe(true);
    expect(await f.value('DATE(2024, 3, 5) < "2024-03-05T00:00:01+00:00"')).toBe(true);
    expect(await f.value('null = null')).toBe(true);
    expect(await f.value('null = ""')).toBe(true);
    expect(await f.value('null = 0')).toBe(true);
    expect(await f.value('null < DATE(2024, 1, 1)')).toBe(true);
  });
  it('finds values of unrelated types unequal, but refuses to order them', async () => {
    expect(await f.value('"abc" = 1')).toBe(false);
    expect(await f.value('"abc" <> 1')).toBe(true);
    expect((await f.error('"abc" < 1')).code).toBe('FML_NOT_A_NUMBER');
  });
  it('converts text to a number for arithmetic and unary minus', async () => {
    expect(await f.value('- "3"')).toBe(-3);
    expect(await f.value('" 4 " * 2')).toBe(8);
    expect(await f.value('true + true')).toBe(2);
    expect((await f.error('"" + 1')).code).toBe('FML_NOT_A_NUMBER');
    expect((await f.error('DATE(2024, 1, 1) + 1')).code).toBe('FML_NOT_A_NUMBER');
  });
  it('joins anything as text with &', async () => {
    expect(await f.value('1.5 & true & null & DATE(2024, 3, 5)')).toBe('1.5true2024-03-05T00:00:00.000Z');
    expect(await f.value('0.0000001 & ""')).toBe('0.0000001');
    expect(await f.value('1e21 & ""')).toBe('1000000000000000000000');
  });
  it('turns conditions into booleans strictly', async () => {
    expect(await f.value('IF("Y", 1, 2)')).toBe(1);
    expect(await f.value('IF(0, 1, 2)')).toBe(2);
    expect((await f.error('IF("maybe", 1, 2)')).code).toBe('FML_NOT_A_BOOLEAN');
  });
});

describe('lazy functions', () => {
  it('IF evaluates only the chosen branch', async () => expect(await f.value('IF(true, "ok", 1 / 0)')).toBe('ok'));
  it('IFERROR catches a failure, and only then evaluates the fallback', async () => {
    expect(await f.value('IFERROR(1 / 0, "div")')).toBe('div');
    expect(await f.value('IFERROR(1, 1 / 0)')).toBe(1);
  });
  it('SWITCH evaluates only the chosen result', async () =>
    expect(await f.value('SWITCH(2, 1, 1 / 0, 2, "two", 1 / 0)')).toBe('two'));
  it('CHOOSE evaluates only the chosen value', async () => expect(await f.value('CHOOSE(1, "a", 1 / 0)')).toBe('a'));
  it('COALESCE stops at the first value', async () => expect(await f.value('COALESCE(null, "b", 1 / 0)')).toBe('b'));
  it('nests lazy forms', async () => {
    expect(
      await f.value('SWITCH(COALESCE(Q.X, "k"), "k", IF(CHOOSE(2, false, true), IFERROR(1 / 0, "deep"), 0), "other")'),
    ).toBe('deep');
  });
});

describe('the batch', () => {
  it('gives every record of a batch the same NOW(), the batch clock', async () => {
    const now = Date.parse('2024-03-05T10:20:30.123Z');
    expect(await f.value('NOW()', {}, now)).toBe('2024-03-05T10:20:30.123Z');
    expect(await f.value('TODAY()', {}, now)).toBe('2024-03-05T00:00:00.000Z');
  });
  it('gives different GUIDs and random numbers on every call', async () => {
    expect(await f.value('NEWGUID() <> NEWGUID()')).toBe(true);
    expect(await f.value('RAND() <> RAND()')).toBe(true);
  });
});
