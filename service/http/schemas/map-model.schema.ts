import { z } from 'zod';
import { Filter } from '../../../src/protocol/filter.js';
import {
  Block,
  ChildWrite,
  FieldMapping,
  LookupCondition,
  MapModel,
  NetChangeSpec,
} from '../../../src/protocol/map.js';

/**
 * The Map model in the OpenAPI document.
 *
 * The protocol's zod schemas (src/protocol/map.ts, filter.ts) become components of the document,
 * generated from those schemas by the transform of fastify-type-provider-zod: `MapModel`, `Block`,
 * `Filter` (recursive, through its own `$ref`), `FieldMapping`, `LookupCondition`, `ChildWrite`,
 * `NetChange`. A component is emitted twice, as `<id>Input` (what a request may send: unknown keys
 * allowed, defaults optional) and `<id>` (what an answer holds).
 *
 * The routes still validate Map bodies as any JSON object (a 2.x export is upgraded before the
 * protocol's schema parses it, and unknown keys of real exports must not break an import), and
 * answer blocks as they are stored: {@link documentedAs} makes such a schema read as a reference to
 * a component in the document without changing what it accepts.
 */

const COMPONENTS: ReadonlyArray<readonly [z.ZodType, string]> = [
  [MapModel, 'MapModel'],
  [Block, 'Block'],
  [Filter, 'Filter'],
  [FieldMapping, 'FieldMapping'],
  [LookupCondition, 'LookupCondition'],
  [ChildWrite, 'ChildWrite'],
  [NetChangeSpec, 'NetChange'],
];

/** Names the Map model's schemas in zod's global registry, where the OpenAPI transform finds components; idempotent. */
export function registerMapModelComponents(): void {
  for (const [schema, id] of COMPONENTS) {
    const meta = z.globalRegistry.get(schema);
    if (meta?.id === id || z.globalRegistry._idmap.has(id)) continue;
    z.globalRegistry.add(schema, { ...meta, id });
  }
}

type Component = 'MapModel' | 'Block';

/**
 * The JSON Schema of a reference to a component, for a request (`input`: the `<id>Input`
 * component) or an answer (`output`). The keys set to undefined drop what zod generates for the
 * validating schema itself (an object of any keys), so that the reference stands alone.
 */
export function componentRef(id: Component, io: 'input' | 'output'): Record<string, unknown> {
  return {
    $ref: `#/components/schemas/${io === 'input' ? `${id}Input` : id}`,
    type: undefined,
    propertyNames: undefined,
    additionalProperties: undefined,
  };
}

/**
 * `schema`, unchanged as a validator, described in the OpenAPI document as the component `id`.
 * With a description the reference is wrapped in `allOf`, as @fastify/swagger drops the
 * siblings of a `$ref` when it resolves a request body.
 */
export function documentedAs<T extends z.ZodType>(
  schema: T,
  id: Component,
  io: 'input' | 'output',
  description?: string,
): T {
  if (description === undefined) return schema.meta(componentRef(id, io));
  const { $ref, ...unset } = componentRef(id, io);
  return schema.meta({ ...unset, allOf: [{ $ref }], description });
}
