import { coerceValue, INVALID, type ConnectorRecord, type RecordError } from '../../src/connectors/sdk.js';
import type { EntityDef } from './definition.js';
import { setPath } from './json-path.js';

/**
 * A record → the JSON object a write sends. Values are checked against the declared types first
 * (an unknown field, a value that does not fit: the record fails alone, unsent). Integers and
 * decimals go out as JSON numbers with their exact digits (9007199254740993 and "12.50" are not
 * rounded through a double), or as strings with `asString`; a `json` field's text is embedded as
 * JSON; read-only fields are left out; a field with a dotted path is nested.
 */

/** A number's exact digits, written into the JSON text as they are. */
class RawNumber {
  constructor(readonly text: string) {}
}

export type Body = Record<string, unknown>;

const NUMBER_TEXT = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** The body of one record, or the error that refuses it. */
export function recordBody(entity: EntityDef, rec: ConnectorRecord): { body: Body } | { error: RecordError } {
  const body: Body = {};
  for (const [name, v] of Object.entries(rec)) {
    const f = entity.byName.get(name);
    if (!f)
      return {
        error: { code: 'UnknownField', message: `The entity ${entity.name} has no field ${name}.`, field: name },
      };
    const value = coerceValue(f.type, v);
    if (value === INVALID)
      return {
        error: { code: 'InvalidValue', message: `The value of ${name} is not a valid ${f.type}.`, field: name },
      };
    if (f.readOnly) continue;
    let out: unknown = value;
    if (value !== null && (f.type === 'integer' || f.type === 'decimal')) {
      const text = String(value).replace(/^\+/, '');
      out = f.asString ? text : NUMBER_TEXT.test(text) ? new RawNumber(text) : text;
    } else if (value !== null && f.type === 'json') out = new RawNumber(String(value));
    setPath(body, f.path, out);
  }
  return { body };
}

/** JSON text of a body (or an array of them), the raw numbers as their digits. */
export function toJson(v: unknown): string {
  if (v instanceof RawNumber) return v.text;
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (typeof v === 'object')
    return `{${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`)
      .join(',')}}`;
  return JSON.stringify(v);
}
