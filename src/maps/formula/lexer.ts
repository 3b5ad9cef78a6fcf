/**
 * The formula lexer: text → tokens with spans. A field reference (`Block.Field`, either part may be
 * written `[in brackets]` to hold any character, `]]` standing for `]`) is one token, so that
 * `.` has no other meaning in the language.
 */
import type { Span } from './ast.js';
import { formulaError } from './positions.js';

export type TokenKind = 'number' | 'string' | 'name' | 'field' | 'op' | '(' | ')' | ',' | 'eof';

export interface Token {
  readonly kind: TokenKind;
  /** The source text of the token (for `string`, the decoded text; for `name`, as written). */
  readonly text: string;
  readonly span: Span;
  /** `number`: the value. */
  readonly number?: number;
  /** `field`: the two parts. */
  readonly block?: string;
  readonly field?: string;
}

/** Operators, longest first so that `<=` wins over `<`. */
const OPERATORS = ['<>', '<=', '>=', '&&', '||', '<', '>', '=', '+', '-', '*', '/', '&'] as const;

const NAME_START = /[\p{L}_]/u;
const NAME_PART = /[\p{L}\p{N}_]/u;
const DIGIT = /[0-9]/;
const NUMBER = /^(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/;

/** Splits a formula into tokens; throws FML_SYNTAX at the first character that starts none. */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charAt(i);
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i += 1;
      continue;
    }
    const start = i;
    if (DIGIT.test(c) || (c === '.' && DIGIT.test(text.charAt(i + 1)))) {
      const m = NUMBER.exec(text.slice(i, i + 400));
      const lexeme = m?.[0] ?? c;
      i += lexeme.length;
      if (NAME_PART.test(text.charAt(i)) || text.charAt(i) === '.') {
        throw formulaError('FML_SYNTAX', `"${text.slice(start, i + 1)}" is not a number`, text, { start, end: i + 1 });
      }
      const value = Number(lexeme);
      if (!Number.isFinite(value))
        throw formulaError('FML_SYNTAX', `The number ${lexeme} is too large`, text, { start, end: i });
      tokens.push({ kind: 'number', text: lexeme, span: { start, end: i }, number: value });
      continue;
    }
    if (c === '"') {
      const [value, end] = readQuoted(text, i, '"', 'text');
      i = end;
      tokens.push({ kind: 'string', text: value, span: { start, end } });
      continue;
    }
    if (NAME_START.test(c) || c === '[') {
      const [first, afterFirst] = readName(text, i);
      i = afterFirst;
      if (text.charAt(i) === '.') {
        const fieldStart = i + 1;
        const next = text.charAt(fieldStart);
        if (!NAME_START.test(next) && next !== '[' && !DIGIT.test(next)) {
          throw formulaError('FML_SYNTAX', `Expected a field name after "${text.slice(start, fieldStart)}"`, text, {
            start: fieldStart,
            end: fieldStart + 1,
          });
        }
        const [field, end] = readName(text, fieldStart, true);
        i = end;
        if (text.charAt(i) === '.') {
          throw formulaError(
            'FML_SYNTAX',
            'A field reference has two parts, Block.Field; write a field name with a dot in brackets: Block.[a.b]',
            text,
            { start: i, end: i + 1 },
          );
        }
        tokens.push({ kind: 'field', text: text.slice(start, i), span: { start, end: i }, block: first, field });
        continue;
      }
      if (c === '[') {
        throw formulaError('FML_SYNTAX', 'A name in brackets must be part of a field reference Block.Field', text, {
          start,
          end: i,
        });
      }
      tokens.push({ kind: 'name', text: first, span: { start, end: i } });
      continue;
    }
    if (c === '(' || c === ')' || c === ',') {
      i += 1;
      tokens.push({ kind: c, text: c, span: { start, end: i } });
      continue;
    }
    const op = OPERATORS.find((o) => text.startsWith(o, i));
    if (op) {
      i += op.length;
      tokens.push({ kind: 'op', text: op, span: { start, end: i } });
      continue;
    }
    if (c === "'") {
      throw formulaError('FML_SYNTAX', 'Text is written in double quotes: "text"', text, { start, end: start + 1 });
    }
    throw formulaError('FML_SYNTAX', `Unexpected character "${c}"`, text, { start, end: start + 1 });
  }
  tokens.push({ kind: 'eof', text: '', span: { start: n, end: n } });
  return tokens;
}

/** A plain name, or a `[bracketed]` one; a field part may also start with a digit (`Block.2ndLine`). */
function readName(text: string, start: number, fieldPart = false): [string, number] {
  if (text.charAt(start) === '[') return readQuoted(text, start, ']', 'name');
  let i = start;
  if (!fieldPart && !NAME_START.test(text.charAt(i))) return ['', i];
  while (i < text.length && NAME_PART.test(text.charAt(i))) i += 1;
  return [text.slice(start, i), i];
}

/** Text from an opening delimiter to its closing one, the closing one doubled inside standing for itself. */
function readQuoted(text: string, start: number, close: string, what: 'text' | 'name'): [string, number] {
  let out = '';
  let i = start + 1;
  for (;;) {
    const j = text.indexOf(close, i);
    if (j < 0) {
      const message =
        what === 'text' ? 'The text is not closed: a " is missing' : 'The bracketed name is not closed: a ] is missing';
      throw formulaError('FML_SYNTAX', message, text, { start, end: start + 1 });
    }
    out += text.slice(i, j);
    if (text.charAt(j + 1) === close) {
      out += close;
      i = j + 2;
      continue;
    }
    if (what === 'name' && out.length === 0)
      throw formulaError('FML_SYNTAX', 'A bracketed name cannot be empty', text, { start, end: j + 1 });
    return [out, j + 1];
  }
}
