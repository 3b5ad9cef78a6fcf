/**
 * Compiling formula sets: the checks against the catalogue and the field list, what a compiled set
 * tells the Map runtime, and the safety of the generated program.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { isFerryError } from '../../../../src/errors/ferry-error.js';
import { checkFormula, compileFormulas } from '../../../../src/maps/formula/evaluator.js';
import { sharedEngine } from '../../../helpers/formulas.js';

const f = sharedEngine();
afterAll(() => f.close());

function compileError(formula: string, fields?: string[]) {
  try {
    compileFormulas([formula], fields ? { fields } : {});
  } catch (err) {
    if (isFerryError(err)) return err;
    throw err;
  }
  throw new Error(`${formula} compiled`);
}

describe('compile errors', () => {
  it('names an unknown function, suggests the nearest, and points at the name', () => {
    const err = compileError('1 + LEFTT("a", 1)');
    expect(err.code).toBe('FML_UNKNOWN_FUNCTION');
    expect(err.message).toContain('did you mean LEFT?');
    expect(err.details).toMatchObject({ function: 'LEFTT', position: { offset: 4, line: 1, column: 5, length: 5 } });
    expect(compileError('NOSUCHTHING(1)').message).not.toContain('did you mean');
    expect(compileError('constructor(1)').code).toBe('FML_UNKNOWN_FUNCTION');
    expect(compileError('__proto__(1)').code).toBe('FML_UNKNOWN_FUNCTION');
  });

  it('checks the argument count against the signature', () => {
    const err = compileError('LEFT("abc")');
    expect(err.code).toBe('FML_ARGUMENT_COUNT');
    expect(err.message).toBe('LEFT takes 2 arguments (LEFT(text, count)), not 1 (line 1, column 1)');
    expect(compileError('ROUND(1, 2, 3)').message).toContain('takes 1 to 2 arguments');
    expect(compileError('CONCATENATE()').message).toContain('takes at least 1 argument (');
    expect(compileError('NOW(1)').message).toContain('takes 0 arguments');
    expect(() =>
      compileFormulas(['SWITCH(1, 1, "a", 2, "b", "c")', 'TEXTJOIN(",", true, "a", "b", "c")']),
    ).not.toThrow();
  });

  it('checks field references when given the fields that exist, suggesting a differently-cased name', () => {
    const fields = ['Query_Account.Name', 'Query_Account.City'];
    expect(() => compileFormulas(['Query_Account.Name & Query_Account.City'], { fields })).not.toThrow();
    const err = compileError('UPPER(Query_Account.name)', fields);
    expect(err.code).toBe('FML_UNKNOWN_FIELD');
    expect(err.message).toContain('did you mean Query_Account.Name?');
    expect(err.details).toMatchObject({ block: 'Query_Account', field: 'name', position: { column: 7, length: 18 } });
    expect(() => compileFormulas(['Q.X'], { fields: [{ block: 'Q', field: 'X' }] })).not.toThrow();
  });

  it('names the formula of a set that failed', () => {
    try {
      compileFormulas({ Name: 'UPPER(Q.Name)', City: 'LOWER(' });
      expect.unreachable();
    } catch (err) {
      expect(err).toMatchObject({ code: 'FML_SYNTAX', details: { formula: 'City' } });
      expect((err as Error).message).toMatch(/^Formula City: /);
    }
  });

  it('answers compile errors as plain data for validators', () => {
    expect(checkFormula('UPPER(Q.Name)')).toBeNull();
    expect(checkFormula('UPPER(')).toMatchObject({
      code: 'FML_SYNTAX',
      kind: 'config',
      details: { position: { line: 1, column: 7 } },
    });
  });
});

describe('a compiled set', () => {
  it('lists the fields it reads, once, in order, and per formula', () => {
    const c = compileFormulas([
      { key: 'a', formula: 'Q.B & Q.A & Q.B' },
      { key: 'b', formula: 'IF(ISNULL(L.X), Q.A, "")', blockId: 'blk-1' },
    ]);
    expect(c.fields).toEqual([
      { block: 'Q', field: 'B' },
      { block: 'Q', field: 'A' },
      { block: 'L', field: 'X' },
    ]);
    expect(c.formulas[1]).toMatchObject({
      key: 'b',
      blockId: 'blk-1',
      fields: [
        { block: 'L', field: 'X' },
        { block: 'Q', field: 'A' },
      ],
    });
  });

  it('lists the Lookup Tables its lookups name', () => {
    const c = compileFormulas(['LOOKUPTABLEVALUE2("States", Q.S)', 'LOOKUPTABLEVALUE1_DEFAULT("Codes", Q.C, null)']);
    expect(c.lookupTables).toEqual(['States', 'Codes']);
    expect(c.dynamicLookupTables).toBe(false);
    expect(compileFormulas(['LOOKUPTABLEVALUE2(Q.Table, Q.S)']).dynamicLookupTables).toBe(true);
  });

  it('keys formulas by index when given as text', () => {
    expect(compileFormulas(['1', '2']).formulas.map((x) => x.key)).toEqual(['0', '1']);
  });
});

describe('the generated program', () => {
  it('carries text only as JSON string literals and fields only as indices', () => {
    const evil = '"); globalThis.pwned = 1; ("';
    const c = compileFormulas([
      `CONCATENATE(${JSON.stringify(evil).replace(/\\"/g, '""')}, [x"); process.exit(1); ("].[y])`,
    ]);
    expect(c.source).not.toContain('process.exit(1); (');
    expect(c.source).toContain(JSON.stringify(evil));
    expect(c.source).toContain('c0[i]');
    expect(c.source).not.toMatch(/\beval\b|new Function/);
  });

  it('evaluates text that looks like code as text', async () => {
    expect(await f.value('"); throw 1; ("')).toBe('); throw 1; (');
    expect(await f.value('"${process}" & "`"')).toBe('${process}`');
    expect(await f.value('Q.[constructor] & Q.[__proto__] & Q.[toString]', {})).toBe('');
  });
});
