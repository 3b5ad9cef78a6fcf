/**
 * The formula compiler: checks syntax trees against the catalogue and writes one JavaScript
 * program per formula set, for the sandbox.
 *
 * The program is generated from the tree, never from formula text: names of functions come from
 * the catalogue (and become `F_NAME` constants), fields become array indices (`r[3]`), text
 * becomes JSON string literals. Each formula is written twice:
 *
 *   f<j>(i)  fast: direct calls of the library, bound to local constants;
 *   t<j>(i)  traced: every call that can fail goes through `C(span, name, fn, args)`, which stamps
 *            the error with the place in the formula. It runs only for a record the fast version
 *            failed, to find where.
 *
 * The program's `run(input, now, s0..s3, only)` reads a batch of records by columns (JSON in
 * chunks, see wire.ts: `[n, column of field 0, column of field 1, …]` in the order of `fields`;
 * field k of record i is `c<k>[i]`), evaluates every formula (or only formula `only`) for each
 * record, and answers JSON `[[column of formula 0, …], errors]`, in chunks too; a failed value is
 * null.
 */
import { findFunction, FORMULA_FUNCTIONS } from './catalogue.js';
import type { Expr, FieldNode, FieldRef, Span } from './ast.js';
import { fieldKey } from './ast.js';
import { LIBRARY_GLOBAL } from './library/index.js';
import { WIRE_CHUNK } from './wire.js';
import { formulaError } from './positions.js';
import { closestName } from '../../util/closest-name.js';

/** A field a formula reads. */
export type { FieldRef } from './ast.js';

/**
 * Functions whose arguments are evaluated only when needed, so they are written inline rather
 * than called: the library has no entry for them.
 */
export const SPECIAL_FORMS: ReadonlySet<string> = new Set(['IF', 'IFERROR', 'COALESCE', 'SWITCH', 'CHOOSE']);

const CALLABLE = /^[A-Z][A-Z0-9_]*$/;
const LOOKUP_FUNCTIONS = new Set([
  'LOOKUPTABLEVALUE1',
  'LOOKUPTABLEVALUE2',
  'LOOKUPTABLEVALUE1_DEFAULT',
  'LOOKUPTABLEVALUE2_DEFAULT',
]);

/** Library members the programs bind, by local name. */
const HELPERS = {
  NUM: 'num',
  INT: 'int',
  BOOL: 'bool',
  OUT: 'out',
  C: 'call',
  ADD: 'add',
  SUB: 'sub',
  MUL: 'mul',
  DIV: 'div',
  NEG: 'neg',
  PLUS: 'plus',
  CAT: 'cat',
  EQ: 'eq',
  NE: 'ne',
  LT: 'lt',
  LE: 'le',
  GT: 'gt',
  GE: 'ge',
} as const;

const BINARY_HELPER: Record<string, keyof typeof HELPERS> = {
  '+': 'ADD',
  '-': 'SUB',
  '*': 'MUL',
  '/': 'DIV',
  '&': 'CAT',
  '=': 'EQ',
  '<>': 'NE',
  '<': 'LT',
  '<=': 'LE',
  '>': 'GT',
  '>=': 'GE',
};

/** One formula, checked: what the compiler knows about it. */
export interface CheckedFormula {
  readonly text: string;
  readonly ast: Expr;
  /** Every span an error can point at; traced programs refer to them by index. Index 0 is the whole formula. */
  readonly spans: readonly Span[];
}

/** Checks a tree against the catalogue and, when given, the fields that exist. Throws the first problem. */
export function checkTree(text: string, ast: Expr, knownFields?: ReadonlySet<string>): void {
  const visit = (e: Expr): void => {
    switch (e.kind) {
      case 'literal':
        return;
      case 'field':
        if (knownFields && !knownFields.has(fieldKey(e.block, e.field))) throw unknownField(text, e, knownFields);
        return;
      case 'unary':
        return visit(e.operand);
      case 'binary':
        visit(e.left);
        return visit(e.right);
      case 'call': {
        const fn = findFunction(e.name);
        if (!fn) {
          const hint = closestName(e.name, CATALOGUE_NAMES);
          throw formulaError(
            'FML_UNKNOWN_FUNCTION',
            `Unknown function ${e.name}${hint ? `; did you mean ${hint}?` : ''}`,
            text,
            e.nameSpan,
            { function: e.name },
          );
        }
        const { min, max } = fn.arity;
        const n = e.args.length;
        if (n < min || (max !== null && n > max)) {
          const wanted = max === null ? `at least ${min}` : min === max ? `${min}` : `${min} to ${max}`;
          throw formulaError(
            'FML_ARGUMENT_COUNT',
            `${fn.name} takes ${wanted} argument${wanted.endsWith(' 1') || wanted === '1' ? '' : 's'} (${fn.signature}), not ${n}`,
            text,
            e.nameSpan,
            {
              function: fn.name,
            },
          );
        }
        e.args.forEach(visit);
        return;
      }
    }
  };
  visit(ast);
}

function unknownField(text: string, e: FieldNode, known: ReadonlySet<string>) {
  const wanted = fieldKey(e.block, e.field).toLowerCase();
  const sameButCase = [...known].find((k) => k.toLowerCase() === wanted);
  const near = sameButCase ?? closestName(fieldKey(e.block, e.field), known);
  const hint = sameButCase
    ? `; did you mean ${sameButCase}? (names are case-sensitive)`
    : near
      ? `; did you mean ${near}?`
      : '';
  return formulaError('FML_UNKNOWN_FIELD', `Unknown field ${fieldKey(e.block, e.field)}${hint}`, text, e.span, {
    block: e.block,
    field: e.field,
  });
}

const CATALOGUE_NAMES: readonly string[] = FORMULA_FUNCTIONS.map((f) => f.name);

/** The fields a tree reads, in order of first appearance. */
export function fieldsOf(ast: Expr): FieldRef[] {
  const seen = new Map<string, FieldRef>();
  const visit = (e: Expr): void => {
    if (e.kind === 'field') {
      const key = fieldKey(e.block, e.field);
      if (!seen.has(key)) seen.set(key, { block: e.block, field: e.field });
    } else if (e.kind === 'unary') visit(e.operand);
    else if (e.kind === 'binary') {
      visit(e.left);
      visit(e.right);
    } else if (e.kind === 'call') e.args.forEach(visit);
  };
  visit(ast);
  return [...seen.values()];
}

/** Lookup Tables named by text literals; `dynamic` when some table name is computed. */
export function lookupTablesOf(ast: Expr): { names: string[]; dynamic: boolean } {
  const names: string[] = [];
  let dynamic = false;
  const visit = (e: Expr): void => {
    if (e.kind === 'call') {
      if (LOOKUP_FUNCTIONS.has(e.name)) {
        const first = e.args[0];
        if (first?.kind === 'literal' && typeof first.value === 'string') names.push(first.value);
        else dynamic = true;
      }
      e.args.forEach(visit);
    } else if (e.kind === 'unary') visit(e.operand);
    else if (e.kind === 'binary') {
      visit(e.left);
      visit(e.right);
    }
  };
  visit(ast);
  return { names, dynamic };
}

/** The library functions a formula set calls (special forms are written inline, not called). */
function libraryCalls(formulas: readonly { ast: Expr }[]): Set<string> {
  const calls = new Set<string>();
  const collect = (e: Expr): void => {
    if (e.kind === 'call') {
      if (!SPECIAL_FORMS.has(e.name)) calls.add(e.name);
      e.args.forEach(collect);
    } else if (e.kind === 'unary') collect(e.operand);
    else if (e.kind === 'binary') {
      collect(e.left);
      collect(e.right);
    }
  };
  formulas.forEach((f) => collect(f.ast));
  return calls;
}

/** Writes the program of a formula set. `fieldIndex` maps `Block.Field` to the position in a record's array. */
export function generateProgram(
  formulas: readonly { text: string; ast: Expr }[],
  fieldIndex: ReadonlyMap<string, number>,
): { source: string; spans: Span[][] } {
  const used = new Set<string>();
  let usesTry = false;
  const spans: Span[][] = [];
  const functions: string[] = [];

  formulas.forEach((f, j) => {
    const formulaSpans: Span[] = [{ start: 0, end: f.text.length }];
    spans.push(formulaSpans);
    let temp = 0;
    const spanIndex = (span: Span): number => formulaSpans.push(span) - 1;
    const h = (name: keyof typeof HELPERS): string => {
      used.add(name);
      return name;
    };

    const emit = (e: Expr, traced: boolean): string => {
      /** A call that can fail: direct when fast, stamped with its place when traced. */
      const call = (fn: string, args: string[], span: Span, name: string | null): string =>
        traced
          ? `${h('C')}(${spanIndex(span)}, ${JSON.stringify(name)}, ${fn}, [${args.join(', ')}])`
          : `${fn}(${args.join(', ')})`;
      const bool = (x: Expr, name: string, span: Span = x.span): string =>
        call(h('BOOL'), [emit(x, traced)], span, name);

      switch (e.kind) {
        case 'literal':
          return literal(e.value);
        case 'field':
          return `c${fieldIndex.get(fieldKey(e.block, e.field)) as number}[i]`;
        case 'unary':
          if (e.op === 'NOT') return `!${bool(e.operand, 'NOT', e.opSpan)}`;
          return call(h(e.op === '-' ? 'NEG' : 'PLUS'), [emit(e.operand, traced)], e.opSpan, null);
        case 'binary': {
          if (e.op === 'AND' || e.op === 'OR')
            return `(${bool(e.left, e.op)} ${e.op === 'AND' ? '&&' : '||'} ${bool(e.right, e.op)})`;
          const helper = h(BINARY_HELPER[e.op] as keyof typeof HELPERS);
          if (traced && (e.op === '+' || e.op === '-' || e.op === '*' || e.op === '/')) {
            // Convert each operand where it stands, so that "TWO" + 1 points at "TWO".
            const operand = (x: Expr): string => call(h('NUM'), [emit(x, true)], x.span, null);
            return call(helper, [operand(e.left), operand(e.right)], e.opSpan, null);
          }
          if (e.op === '=' || e.op === '<>') return `${helper}(${emit(e.left, traced)}, ${emit(e.right, traced)})`;
          return call(helper, [emit(e.left, traced), emit(e.right, traced)], e.opSpan, null);
        }
        case 'call':
          // Only catalogue names reach here (checkTree); the pattern keeps generated identifiers safe regardless.
          if (!CALLABLE.test(e.name)) throw new Error(`Not a function name: ${e.name}`);
          return SPECIAL_FORMS.has(e.name)
            ? special(e, traced)
            : call(
                `F_${e.name}`,
                e.args.map((a) => emit(a, traced)),
                e.nameSpan,
                e.name,
              );
      }
    };

    const special = (e: Extract<Expr, { kind: 'call' }>, traced: boolean): string => {
      const args = e.args.map((a) => emit(a, traced));
      const t = `$${(temp += 1)}`;
      const cond = (x: string, span: Span): string =>
        traced
          ? `${h('C')}(${spanIndex(span)}, ${JSON.stringify(e.name)}, ${h('BOOL')}, [${x}])`
          : `${h('BOOL')}(${x})`;
      switch (e.name) {
        case 'IF':
          return `(${cond(args[0] as string, e.nameSpan)} ? ${args[1] as string} : ${args[2] ?? 'null'})`;
        case 'IFERROR':
          usesTry = true;
          return `TRY(() => ${args[0] as string}, () => ${args[1] as string})`;
        case 'COALESCE': {
          if (args.length === 1) return args[0] as string;
          const rest = args.slice(1, -1).map((a) => `(${t} = ${a}) !== null ? ${t} : `);
          return `((${t}) => ${t} !== null ? ${t} : ${rest.join('')}${args[args.length - 1] as string})(${args[0] as string})`;
        }
        case 'CHOOSE': {
          const index = traced
            ? `${h('C')}(${spanIndex(e.nameSpan)}, "CHOOSE", ${h('INT')}, [${args[0] as string}])`
            : `${h('INT')}(${args[0] as string})`;
          const cases = args.slice(1).map((a, i) => `${t} === ${i + 1} ? ${a} : `);
          return `((${t}) => ${cases.join('')}null)(${index})`;
        }
        default: {
          // SWITCH(expression, match1, result1, …, [default])
          const pairs: string[] = [];
          let i = 1;
          for (; i + 1 < args.length; i += 2)
            pairs.push(`${h('EQ')}(${t}, ${args[i] as string}) ? ${args[i + 1] as string} : `);
          const fallback = i < args.length ? (args[i] as string) : 'null';
          return `((${t}) => ${pairs.join('')}${fallback})(${args[0] as string})`;
        }
      }
    };

    const fast = emit(f.ast, false);
    temp = 0;
    const traced = emit(f.ast, true);
    functions.push(`  function f${j}(i) { return ${h('OUT')}(${fast}); }`);
    functions.push(`  function t${j}(i) { return ${h('C')}(0, null, ${h('OUT')}, [${traced}]); }`);
  });

  const calls = libraryCalls(formulas);
  const bindings = [
    ...[...used].sort().map((name) => `${name} = L.${HELPERS[name as keyof typeof HELPERS]}`),
    ...[...calls].sort().map((name) => `F_${name} = L.fn[${JSON.stringify(name)}]`),
  ];
  const k = formulas.length;
  const columns = Array.from({ length: fieldIndex.size }, (_, c) => `c${c}`);
  const outs = Array.from({ length: k }, (_, j) => `o${j}`);
  const loop = formulas
    .map(
      (_, j) =>
        `      if (only < 0 || only === ${j}) {\n        try { o${j}[i] = f${j}(i); } catch (e) { errors.push(failed(e, i, ${j}, t${j})); }\n      }`,
    )
    .join('\n');
  const source = `(function (L) {
  "use strict";
${bindings.length ? `  const ${bindings.join(',\n    ')};\n` : ''}${usesTry ? '  const TRY = (f, g) => { try { return f(); } catch { return g(); } };\n' : ''}${columns.length ? `  let ${columns.join(', ')};\n` : ''}${functions.join('\n')}
  function failed(e, i, j, traced) {
    try { traced(i); } catch (again) { return L.errorTuple(again, i, j); }
    return L.errorTuple(e, i, j);
  }
  return function run(input, now, s0, s1, s2, s3, only) {
    L.begin(now, s0, s1, s2, s3);
    const data = JSON.parse(input.join(""));
    const n = data[0];
${columns.map((c, x) => `    ${c} = data[${x + 1}];\n`).join('')}${outs.map((o) => `    const ${o} = new Array(n).fill(null);\n`).join('')}    const errors = [];
    for (let i = 0; i < n; i++) {
${loop}
    }
${columns.length ? `    ${columns.join(' = ')} = undefined;\n` : ''}    const result = [[${outs.join(', ')}], errors];
    const json = JSON.stringify(result);
    const parts = [];
    for (let i = 0; i < json.length; i += ${WIRE_CHUNK}) parts.push(json.slice(i, i + ${WIRE_CHUNK}));
    return parts;
  };
})(${LIBRARY_GLOBAL})`;
  return { source, spans };
}

/** A JavaScript literal for a formula literal. */
function literal(value: string | number | boolean | null): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : value < 0 ? `(${String(value)})` : String(value);
  return String(value);
}
