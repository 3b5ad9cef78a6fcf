import { z } from 'zod';

/**
 * The datastore-neutral filter of a Query (and of Lookup conditions): a small AST that the Map
 * engine builds, the Service validates and stores, and each Connector translates into its
 * datastore's language (SQL with bound parameters) or evaluates itself (csv).
 *
 * Fields are named by their `fullName`. Literal values use the record value model of
 * `docs/connectors.md`: string | number | boolean | null, dates as ISO-8601 strings.
 *
 * Semantics are SQL's, three-valued: a comparison with a null operand is unknown, `NOT unknown`
 * is unknown, and a record passes only when the whole filter is true. Test for null with `isNull`.
 *
 * ```json
 * { "op": "and", "args": [
 *   { "op": ">=", "field": "updated_at", "value": "2024-01-01T00:00:00Z" },
 *   { "op": "not", "arg": { "op": "in", "field": "state", "values": ["closed", "void"] } } ] }
 * ```
 */

/** A literal of the record value model. */
export type FilterValue = string | number | boolean | null;

export const COMPARISON_OPS = ['=', '<>', '<', '<=', '>', '>='] as const;
export type ComparisonOp = (typeof COMPARISON_OPS)[number];

export type Filter =
  | { op: 'and' | 'or'; args: Filter[] }
  | { op: 'not'; arg: Filter }
  | { op: ComparisonOp; field: string; value: FilterValue }
  | { op: 'isNull'; field: string }
  /** SQL LIKE: `%` any run of characters, `_` one character, `\` escapes the next one. */
  | { op: 'like'; field: string; pattern: string }
  /** The field's text contains `value` (no wildcards). */
  | { op: 'contains'; field: string; value: string }
  | { op: 'in'; field: string; values: FilterValue[] };

/** Deepest nesting a filter may have; a guard against pathological input from the API. */
export const MAX_FILTER_DEPTH = 32;
/** Most values an `in` may list. */
export const MAX_IN_VALUES = 10_000;

const FieldName = z.string().regex(/^[A-Za-z0-9_]+$/, 'a field fullName has only letters, digits and underscores');
const Value: z.ZodType<FilterValue> = z.union([
  z.string(),
  z.number().refine(Number.isFinite, 'a finite number'),
  z.boolean(),
  z.null(),
]);

export const Filter: z.ZodType<Filter> = z
  .lazy(() =>
    z
      .union([
        z
          .strictObject({ op: z.enum(['and', 'or']), args: z.array(Filter).min(1).max(1000) })
          .describe('true when all (and) or any (or) of args is'),
        z.strictObject({ op: z.literal('not'), arg: Filter }).describe('true when arg is false'),
        z
          .strictObject({ op: z.enum(COMPARISON_OPS), field: FieldName, value: Value })
          .describe('compares the field with a literal; unknown when either is null'),
        z.strictObject({ op: z.literal('isNull'), field: FieldName }).describe('true when the field is null'),
        z
          .strictObject({ op: z.literal('like'), field: FieldName, pattern: z.string().max(10_000) })
          .describe('SQL LIKE: `%` any run of characters, `_` one character, `\\` escapes the next one'),
        z
          .strictObject({ op: z.literal('contains'), field: FieldName, value: z.string().max(10_000) })
          .describe("the field's text contains value (no wildcards)"),
        z
          .strictObject({ op: z.literal('in'), field: FieldName, values: z.array(Value).max(MAX_IN_VALUES) })
          .describe('the field equals one of values'),
      ])
      .describe(
        `A filter: comparisons of fields (fullNames) with literals, combined with and / or / not, nesting at most ${MAX_FILTER_DEPTH} levels; three-valued as in SQL.`,
      ),
  )
  .superRefine((f, ctx) => {
    if (filterDepth(f) > MAX_FILTER_DEPTH)
      ctx.addIssue({ code: 'custom', message: `a filter nests at most ${MAX_FILTER_DEPTH} levels` });
  });

/** Nesting depth of a filter (a single comparison is 1). */
export function filterDepth(f: Filter): number {
  switch (f.op) {
    case 'and':
    case 'or':
      return 1 + Math.max(0, ...f.args.map(filterDepth));
    case 'not':
      return 1 + filterDepth(f.arg);
    default:
      return 1;
  }
}

/** Every field fullName a filter refers to, once each, in first-use order. */
export function filterFields(f: Filter | undefined): string[] {
  const out = new Set<string>();
  const walk = (g: Filter): void => {
    switch (g.op) {
      case 'and':
      case 'or':
        g.args.forEach(walk);
        return;
      case 'not':
        walk(g.arg);
        return;
      default:
        out.add(g.field);
    }
  };
  if (f) walk(f);
  return [...out];
}

/** Shorthands to build filters in code: `and(cmp('age', '>=', 18), isNull('deleted_at'))`. */
export const cmp = (field: string, op: ComparisonOp, value: FilterValue): Filter => ({ op, field, value });
export const and = (...args: Filter[]): Filter => ({ op: 'and', args });
export const or = (...args: Filter[]): Filter => ({ op: 'or', args });
export const not = (arg: Filter): Filter => ({ op: 'not', arg });
export const isNull = (field: string): Filter => ({ op: 'isNull', field });
export const like = (field: string, pattern: string): Filter => ({ op: 'like', field, pattern });
export const contains = (field: string, value: string): Filter => ({ op: 'contains', field, value });
export const inList = (field: string, values: FilterValue[]): Filter => ({ op: 'in', field, values });
