/**
 * The syntax tree of a formula. Every node keeps the span of formula text it was parsed from, so
 * that compile errors and record errors can point at the place in the formula.
 */

/** A range of formula text: `start` inclusive, `end` exclusive, in UTF-16 code units from 0. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

export type LiteralValue = string | number | boolean | null;

export interface LiteralNode {
  readonly kind: 'literal';
  readonly value: LiteralValue;
  readonly span: Span;
}

/** `Block.Field`: a field of the record a Block produced. */
export interface FieldNode {
  readonly kind: 'field';
  readonly block: string;
  readonly field: string;
  readonly span: Span;
}

export type UnaryOp = '-' | '+' | 'NOT';

export interface UnaryNode {
  readonly kind: 'unary';
  readonly op: UnaryOp;
  readonly operand: Expr;
  readonly span: Span;
  /** Where the operator is written. */
  readonly opSpan: Span;
}

export type ArithmeticOp = '+' | '-' | '*' | '/';
export type ComparisonOp = '=' | '<>' | '<' | '<=' | '>' | '>=';
export type LogicalOp = 'AND' | 'OR';
export type BinaryOp = ArithmeticOp | ComparisonOp | LogicalOp | '&';

export interface BinaryNode {
  readonly kind: 'binary';
  readonly op: BinaryOp;
  readonly left: Expr;
  readonly right: Expr;
  readonly span: Span;
  readonly opSpan: Span;
}

/** A function call; `name` is the catalogue name (upper case) as far as the parser knows it. */
export interface CallNode {
  readonly kind: 'call';
  readonly name: string;
  readonly args: readonly Expr[];
  readonly span: Span;
  readonly nameSpan: Span;
}

export type Expr = LiteralNode | FieldNode | UnaryNode | BinaryNode | CallNode;

/** The reference text of a field, as field lists and examples write it: `Block.Field`. */
export const fieldKey = (block: string, field: string): string => `${block}.${field}`;

/** A field a formula reads: `Block.Field`. */
export interface FieldRef {
  readonly block: string;
  readonly field: string;
}
