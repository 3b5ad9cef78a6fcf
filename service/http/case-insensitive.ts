import type { z } from 'zod';

/**
 * Existing clients of the original service send PascalCase bodies and query strings
 * (`{"Name": …, "SecurityRules": [{"AllowedIpRangeStartAddress": …}]}`). This maps every key of an
 * input onto the key of the zod schema that matches it case-insensitively, recursively, before
 * validation. An exact match wins over a case-insensitive one; keys the schema does not know are
 * left as they are, so that strict schemas can name them.
 */
type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  in?: z.ZodType;
  options?: z.ZodType[];
};

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

const keyMaps = new WeakMap<z.ZodType, Map<string, string>>();

function objectShapes(schema: z.ZodType): Array<Record<string, z.ZodType>> {
  const def = defOf(schema);
  switch (def.type) {
    case 'object':
      return def.shape ? [def.shape] : [];
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return def.innerType ? objectShapes(def.innerType) : [];
    case 'pipe':
      return def.in ? objectShapes(def.in) : [];
    case 'union':
      return (def.options ?? []).flatMap(objectShapes);
    default:
      return [];
  }
}

function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    const def = defOf(current);
    const next =
      def.type === 'pipe'
        ? def.in
        : ['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional'].includes(def.type)
          ? def.innerType
          : undefined;
    if (!next) return current;
    current = next;
  }
}

function keyMap(schema: z.ZodType, shapes: Array<Record<string, z.ZodType>>): Map<string, string> {
  let map = keyMaps.get(schema);
  if (!map) {
    map = new Map();
    for (const shape of shapes) for (const key of Object.keys(shape)) map.set(key.toLowerCase(), key);
    keyMaps.set(schema, map);
  }
  return map;
}

/**
 * Recurses only where the schema itself has an object or array (never through `z.lazy`), so its
 * depth is bounded by the schema, whatever the input nests; the validator refuses over-deep input
 * before it gets here anyway.
 */
export function normalizeKeys(schema: z.ZodType, value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  const inner = unwrap(schema);
  const def = defOf(inner);
  if (Array.isArray(value)) {
    return def.type === 'array' && def.element ? value.map((v) => normalizeKeys(def.element as z.ZodType, v)) : value;
  }
  const shapes = objectShapes(inner);
  if (shapes.length === 0) return value;
  const map = keyMap(inner, shapes);
  const out: Record<string, unknown> = {};
  const source = value as Record<string, unknown>;
  const isKnown = (key: string): boolean => shapes.some((shape) => Object.hasOwn(shape, key));
  for (const [key, v] of Object.entries(source)) {
    const target = isKnown(key) ? key : (map.get(key.toLowerCase()) ?? key);
    // An exact key beats a case-insensitive twin ("name" over "Name").
    if (target === '__proto__' || (target !== key && Object.hasOwn(source, target))) continue;
    const field = shapes.map((shape) => shape[target]).find((f) => f !== undefined);
    out[target] = field ? normalizeKeys(field, v) : v;
  }
  return out;
}

/** The field names of the objects a schema describes (through wrappers and unions). */
export function schemaKeys(schema: z.ZodType): string[] {
  return objectShapes(schema).flatMap((shape) => Object.keys(shape));
}
