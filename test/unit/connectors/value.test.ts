import { describe, expect, it } from 'vitest';
import { coerceValue, INVALID, normalizeDatetime, datetimeMillis } from '../../../src/connectors/value.js';
import { recordMaker } from '../../../src/connectors/sdk.js';

describe('the value model', () => {
  it('keeps whole numbers exact: numbers when safe, strings beyond 2^53', () => {
    expect(coerceValue('integer', '42')).toBe(42);
    expect(coerceValue('integer', '9007199254740993')).toBe('9007199254740993');
    expect(coerceValue('integer', '-0009007199254740993')).toBe('-9007199254740993');
    expect(coerceValue('integer', 1.5)).toBe(INVALID);
    expect(coerceValue('integer', '1e3')).toBe(INVALID);
  });

  it('keeps decimals as strings and empty text as null', () => {
    expect(coerceValue('decimal', '12.50')).toBe('12.50');
    expect(coerceValue('decimal', 0.1)).toBe('0.1');
    expect(coerceValue('decimal', 'ten')).toBe(INVALID);
    expect(coerceValue('double', '')).toBeNull();
    expect(coerceValue('string', '')).toBe('');
  });

  it('checks dates and normalises datetimes to ISO-8601 (UTC when zoned)', () => {
    expect(coerceValue('date', '2024-02-29')).toBe('2024-02-29');
    expect(coerceValue('date', '2023-02-29')).toBe(INVALID);
    expect(normalizeDatetime('2024-01-02 03:04')).toBe('2024-01-02T03:04:00');
    expect(normalizeDatetime('2024-01-02T03:04:05.123456+00:00')).toBe('2024-01-02T03:04:05.123456Z');
    expect(normalizeDatetime('2024-01-02T03:04:05+02:00')).toBe('2024-01-02T01:04:05.000Z');
    expect(normalizeDatetime('yesterday')).toBe(INVALID);
    expect(datetimeMillis('2024-01-02T00:00:00')).toBe(Date.UTC(2024, 0, 2));
  });

  it('reads booleans, guids, base64 and JSON text', () => {
    expect(coerceValue('boolean', 'Yes')).toBe(true);
    expect(coerceValue('boolean', 0)).toBe(false);
    expect(coerceValue('boolean', 'maybe')).toBe(INVALID);
    expect(coerceValue('guid', '0B7C1D9E-6F2A-4C1B-9A3E-5D8F7E6C4B2A')).toBe('0b7c1d9e-6f2a-4c1b-9a3e-5d8f7e6c4b2a');
    expect(coerceValue('binary', 'AAEC/w==')).toBe('AAEC/w==');
    expect(coerceValue('binary', 'not base64!')).toBe(INVALID);
    expect(coerceValue('json', '{"a":1}')).toBe('{"a":1}');
    expect(coerceValue('json', '{a:1}')).toBe(INVALID);
  });
});

describe('recordMaker', () => {
  it('makes records with the fields in order from arrays of values', () => {
    const make = recordMaker(['id', 'Full Name', 'say "hi"', 'back\\slash', 'line\u2028sep']);
    const rec = make([1, 'Ann', null, 'x', true]);
    expect(Object.keys(rec)).toEqual(['id', 'Full Name', 'say "hi"', 'back\\slash', 'line\u2028sep']);
    expect(rec).toEqual({ id: 1, 'Full Name': 'Ann', 'say "hi"': null, 'back\\slash': 'x', 'line\u2028sep': true });
    // Each call is a new object.
    expect(make([2, 'Bo', null, 'y', false])).not.toBe(rec);
  });

  it('takes a name that would break out of a string literal as a name, not as code', () => {
    const evil = '"}; globalThis.ferryPwned = true; ({"';
    const rec = recordMaker([evil])(['v']);
    expect(rec[evil]).toBe('v');
    expect((globalThis as Record<string, unknown>)['ferryPwned']).toBeUndefined();
  });

  it('keeps a field named __proto__ as a field, not as the prototype', () => {
    const rec = recordMaker(['id', '__proto__'])([1, 'x']);
    expect(Object.getPrototypeOf(rec)).toBe(Object.prototype);
    expect(Object.keys(rec)).toEqual(['id', '__proto__']);
    expect(Object.getOwnPropertyDescriptor(rec, '__proto__')?.value).toBe('x');
  });
});
