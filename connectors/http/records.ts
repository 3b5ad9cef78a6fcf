import { coerceValue, INVALID, type CallContext, type ConnectorRecord, type Value } from '../../src/connectors/sdk.js';
import type { FieldDef } from './definition.js';
import { getPath } from './json-path.js';

/**
 * API objects → records of the value model, for the fields a query needs. A value that does not
 * fit its declared type is passed on as its text (JSON text for an object) and logged once per
 * field, as csv does: a read never fails over one cell; a writer receiving it reports it per
 * record. A missing property is null.
 */
export function recordReader(
  fields: readonly FieldDef[],
  entity: string,
  ctx: CallContext,
): (raw: unknown) => ConnectorRecord {
  const warned = new Set<string>();
  const convert = fields.map((f) => {
    const single = f.path.length === 1 ? (f.path[0] as string) : undefined;
    const get = single !== undefined ? (o: Record<string, unknown>) => o[single] : (o: unknown) => getPath(o, f.path);
    return { name: f.fullName, field: f, get };
  });
  const misfit = (f: FieldDef, v: unknown): Value => {
    if (!warned.has(f.fullName)) {
      warned.add(f.fullName);
      ctx.log.warn({ entity, field: f.fullName, type: f.type }, 'a value does not fit its field type: passed as text');
    }
    return typeof v === 'string' ? v : JSON.stringify(v);
  };
  return (raw) => {
    const rec: ConnectorRecord = {};
    const obj = (raw !== null && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
    for (const c of convert) {
      const v = c.get(obj);
      let out: Value | typeof INVALID;
      // The common cases without the general conversion.
      if (v === undefined || v === null) out = null;
      else if (c.field.type === 'string' && typeof v === 'string') out = v;
      else if (c.field.type === 'integer' && typeof v === 'number' && Number.isSafeInteger(v)) out = v;
      else out = coerceValue(c.field.type, v);
      rec[c.name] = out === INVALID ? misfit(c.field, v) : out;
    }
    return rec;
  };
}
