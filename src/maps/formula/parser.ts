/**
 * The formula parser: tokens → syntax tree, by recursive descent over the precedence levels
 *
 *   OR / ||   <   AND / &&   <   NOT   <   = <> < <= > >=   <   &   <   + -   <   * /   <   unary - +
 *
 * (loosest first; all binary operators group left to right). `AND(a, b, …)` and `OR(a, b, …)` are
 * accepted as spelled-out forms of the operators. The parser bounds the size and the nesting of a
 * formula, so that neither it, the compiler nor the sandbox's own parser can be driven into deep
 * recursion by a hostile formula.
 */
import type { BinaryOp, Expr, Span } from './ast.js';
import { tokenize, type Token } from './lexer.js';
import { formulaError } from './positions.js';

/** The longest formula accepted, in UTF-16 code units. */
export const MAX_FORMULA_LENGTH = 100_000;
/** The deepest nesting of operators and calls accepted (spreadsheets allow 64 nested calls). */
export const MAX_FORMULA_DEPTH = 200;

const COMPARISONS: Record<string, BinaryOp> = { '=': '=', '<>': '<>', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };
const KEYWORDS = new Set(['AND', 'OR', 'NOT', 'TRUE', 'FALSE', 'NULL']);

/** Parses one formula; throws FML_SYNTAX or FML_TOO_COMPLEX with the position of the problem. */
export function parseFormula(text: string): Expr {
  if (text.length > MAX_FORMULA_LENGTH) {
    throw formulaError('FML_TOO_COMPLEX', `The formula is longer than ${MAX_FORMULA_LENGTH} characters`, text, {
      start: MAX_FORMULA_LENGTH,
      end: MAX_FORMULA_LENGTH + 1,
    });
  }
  return new Parser(text, tokenize(text)).parse();
}

class Parser {
  #i = 0;
  /** Depth of each node built so far: the height of its subtree. */
  readonly #depth = new WeakMap<Expr, number>();

  constructor(
    readonly text: string,
    readonly tokens: readonly Token[],
  ) {}

  parse(): Expr {
    if (this.peek().kind === 'eof') throw this.error('The formula is empty', this.peek().span);
    const expr = this.parseOr();
    const rest = this.peek();
    if (rest.kind !== 'eof')
      throw this.error(`Unexpected ${describe(rest)}: an operator or the end of the formula was expected`, rest.span);
    return expr;
  }

  // ── precedence levels ───────────────────────────────────────────────────────────────────

  private parseOr(): Expr {
    let left = this.parseAnd();
    for (let t = this.peek(); this.isKeyword(t, 'OR') || isOp(t, '||'); t = this.peek()) {
      this.next();
      left = this.binary('OR', left, this.parseAnd(), t.span);
    }
    return left;
  }

  private parseAnd(): Expr {
    let left = this.parseNot();
    for (let t = this.peek(); this.isKeyword(t, 'AND') || isOp(t, '&&'); t = this.peek()) {
      this.next();
      left = this.binary('AND', left, this.parseNot(), t.span);
    }
    return left;
  }

  private parseNot(): Expr {
    const t = this.peek();
    if (this.isKeyword(t, 'NOT')) {
      this.next();
      const operand = this.nested(() => this.parseNot());
      return this.node(
        { kind: 'unary', op: 'NOT', operand, span: { start: t.span.start, end: operand.span.end }, opSpan: t.span },
        [operand],
      );
    }
    return this.parseComparison();
  }

  private parseComparison(): Expr {
    let left = this.parseConcat();
    for (let t = this.peek(); t.kind === 'op' && COMPARISONS[t.text] !== undefined; t = this.peek()) {
      this.next();
      left = this.binary(COMPARISONS[t.text] as BinaryOp, left, this.parseConcat(), t.span);
    }
    return left;
  }

  private parseConcat(): Expr {
    let left = this.parseAdditive();
    for (let t = this.peek(); isOp(t, '&'); t = this.peek()) {
      this.next();
      left = this.binary('&', left, this.parseAdditive(), t.span);
    }
    return left;
  }

  private parseAdditive(): Expr {
    let left = this.parseMultiplicative();
    for (let t = this.peek(); isOp(t, '+') || isOp(t, '-'); t = this.peek()) {
      this.next();
      left = this.binary(t.text as BinaryOp, left, this.parseMultiplicative(), t.span);
    }
    return left;
  }

  private parseMultiplicative(): Expr {
    let left = this.parseUnary();
    for (let t = this.peek(); isOp(t, '*') || isOp(t, '/'); t = this.peek()) {
      this.next();
      left = this.binary(t.text as BinaryOp, left, this.parseUnary(), t.span);
    }
    return left;
  }

  private parseUnary(): Expr {
    const t = this.peek();
    if (isOp(t, '-') || isOp(t, '+')) {
      this.next();
      const operand = this.nested(() => this.parseUnary());
      const span = { start: t.span.start, end: operand.span.end };
      // A signed number is a literal, so that `-4.5` costs nothing at run time.
      if (operand.kind === 'literal' && typeof operand.value === 'number') {
        return this.node({ kind: 'literal', value: t.text === '-' ? -operand.value : operand.value, span }, []);
      }
      return this.node({ kind: 'unary', op: t.text as '-' | '+', operand, span, opSpan: t.span }, [operand]);
    }
    return this.parsePrimary();
  }

  private parsePrimary(): Expr {
    const t = this.next();
    switch (t.kind) {
      case 'number':
        return this.node({ kind: 'literal', value: t.number as number, span: t.span }, []);
      case 'string':
        return this.node({ kind: 'literal', value: t.text, span: t.span }, []);
      case 'field':
        return this.node({ kind: 'field', block: t.block as string, field: t.field as string, span: t.span }, []);
      case '(': {
        const inner = this.nested(() => this.parseOr());
        this.expect(')', t);
        return inner;
      }
      case 'name':
        return this.parseName(t);
      case 'eof':
        throw this.error('The formula ends too early: a value was expected', t.span);
      default:
        throw this.error(`Unexpected ${describe(t)}: a value was expected`, t.span);
    }
  }

  private parseName(t: Token): Expr {
    const upper = t.text.toUpperCase();
    const call = this.peek().kind === '(';
    if (!call && KEYWORDS.has(upper)) {
      if (upper === 'TRUE' || upper === 'FALSE')
        return this.node({ kind: 'literal', value: upper === 'TRUE', span: t.span }, []);
      if (upper === 'NULL') return this.node({ kind: 'literal', value: null, span: t.span }, []);
      if (upper === 'NOT')
        throw this.error('NOT applies to a whole condition: put it in parentheses here, e.g. (NOT x)', t.span);
      throw this.error(`Unexpected ${upper}: a value was expected`, t.span);
    }
    if (!call) {
      throw this.error(`Unknown name "${t.text}": write a field as Block.Field and a function call as NAME(…)`, t.span);
    }
    const open = this.next();
    const args: Expr[] = [];
    if (this.peek().kind !== ')') {
      for (;;) {
        args.push(this.nested(() => this.parseOr()));
        if (this.peek().kind !== ',') break;
        this.next();
      }
    }
    const close = this.expect(')', open);
    const span = { start: t.span.start, end: close.span.end };
    if (upper === 'AND' || upper === 'OR') return this.logicalCall(upper, args, t.span, span);
    if (upper === 'NOT') {
      if (args.length !== 1) throw this.error(`NOT takes one condition, not ${args.length}`, t.span);
      const operand = args[0] as Expr;
      return this.node({ kind: 'unary', op: 'NOT', operand, span, opSpan: t.span }, [operand]);
    }
    return this.node({ kind: 'call', name: upper, args, span, nameSpan: t.span }, args);
  }

  /** `AND(a, b, c)` is `a AND b AND c`. */
  private logicalCall(op: 'AND' | 'OR', args: Expr[], nameSpan: Span, span: Span): Expr {
    if (args.length < 2) throw this.error(`${op}(…) joins at least two conditions`, nameSpan);
    let acc = args[0] as Expr;
    for (const arg of args.slice(1))
      acc = this.node({ kind: 'binary', op, left: acc, right: arg, span, opSpan: nameSpan }, [acc, arg]);
    return acc;
  }

  // ── helpers ─────────────────────────────────────────────────────────────────────────────

  private binary(op: BinaryOp, left: Expr, right: Expr, opSpan: Span): Expr {
    return this.node(
      { kind: 'binary', op, left, right, span: { start: left.span.start, end: right.span.end }, opSpan },
      [left, right],
    );
  }

  /** Records a node's depth and refuses trees nested deeper than {@link MAX_FORMULA_DEPTH}. */
  private node(expr: Expr, children: readonly Expr[]): Expr {
    let depth = 1;
    for (const child of children) depth = Math.max(depth, (this.#depth.get(child) ?? 1) + 1);
    if (depth > MAX_FORMULA_DEPTH) {
      throw formulaError(
        'FML_TOO_COMPLEX',
        `The formula nests deeper than ${MAX_FORMULA_DEPTH} levels of operators and calls; split it`,
        this.text,
        expr.span,
      );
    }
    this.#depth.set(expr, depth);
    return expr;
  }

  /** Bounds the parser's own recursion before it descends (parentheses, arguments, prefixes). */
  #nesting = 0;
  private nested<T>(parse: () => T): T {
    this.#nesting += 1;
    if (this.#nesting > MAX_FORMULA_DEPTH) {
      const t = this.peek();
      throw formulaError(
        'FML_TOO_COMPLEX',
        `The formula nests deeper than ${MAX_FORMULA_DEPTH} levels of operators and calls; split it`,
        this.text,
        t.span,
      );
    }
    try {
      return parse();
    } finally {
      this.#nesting -= 1;
    }
  }

  private expect(kind: ')', opener: Token): Token {
    const t = this.peek();
    if (t.kind === kind) return this.next();
    if (t.kind === 'eof') throw this.error('A ")" is missing for this "("', opener.span);
    throw this.error(`Unexpected ${describe(t)}: "," or ")" was expected`, t.span);
  }

  private isKeyword(t: Token, word: string): boolean {
    return t.kind === 'name' && t.text.toUpperCase() === word;
  }

  private peek(): Token {
    return this.tokens[this.#i] as Token;
  }

  private next(): Token {
    const t = this.tokens[this.#i] as Token;
    if (t.kind !== 'eof') this.#i += 1;
    return t;
  }

  private error(message: string, span: Span) {
    return formulaError('FML_SYNTAX', message, this.text, span);
  }
}

const isOp = (t: Token, op: string): boolean => t.kind === 'op' && t.text === op;

function describe(t: Token): string {
  switch (t.kind) {
    case 'eof':
      return 'end of the formula';
    case 'string':
      return `text "${t.text.length > 20 ? `${t.text.slice(0, 20)}…` : t.text}"`;
    case 'name':
      return `"${t.text}"`;
    default:
      return `"${t.text}"`;
  }
}
