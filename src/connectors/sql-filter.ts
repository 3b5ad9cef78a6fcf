import type { Filter, FilterValue } from '../protocol/filter.js';

/** What a SQL datastore plugin tells {@link filterToSql} about its dialect. */
export interface SqlFilterDialect {
  /** The SQL expression of a field (a quoted column); throws for an unknown field. */
  column: (field: string) => string;
  /**
   * Binds a literal compared with `field` and returns its placeholder (`$3`, `?`). Values are
   * always bound, never written into the SQL text. `kind` is `pattern` for LIKE patterns (text,
   * whatever the field's type), else `value` (a literal of the field's type).
   */
  param: (value: FilterValue, field: string, kind: 'value' | 'pattern') => string;
  /** `a LIKE b` for a bound pattern; the pattern escapes with `\`. */
  like?: (column: string, placeholder: string) => string;
  /** A comparison; lets a dialect compare some types by value rather than as stored (sqlite datetimes). */
  compare?: (field: string, column: string, op: string, placeholder: string) => string;
}

/** Escapes `%`, `_` and `\` so that a text matches itself inside a LIKE pattern. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * Translates a filter into a SQL boolean expression whose literals are all bound parameters.
 * Semantics are SQL's own (three-valued), which is the definition of the filter model.
 */
export function filterToSql(filter: Filter, d: SqlFilterDialect): string {
  const like = d.like ?? ((c: string, p: string) => `${c} LIKE ${p} ESCAPE '\\'`);
  const compare = d.compare ?? ((_f: string, c: string, op: string, p: string) => `${c} ${op} ${p}`);
  const walk = (f: Filter): string => {
    switch (f.op) {
      case 'and':
      case 'or':
        return `(${f.args.map(walk).join(f.op === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${walk(f.arg)})`;
      case 'isNull':
        return `(${d.column(f.field)} IS NULL)`;
      case 'like':
        return `(${like(d.column(f.field), d.param(f.pattern, f.field, 'pattern'))})`;
      case 'contains':
        return `(${like(d.column(f.field), d.param(`%${escapeLike(f.value)}%`, f.field, 'pattern'))})`;
      case 'in': {
        const col = d.column(f.field);
        if (f.values.length === 0) return '(1 = 0)';
        return `(${f.values.map((v) => compare(f.field, col, '=', d.param(v, f.field, 'value'))).join(' OR ')})`;
      }
      default:
        if (f.value === null) return '(NULL)';
        return `(${compare(f.field, d.column(f.field), f.op, d.param(f.value, f.field, 'value'))})`;
    }
  };
  return walk(filter);
}
