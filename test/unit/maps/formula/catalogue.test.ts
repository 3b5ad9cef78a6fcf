import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  arityOf,
  CATALOGUE_LAST_MODIFIED,
  findFunction,
  FORMULA_FUNCTIONS,
  FUNCTION_CATEGORIES,
  functionId,
} from '../../../../src/maps/formula/catalogue.js';

const REQUIRED = [
  'CONCATENATE',
  'LEFT',
  'RIGHT',
  'MID',
  'LEN',
  'UPPER',
  'LOWER',
  'PROPER',
  'TRIM',
  'REPLACE',
  'SUBSTITUTE',
  'FIND',
  'PADLEFT',
  'PADRIGHT',
  'FORMAT',
  'TOSTRING',
  'TOINTEGER',
  'TODECIMAL',
  'TOBOOLEAN',
  'TODATETIME',
  'ISNUMBER',
  'ISDATE',
  'NOW',
  'TODAY',
  'DATEADD',
  'DATEDIFF',
  'DATEPART',
  'YEAR',
  'MONTH',
  'DAY',
  'FORMATDATE',
  'ABS',
  'ROUND',
  'FLOOR',
  'CEILING',
  'MOD',
  'POWER',
  'SQRT',
  'MIN',
  'MAX',
  'IF',
  'ISNULL',
  'ISNULLOREMPTY',
  'ISNULLORDEFAULT',
  'COALESCE',
  'NEWGUID',
  'LOOKUPTABLEVALUE1',
  'LOOKUPTABLEVALUE2',
  'LOOKUPTABLEVALUE1_DEFAULT',
  'LOOKUPTABLEVALUE2_DEFAULT',
  'TRIMLEFT',
  'TRIMRIGHT',
  'STARTSWITH',
  'ENDSWITH',
  'CONTAINS',
  'REVERSE',
  'REPEAT',
  'STRIPCHARS',
  'ISBLANK',
];
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('the formula function catalogue', () => {
  const names = FORMULA_FUNCTIONS.map((f) => f.name);

  it('has at least 80 functions with unique upper-case names', () => {
    expect(FORMULA_FUNCTIONS.length).toBeGreaterThanOrEqual(80);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[A-Z][A-Z0-9_]*$/);
  });

  it('holds every function Maps rely on', () => {
    for (const name of REQUIRED) expect(names, name).toContain(name);
  });

  it('puts each function in a valid category and leaves no category empty', () => {
    for (const f of FORMULA_FUNCTIONS) expect(FUNCTION_CATEGORIES, f.name).toContain(f.category);
    for (const category of FUNCTION_CATEGORIES)
      expect(
        FORMULA_FUNCTIONS.some((f) => f.category === category),
        category,
      ).toBe(true);
  });

  it('gives each function a signature of its own name, a description, a return type and examples', () => {
    for (const f of FORMULA_FUNCTIONS) {
      expect(f.signature, f.name).toMatch(new RegExp(`^${f.name}\\(.*\\)$`));
      expect(f.description.length, f.name).toBeGreaterThan(10);
      expect(f.description, f.name).not.toMatch(/\n/);
      expect(['Text', 'Integer', 'Decimal', 'Boolean', 'DateTime', 'Any']).toContain(f.returns);
      expect(f.examples.length, f.name).toBeGreaterThanOrEqual(1);
      for (const e of f.examples) {
        expect(e.formula.length, f.name).toBeGreaterThan(0);
        expect(e.result === undefined, `${f.name}: ${e.formula}`).toBe(false);
      }
    }
  });

  it('gives each function a stable, unique GUID and the catalogue date', () => {
    const ids = FORMULA_FUNCTIONS.map((f) => f.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const f of FORMULA_FUNCTIONS) {
      expect(f.id).toMatch(GUID);
      expect(f.id).toBe(functionId(f.name));
      expect(f.lastModificationDate).toBe(CATALOGUE_LAST_MODIFIED);
    }
    // Published ids never change: a change here breaks clients that stored them.
    expect(functionId('LEFT')).toBe('4ea92162-d1d3-83d3-9859-3366aaf7513c');
    expect(functionId('NOW')).toBe('44d9f595-4e96-85d6-b84f-cb594b6456e3');
    expect(functionId('left')).toBe(functionId('LEFT'));
    expect(new Date(CATALOGUE_LAST_MODIFIED).toISOString()).toBe(CATALOGUE_LAST_MODIFIED);
  });

  it('derives argument counts from the signatures', () => {
    expect(arityOf('NOW()')).toEqual({ min: 0, max: 0 });
    expect(arityOf('LEFT(text, count)')).toEqual({ min: 2, max: 2 });
    expect(arityOf('ROUND(number, [digits])')).toEqual({ min: 1, max: 2 });
    expect(arityOf('CONCATENATE(text1, [text2, ...])')).toEqual({ min: 1, max: null });
    expect(arityOf('SWITCH(expression, match1, result1, [match2, result2, ...], [default])')).toEqual({
      min: 3,
      max: null,
    });
    expect(findFunction('textjoin')?.arity).toEqual({ min: 3, max: null });
    expect(findFunction('LOOKUPTABLEVALUE1_DEFAULT')?.arity).toEqual({ min: 3, max: 3 });
  });

  it('finds functions by name in any case', () => {
    expect(findFunction('concatenate')?.name).toBe('CONCATENATE');
    expect(findFunction('NoSuchThing')).toBeUndefined();
  });

  it('imports nothing, so that the formula sandbox can load it', () => {
    const source = fs.readFileSync(new URL('../../../../src/maps/formula/catalogue.ts', import.meta.url), 'utf8');
    expect(source).not.toMatch(/^\s*import\s/m);
    expect(source).not.toMatch(/\brequire\(|\bimport\(/);
  });
});
