/**
 * The lexer and the parser: the tree they build, and the syntax errors with their positions.
 */
import { describe, expect, it } from 'vitest';
import type { Expr } from '../../../../src/maps/formula/ast.js';
import { tokenize } from '../../../../src/maps/formula/lexer.js';
import { MAX_FORMULA_DEPTH, MAX_FORMULA_LENGTH, parseFormula } from '../../../../src/maps/formula/parser.js';

/** The tree as compact text, to compare shapes. */
function show(e: Expr): string {
  switch (e.kind) {
    case 'literal':
      return JSON.stringify(e.value);
    case 'field':
      return `${e.block}.${e.field}`;
    case 'unary':
      return `(${e.op} ${show(e.operand)})`;
    case 'binary':
      return `(${show(e.left)} ${e.op} ${show(e.right)})`;
    case 'call':
      return `${e.name}(${e.args.map(show).join(', ')})`;
  }
}

function syntaxError(formula: string): { code: string; message: string; details: Record<string, unknown> } {
  try {
    parseFormula(formula);
  } catch (err) {
    return err as { code: string; message: string; details: Record<string, unknown> };
  }
  throw new Error(`${formula} parsed`);
}

describe('the lexer', () => {
  it('reads each kind of token with its span', () => {
    const tokens = tokenize('LEFT(Q.Name, 2) & "x""y" <= .5');
    expect(tokens.map((t) => [t.kind, t.text, t.span.start, t.span.end])).toEqual([
      ['name', 'LEFT', 0, 4],
      ['(', '(', 4, 5],
      ['field', 'Q.Name', 5, 11],
      [',', ',', 11, 12],
      ['number', '2', 13, 14],
      [')', ')', 14, 15],
      ['op', '&', 16, 17],
      ['string', 'x"y', 18, 24],
      ['op', '<=', 25, 27],
      ['number', '.5', 28, 30],
      ['eof', '', 30, 30],
    ]);
  });
  it('reads bracketed names with any character, ]] standing for ]', () => {
    const [t] = tokenize('[My Block].[Field [1]]]');
    expect(t).toMatchObject({ kind: 'field', block: 'My Block', field: 'Field [1]' });
  });
  it('reads names with letters beyond ASCII and fields starting with a digit', () => {
    expect(tokenize('Bestellung.Straße')[0]).toMatchObject({ kind: 'field', block: 'Bestellung', field: 'Straße' });
    expect(tokenize('Q.2ndLine')[0]).toMatchObject({ kind: 'field', block: 'Q', field: '2ndLine' });
  });
});

describe('the parser', () => {
  it.each([
    ['1 + 2 * 3', '(1 + (2 * 3))'],
    ['1 - 2 - 3', '((1 - 2) - 3)'],
    ['"a" & 1 + 2', '("a" & (1 + 2))'],
    ['a.b = 1 AND NOT c.d OR e.f', '(((a.b = 1) AND (NOT c.d)) OR e.f)'],
    ['NOT 1 = 2', '(NOT (1 = 2))'],
    ['x.y && z.w || v.u', '((x.y AND z.w) OR v.u)'],
    ['-4.5', '-4.5'],
    ['-Q.N * 2', '((- Q.N) * 2)'],
    ['AND(a.b, c.d, e.f)', '((a.b AND c.d) AND e.f)'],
    ['x.y AND (a.b OR c.d)', '(x.y AND (a.b OR c.d))'],
    ['left("a", 1)', 'LEFT("a", 1)'],
    ['NOW()', 'NOW()'],
    ['1 <> 2', '(1 <> 2)'],
    ['true', 'true'],
    ['Null', 'null'],
  ])('%s', (formula, tree) => {
    expect(show(parseFormula(formula))).toBe(tree);
  });

  it('keeps the span of each node', () => {
    const e = parseFormula('  UPPER(Q.Name) ');
    expect(e).toMatchObject({ kind: 'call', span: { start: 2, end: 15 }, nameSpan: { start: 2, end: 7 } });
  });

  it.each([
    ['', 'The formula is empty', 1, 1],
    ['1 +', 'ends too early', 1, 4],
    ['LEFT("a", 1', 'A ")" is missing', 1, 5],
    ['"abc', 'not closed', 1, 1],
    ['1 2', 'Unexpected "2"', 1, 3],
    ['x', 'Unknown name "x"', 1, 1],
    ['Q.a.b', 'two parts', 1, 4],
    ["'text'", 'double quotes', 1, 1],
    ['1 # 2', 'Unexpected character "#"', 1, 3],
    ['IF(true,\n  1,\n  ) ', 'Unexpected ")"', 3, 3],
    ['12abc', 'is not a number', 1, 1],
    ['1 + NOT x.y', 'NOT applies to a whole condition', 1, 5],
    ['[Block]', 'must be part of a field reference', 1, 1],
  ])('reports %j: %s at line %i, column %i', (formula, message, line, column) => {
    const err = syntaxError(formula);
    expect(err.code).toBe('FML_SYNTAX');
    expect(err.message).toContain(message);
    expect(err.details['position']).toMatchObject({ line, column });
  });

  it('counts offsets from 0 and lines and columns from 1, across line breaks', () => {
    const err = syntaxError('CONCATENATE(\r\n  "a",\n  ?)');
    expect(err.details['position']).toEqual({ offset: 23, line: 3, column: 3, length: 1 });
  });

  it('refuses formulas nested too deeply or too long, without deep recursion', () => {
    const deep = `${'('.repeat(MAX_FORMULA_DEPTH + 5)}1${')'.repeat(MAX_FORMULA_DEPTH + 5)}`;
    expect(syntaxError(deep).code).toBe('FML_TOO_COMPLEX');
    const calls = `${'ABS('.repeat(MAX_FORMULA_DEPTH + 1)}1${')'.repeat(MAX_FORMULA_DEPTH + 1)}`;
    expect(syntaxError(calls).code).toBe('FML_TOO_COMPLEX');
    const chain = Array.from({ length: MAX_FORMULA_DEPTH + 10 }, () => '1').join(' + ');
    expect(syntaxError(chain).code).toBe('FML_TOO_COMPLEX');
    expect(syntaxError('1'.repeat(MAX_FORMULA_LENGTH + 1)).code).toBe('FML_TOO_COMPLEX');
    const ok = Array.from({ length: MAX_FORMULA_DEPTH - 5 }, () => '1').join(' + ');
    expect(() => parseFormula(ok)).not.toThrow();
  });
});
