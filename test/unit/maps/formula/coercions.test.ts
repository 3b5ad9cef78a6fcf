/**
 * Types and conversions (docs/formulas.md "Types and conversions"): what each kind of value
 * becomes where a number, text, boolean or date is expected, including values as they arrive from
 * Connectors (decimals as text, dates as ISO text).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { sharedEngine } from '../../../helpers/formulas.js';

const f = sharedEngine();
afterAll(() => f.close());

const REC = {
  'Q.Null': null,
  'Q.Empty': '',
  'Q.Text': 'abc',
  'Q.Decimal': '12.50',
  'Q.Int': 42,
  'Q.Big': '9007199254740993',
  'Q.Bool': true,
  'Q.Date': '2024-03-05',
  'Q.Stamp': '2024-03-05T14:07:09.5+02:00',
};

describe('to text', () => {
  it.each([
    ['TOSTRING(Q.Null)', null],
    ['TOSTRING(Q.Int)', '42'],
    ['TOSTRING(-0.5)', '-0.5'],
    ['TOSTRING(1/3)', '0.3333333333333333'],
    ['TOSTRING(123456789012345680000)', '123456789012345680000'],
    ['TOSTRING(0.000001234)', '0.000001234'],
    ['TOSTRING(Q.Bool)', 'true'],
    ['TOSTRING(TODATETIME(Q.Stamp))', '2024-03-05T12:07:09.500Z'],
    ['TOSTRING(Q.Date)', '2024-03-05'],
    ['LEN(Q.Null)', 0],
    ['UPPER(Q.Bool)', 'TRUE'],
  ])('%s → %j', async (formula, expected) => expect(await f.value(formula, REC)).toBe(expected));
});

describe('to a number', () => {
  it.each([
    ['TODECIMAL(Q.Null)', 0],
    ['TODECIMAL(Q.Decimal)', 12.5],
    ['TODECIMAL(" -1.5e2 ")', -150],
    ['TODECIMAL(".5")', 0.5],
    ['TODECIMAL("5.")', 5],
    ['TODECIMAL(Q.Bool)', 1],
    ['TOINTEGER(Q.Big)', 9007199254740992],
    ['TOINTEGER("-0.9")', 0],
    ['ABS(Q.Decimal)', 12.5],
  ])('%s → %j', async (formula, expected) => expect(await f.value(formula, REC)).toBe(expected));

  it.each([
    'TODECIMAL(Q.Empty)',
    'TODECIMAL(Q.Text)',
    'TODECIMAL("1,5")',
    'TODECIMAL("0x10")',
    'TODECIMAL("Infinity")',
    'TODECIMAL("1e999")',
    'TODECIMAL(TODATETIME(Q.Date))',
  ])('%s fails the record', async (formula) => expect((await f.error(formula, REC)).code).toBe('FML_NOT_A_NUMBER'));
});

describe('to a boolean', () => {
  it.each([
    ['TOBOOLEAN(Q.Null)', false],
    ['TOBOOLEAN(Q.Empty)', false],
    ['TOBOOLEAN(" ON ")', true],
    ['TOBOOLEAN("n")', false],
    ['TOBOOLEAN(-1)', true],
    ['TOBOOLEAN(0.0)', false],
    ['TOBOOLEAN("1")', true],
  ])('%s → %j', async (formula, expected) => expect(await f.value(formula, REC)).toBe(expected));

  it('fails other text', async () => expect((await f.error('TOBOOLEAN(Q.Text)', REC)).code).toBe('FML_NOT_A_BOOLEAN'));
});

describe('to a date', () => {
  it.each([
    ['TODATETIME(Q.Null)', null],
    ['TODATETIME(Q.Date)', '2024-03-05T00:00:00.000Z'],
    ['TODATETIME(Q.Stamp)', '2024-03-05T12:07:09.500Z'],
    ['TODATETIME("2024-03-05 14:07")', '2024-03-05T14:07:00.000Z'],
    ['TODATETIME("2024-03-05T14:07:09.123456789Z")', '2024-03-05T14:07:09.123Z'],
    ['TODATETIME("2024-03-05T14:07:09-0530")', '2024-03-05T19:37:09.000Z'],
    ['TODATETIME("0099-01-01")', '0099-01-01T00:00:00.000Z'],
    ['TODATETIME("Mar 5, 2024", "MMM d, yyyy")', '2024-03-05T00:00:00.000Z'],
    ['TODATETIME("05.03.24 14:07:09.25", "dd.MM.yy HH:mm:ss.ff")', '2024-03-05T14:07:09.250Z'],
    ['TODATETIME("12:30 AM", "hh:mm tt")', '1970-01-01T00:30:00.000Z'],
    ['YEAR(Q.Null)', null],
    ['YEAR(Q.Stamp)', 2024],
    ['ISDATE("2024-13-01")', false],
    ['ISDATE("2024-03-05T24:00")', false],
    ['ISDATE(Q.Int)', false],
  ])('%s → %j', async (formula, expected) => expect(await f.value(formula, REC)).toBe(expected));

  it.each([
    'TODATETIME(Q.Text)',
    'TODATETIME("2023-02-29")',
    'TODATETIME(Q.Int)',
    'TODATETIME("31/02/2024", "dd/MM/yyyy")',
    'YEAR(Q.Bool)',
  ])('%s fails the record', async (formula) => expect((await f.error(formula, REC)).code).toBe('FML_NOT_A_DATE'));
});

describe('values that leave the sandbox', () => {
  it('writes dates as ISO-8601 UTC text with milliseconds', async () =>
    expect(await f.value('DATE(2024, 3, 5)')).toBe('2024-03-05T00:00:00.000Z'));
  it('writes -0 as 0', async () => expect(Object.is(await f.value('-0 * 1'), 0)).toBe(true));
  it('passes connector values through unchanged', async () => {
    expect(await f.value('Q.Decimal', REC)).toBe('12.50');
    expect(await f.value('Q.Big', REC)).toBe('9007199254740993');
  });
});
