import { describe, expect, it } from 'vitest';
import type { FerryError } from '../../../../src/errors/ferry-error.js';
import { CSV_HEADER, csvRecords, parseLookupCsv } from '../../../../service/lookup-tables/csv.js';

function failure(text: string, header = false): FerryError {
  try {
    parseLookupCsv(text, header);
  } catch (err) {
    return err as FerryError;
  }
  throw new Error('expected API_INVALID_CSV');
}

describe('the Lookup Table CSV', () => {
  it('reads quoted fields, doubled quotes, line breaks in quotes, any line end, empty value2 and a BOM', () => {
    const text = '\ufeffh1,h2\r\n"a,b","say ""x"""\n"multi\r\nline",\r"last",""';
    expect(parseLookupCsv(text, true)).toEqual([
      { value1: 'a,b', value2: 'say "x"' },
      { value1: 'multi\r\nline', value2: '' },
      { value1: 'last', value2: '' },
    ]);
    expect(parseLookupCsv('', true)).toEqual([]);
    expect(parseLookupCsv('x,y', false)).toEqual([{ value1: 'x', value2: 'y' }]);
  });

  it('names the line where a bad record starts, counting skipped empty lines and line breaks in quotes', () => {
    const err = failure('a,1\n\n"b\nc",2\n\n\nd,3,4\ne,5');
    expect(err.code).toBe('API_INVALID_CSV');
    expect(err.message).toMatch(/^Line 7 of the CSV text: it has 3 fields/);
    expect(err.errors).toEqual([{ path: 'body.line.7', message: expect.stringContaining('3 fields') }]);
    expect(failure('a,1\n"open,2\nb,3').message).toMatch(/^Line 2 .*Quote Not Closed/);
    expect(parseLookupCsv('any header\na,1', true)).toEqual([{ value1: 'a', value2: '1' }]);
    expect(failure('a,1\n,2').message).toMatch(/^Line 2 .*value1 is empty/);
    expect(failure(`a,${'é'.repeat(401)}`).message).toMatch(/value2 is longer than 400/);
  });

  it('writes RFC 4180 records with CRLF that read back the same', () => {
    const pairs = [
      { value1: 'plain', value2: '' },
      { value1: 'com,ma', value2: 'quo"te' },
      { value1: 'line\nbreak', value2: 'cr\rlf\r\n' },
      { value1: ' spaced ', value2: 'Zürich 😀' },
    ];
    const text = CSV_HEADER + csvRecords(pairs);
    expect(text).toBe(
      'value1,value2\r\nplain,\r\n"com,ma","quo""te"\r\n"line\nbreak","cr\rlf\r\n"\r\n spaced ,Zürich 😀\r\n',
    );
    expect(parseLookupCsv(text, true)).toEqual(pairs);
  });
});
