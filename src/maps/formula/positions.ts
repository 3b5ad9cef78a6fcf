/**
 * Positions in formula text, and the compile errors that carry them. Offsets count UTF-16 code
 * units from 0; lines and columns count from 1 (a column is an offset within its line, plus one).
 * Record errors from the sandbox carry only an offset: the host turns it into a position here.
 */
import type { ErrorCode } from '../../errors/codes.js';
import { FerryError } from '../../errors/ferry-error.js';
import type { Span } from './ast.js';

/** Where in a formula something is: `details.position` of every formula error. */
export interface FormulaPosition {
  /** 0-based offset in UTF-16 code units. */
  readonly offset: number;
  /** 1-based line. */
  readonly line: number;
  /** 1-based column within the line. */
  readonly column: number;
  /** How many code units the offending part spans (at least 1 unless the formula is empty). */
  readonly length: number;
}

/** The position of `offset` (clamped to the text) in `text`. */
export function positionAt(text: string, offset: number, length = 1): FormulaPosition {
  const at = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < at; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 || (c === 13 && text.charCodeAt(i + 1) !== 10)) {
      line += 1;
      lineStart = i + 1;
    }
  }
  return { offset: at, line, column: at - lineStart + 1, length: Math.max(0, Math.min(length, text.length - at)) };
}

/** The position a span starts at. */
export const positionOf = (text: string, span: Span): FormulaPosition =>
  positionAt(text, span.start, Math.max(1, span.end - span.start));

/** "line 1, column 5", as messages write a position. */
export const describePosition = (p: FormulaPosition): string => `line ${p.line}, column ${p.column}`;

/** A compile-time formula error (syntax, unknown function, argument count, unknown field, too complex). */
export function formulaError(
  code: ErrorCode,
  message: string,
  text: string,
  span: Span,
  extra: Record<string, unknown> = {},
): FerryError {
  const position = positionOf(text, span);
  return new FerryError(code, `${message} (${describePosition(position)})`, { details: { ...extra, position } });
}

/**
 * Two lines that show where a position is: the formula line, and a caret line under it. Used by
 * `ferry formula eval` and useful in logs.
 */
export function caretLines(text: string, position: FormulaPosition): string {
  const lines = text.split(/\r\n|\r|\n/);
  const line = lines[position.line - 1] ?? '';
  const width = Math.max(1, Math.min(position.length, line.length - position.column + 1));
  return `${line}\n${' '.repeat(position.column - 1)}${'^'.repeat(width)}`;
}
