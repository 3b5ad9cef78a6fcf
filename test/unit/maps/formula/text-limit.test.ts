/**
 * The text limit: every function of the catalogue that can answer text fails the record with
 * FML_TEXT_TOO_LONG when its answer would pass the limit — never FML_INTERNAL, never the memory
 * limit — through the real engine and sandbox. REGEXREPLACE, which expands `$` patterns itself to
 * count the result's length as it goes, answers exactly what String.prototype.replace does.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { FORMULA_FUNCTIONS } from '../../../../src/maps/formula/catalogue.js';
import { SPECIAL_FORMS } from '../../../../src/maps/formula/compiler.js';
import { FormulaEngine } from '../../../../src/maps/formula/evaluator.js';
import { LIBRARY_GLOBAL } from '../../../../src/maps/formula/library/index.js';
import { evaluateOne, lookupTablesOf, recordOf } from '../../../helpers/formulas.js';

const LIMIT = 1000;
/** A field over the limit: for functions that never lengthen a text, the only way past it. */
const LONG = 'a'.repeat(LIMIT + 1);
const FIELDS = { 'Q.Long': LONG, 'Q.B64': Buffer.from('a'.repeat(1200)).toString('base64') };
const TABLES = {
  T: [
    ['k', LONG],
    [`${LONG}b`, 'k2'],
  ] as [string, string][],
};

/**
 * One formula per function whose answer passes the limit; `limit` 1 where the answer has a small
 * fixed bound (a GUID, a month's name). Functions that build text are driven past it from inputs
 * within it, where they can be.
 */
const CASES: Record<string, { formula: string; limit?: number }> = {
  CONCATENATE: { formula: 'CONCATENATE(REPEAT("a", 600), REPEAT("b", 600))' },
  LEFT: { formula: 'LEFT(Q.Long, 5000)' },
  RIGHT: { formula: 'RIGHT(Q.Long, 5000)' },
  MID: { formula: 'MID(Q.Long, 1, 5000)' },
  UPPER: { formula: 'UPPER(REPEAT("ß", 600))' },
  LOWER: { formula: 'LOWER(REPEAT("İ", 600))' },
  PROPER: { formula: 'PROPER(REPEAT("ß ", 500))' },
  TRIM: { formula: 'TRIM(Q.Long)' },
  TRIMLEFT: { formula: 'TRIMLEFT(Q.Long)' },
  TRIMRIGHT: { formula: 'TRIMRIGHT(Q.Long)' },
  REPLACE: { formula: 'REPLACE(REPEAT("a", 600), 1, 0, REPEAT("b", 600))' },
  SUBSTITUTE: { formula: 'SUBSTITUTE(REPEAT("a", 600), "a", "bb")' },
  PADLEFT: { formula: 'PADLEFT("a", 1001)' },
  PADRIGHT: { formula: 'PADRIGHT("a", 1001, "xy")' },
  FORMAT: { formula: 'FORMAT(1e300, REPEAT("x", 800) & "0")' },
  REVERSE: { formula: 'REVERSE(Q.Long)' },
  REPEAT: { formula: 'REPEAT("ab", 501)' },
  STRIPCHARS: { formula: 'STRIPCHARS(Q.Long, "b")' },
  CHAR: { formula: 'CHAR(128512)', limit: 1 },
  CLEAN: { formula: 'CLEAN(Q.Long)' },
  TEXTJOIN: { formula: 'TEXTJOIN(",", true, REPEAT("a", 500), REPEAT("b", 500))' },
  SPLITPART: { formula: 'SPLITPART(Q.Long, ",", 1)' },
  REGEXREPLACE: { formula: 'REGEXREPLACE(REPEAT("a", 600), "a", "bb")' },
  REGEXEXTRACT: { formula: 'REGEXEXTRACT(Q.Long, "a+")' },
  URLENCODE: { formula: 'URLENCODE(REPEAT(" ", 400))' },
  URLDECODE: { formula: 'URLDECODE(Q.Long)' },
  HTMLENCODE: { formula: 'HTMLENCODE(REPEAT("&", 201))' },
  FORMATDATE: { formula: 'FORMATDATE("2024-09-01", REPEAT("MMMM ", 120))' },
  MONTHNAME: { formula: 'MONTHNAME("2024-09-01")', limit: 1 },
  DAYNAME: { formula: 'DAYNAME("2024-09-01")', limit: 1 },
  TOSTRING: { formula: 'TOSTRING(Q.Long)' },
  TOBASE64: { formula: 'TOBASE64(REPEAT("a", 900))' },
  FROMBASE64: { formula: 'FROMBASE64(Q.B64)' },
  TOHEX: { formula: 'TOHEX(255)', limit: 1 },
  LOOKUPTABLEVALUE1: { formula: 'LOOKUPTABLEVALUE1("T", "k2")' },
  LOOKUPTABLEVALUE2: { formula: 'LOOKUPTABLEVALUE2("T", "k")' },
  LOOKUPTABLEVALUE1_DEFAULT: { formula: 'LOOKUPTABLEVALUE1_DEFAULT("T", "none", Q.Long)' },
  LOOKUPTABLEVALUE2_DEFAULT: { formula: 'LOOKUPTABLEVALUE2_DEFAULT("T", "k", "short")' },
  NEWGUID: { formula: 'NEWGUID()', limit: 1 },
  NULLIF: { formula: 'NULLIF(Q.Long, "b")' },
  // Written inline by the compiler (no library entry): the formula's answer is checked.
  IF: { formula: 'IF(true, Q.Long)' },
  COALESCE: { formula: 'COALESCE(null, Q.Long)' },
  CHOOSE: { formula: 'CHOOSE(2, "a", Q.Long)' },
  SWITCH: { formula: 'SWITCH(1, 1, Q.Long, "b")' },
  IFERROR: { formula: 'IFERROR(1 / 0, Q.Long)' },
};

const engines = new Map<number, Promise<FormulaEngine>>();
const engineFor = (limit: number): Promise<FormulaEngine> => {
  let engine = engines.get(limit);
  if (!engine) {
    engine = FormulaEngine.create({ maxTextLength: limit, lookupTables: lookupTablesOf(TABLES) });
    engines.set(limit, engine);
  }
  return engine;
};
let defaults: FormulaEngine | undefined;
afterAll(async () => {
  for (const engine of engines.values()) (await engine).dispose();
  defaults?.dispose();
});

const textFunctions = FORMULA_FUNCTIONS.filter((f) => f.returns === 'Text' || f.returns === 'Any').map((f) => f.name);

describe('every function that answers text checks its length', () => {
  it('has a case for every catalogue function that answers text (or whatever its arguments are)', () => {
    expect(Object.keys(CASES).sort()).toEqual([...textFunctions].sort());
  });

  it.each(textFunctions)('%s', async (name) => {
    const c = CASES[name];
    if (!c) throw new Error(`no case for ${name}`);
    const out = await evaluateOne(await engineFor(c.limit ?? LIMIT), c.formula, recordOf(FIELDS));
    expect(out).toMatchObject({ error: { code: 'FML_TEXT_TOO_LONG' } });
    // A library function names itself; an inline form's answer is checked as the formula's.
    if (!SPECIAL_FORMS.has(name)) expect(out).toMatchObject({ error: { details: { function: name } } });
  });

  it('accepts a text of exactly the limit', async () => {
    const engine = await engineFor(LIMIT);
    for (const formula of [
      'TEXTJOIN(",", true, REPEAT("a", 500), REPEAT("b", 499))',
      'REGEXREPLACE(REPEAT("a", 500), "a", "bb")',
      'HTMLENCODE(REPEAT("&", 200))',
      'REPEAT("a", 600) & REPEAT("b", 400)',
    ]) {
      const out = await evaluateOne(engine, formula);
      expect(out, formula).toMatchObject({ value: expect.any(String) });
      expect((out as { value: string }).value.length, formula).toBe(LIMIT);
    }
  });

  it('fails a REGEXREPLACE that expands past the default limit with FML_TEXT_TOO_LONG, before building it', async () => {
    defaults = await FormulaEngine.create();
    // A million matches × 600 characters: 600 million, beyond V8's longest string.
    const out = await evaluateOne(defaults, 'REGEXREPLACE(REPEAT("a", 1000000), "a", REPEAT("b", 600))');
    expect(out).toMatchObject({ error: { code: 'FML_TEXT_TOO_LONG', details: { function: 'REGEXREPLACE' } } });
    // A replacement of a million characters: V8 itself refused the result ("Invalid string length", FML_INTERNAL).
    const huge = await evaluateOne(defaults, 'REGEXREPLACE(REPEAT("a", 1000), "a", REPEAT("b", 1000000))');
    expect(huge).toMatchObject({ error: { code: 'FML_TEXT_TOO_LONG', details: { function: 'REGEXREPLACE' } } });
    const viaGroups = await evaluateOne(defaults, 'REGEXREPLACE(REPEAT("ab", 500000), "(a)(b)", "$2$1$`")');
    expect(viaGroups).toMatchObject({ error: { code: 'FML_TEXT_TOO_LONG', details: { function: 'REGEXREPLACE' } } });
    // The isolate survived: no memory-limit rebuild.
    expect(defaults.isolatesCreated).toBe(1);
  });
});

describe('REGEXREPLACE expands $ patterns as String.prototype.replace does, and counts them exactly', () => {
  const CASES: Array<[text: string, pattern: string, replacement: string]> = [
    ['a-b-c', '-', '++'],
    ['abc', 'b', '[$&]'],
    ['abc', 'b', "[$`|$']"],
    ['abc', 'b', '$$'],
    ['abc', 'b', '$'],
    ['abc', 'b', 'x$'],
    ['abc', 'b', '$0$00$1$9'],
    ['abc', '(b)', '$1$01$10$2$0'],
    ['abcdefghijkl', '(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)', '$11$10$1$12$011$99'],
    ['2024-03-05', '(?<y>\\d+)-(?<m>\\d+)-(?<d>\\d+)', '$<d>/$<m>/$<y> $<none> $<y $1'],
    ['abc', '(b)', '$<x>'],
    ['abc', '(x)?b', '[$1]'],
    ['aaa', 'a*', '<$&>'],
    ['héllo wörld', '\\w+', '$&!'],
    ['a.b.c', '\\.', '$`'],
    ['a.b.c', '\\.', "$'$'"],
  ];
  // The limit set to the result's exact length, then one less: the walk that counts the result
  // runs (the quick bound does not hold), and its count must be exact.
  it.each(CASES)('%j with %j and %j', async (text, pattern, replacement) => {
    const engine = await engineFor(LIMIT);
    const expected = text.replace(new RegExp(pattern, 'g'), replacement);
    const record = recordOf({ 'Q.T': text, 'Q.P': pattern, 'Q.R': replacement });
    try {
      await engine.sandbox.evaluateScript(`${LIBRARY_GLOBAL}.maxText = ${expected.length}`);
      expect(await evaluateOne(engine, 'REGEXREPLACE(Q.T, Q.P, Q.R)', record)).toEqual({ value: expected });
      await engine.sandbox.evaluateScript(`${LIBRARY_GLOBAL}.maxText = ${expected.length - 1}`);
      expect(await evaluateOne(engine, 'REGEXREPLACE(Q.T, Q.P, Q.R)', record)).toMatchObject({
        error: { code: 'FML_TEXT_TOO_LONG' },
      });
    } finally {
      await engine.sandbox.evaluateScript(`${LIBRARY_GLOBAL}.maxText = ${LIMIT}`);
    }
  });
});
