import type { Filter, FilterValue } from '../protocol/filter.js';
import { coerceValue, compareValues, INVALID, type ConnectorRecord, type PropertyType, type Value } from './value.js';

/** Three-valued truth: null is SQL's unknown. */
type Truth = boolean | null;
type Node = (r: ConnectorRecord) => Truth;

/**
 * Compiles a filter into a predicate over records, with SQL semantics (three-valued logic,
 * comparisons in the field's type, LIKE with `%` `_` and `\` escapes, case-sensitive). For
 * connectors that evaluate filters themselves (csv) and for in-memory lookups.
 *
 * `typeOf` gives a field's type, or undefined for an unknown field: that throws `unknownField`.
 * Literals are converted to the field's type once, here; a literal that cannot be (`'abc'` for an
 * integer) makes its comparison unknown, like a failed cast that matches nothing.
 */
export function compileFilter(
  filter: Filter | undefined,
  typeOf: (field: string) => PropertyType | undefined,
  unknownField: (field: string) => Error = (f) => new Error(`unknown field ${f}`),
): (record: ConnectorRecord) => boolean {
  if (!filter) return () => true;
  const fieldType = (f: string): PropertyType => {
    const t = typeOf(f);
    if (!t) throw unknownField(f);
    return t;
  };
  const lit = (t: PropertyType, v: FilterValue): Value | typeof INVALID => coerceValue(t, v);

  const build = (f: Filter): Node => {
    switch (f.op) {
      case 'and': {
        const parts = f.args.map(build);
        return (r) => {
          let out: Truth = true;
          for (const p of parts) {
            const t = p(r);
            if (t === false) return false;
            if (t === null) out = null;
          }
          return out;
        };
      }
      case 'or': {
        const parts = f.args.map(build);
        return (r) => {
          let out: Truth = false;
          for (const p of parts) {
            const t = p(r);
            if (t === true) return true;
            if (t === null) out = null;
          }
          return out;
        };
      }
      case 'not': {
        const inner = build(f.arg);
        return (r) => {
          const t = inner(r);
          return t === null ? null : !t;
        };
      }
      case 'isNull': {
        const name = f.field;
        fieldType(name);
        return (r) => r[name] === null || r[name] === undefined;
      }
      case 'like':
      case 'contains': {
        const name = f.field;
        fieldType(name);
        const re = f.op === 'like' ? likeToRegExp(f.pattern) : undefined;
        const needle = f.op === 'contains' ? f.value : '';
        return (r) => {
          const v = r[name];
          if (v === null || v === undefined) return null;
          const s = String(v);
          return re ? re.test(s) : s.includes(needle);
        };
      }
      case 'in': {
        const name = f.field;
        const t = fieldType(name);
        const values = f.values.map((v) => lit(t, v));
        const hasNull = values.some((v) => v === null || v === INVALID);
        const concrete = values.filter((v): v is Exclude<Value, null> => v !== null && v !== INVALID);
        return (r) => {
          const v = r[name];
          if (v === null || v === undefined) return null;
          for (const c of concrete) if (compareValues(t, v, c) === 0) return true;
          return hasNull ? null : false;
        };
      }
      default: {
        const name = f.field;
        const t = fieldType(name);
        const c = lit(t, f.value);
        const op = f.op;
        if (c === null || c === INVALID) return () => null;
        return (r) => {
          const v = r[name];
          if (v === null || v === undefined) return null;
          const d = compareValues(t, v, c);
          switch (op) {
            case '=':
              return d === 0;
            case '<>':
              return d !== 0;
            case '<':
              return d < 0;
            case '<=':
              return d <= 0;
            case '>':
              return d > 0;
            case '>=':
              return d >= 0;
          }
        };
      }
    }
  };
  const root = build(filter);
  return (r) => root(r) === true;
}

/** A SQL LIKE pattern as an anchored regular expression (`\` escapes the next character). */
export function likeToRegExp(pattern: string): RegExp {
  let src = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string;
    if (ch === '\\' && i + 1 < pattern.length) {
      src += escapeRe(pattern[++i] as string);
    } else if (ch === '%') src += '[\\s\\S]*';
    else if (ch === '_') src += '[\\s\\S]';
    else src += escapeRe(ch);
  }
  return new RegExp(`^${src}$`, 'u');
}

function escapeRe(ch: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(ch) ? `\\${ch}` : ch;
}
