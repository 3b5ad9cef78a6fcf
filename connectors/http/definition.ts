import { z } from 'zod';
import {
  ConnectorError,
  PROPERTY_TYPES,
  toFullName,
  uniqueFullNames,
  type PropertyType,
} from '../../src/connectors/sdk.js';
import { parsePath, type JsonPath } from './json-path.js';

/**
 * The entity definition (the `definition` property): what the API holds and how to read and write
 * it, after the declarative connectors of Airbyte (record selector, paginator, requester).
 *
 *   { "entities": [ { "name": "people", "path": "/people", "recordsPath": "data.items",
 *       "fields": [ { "name": "id", "type": "integer" }, … ], "key": ["id"],
 *       "pagination": { "type": "page", "pageParam": "page", "sizeParam": "per_page", "pageSize": 100 },
 *       "netChange": { "field": "updated_at", "param": "updated_since" },
 *       "create": { "method": "POST" }, "update": { "method": "PATCH", "path": "/people/{id}" } } ] }
 *
 * The zod schema checks the shape; {@link parseDefinition} then checks what refers to what (keys,
 * fields of the net change and the filters, placeholders of paths) and names the bad path in its
 * message: `definition: entities[0].key[0]: the entity people has no field ids.`
 */

const Name = z.string().trim().min(1).max(200);
const Param = z.string().trim().min(1).max(200);
const PageSize = z.number().int().min(1).max(100_000);

const FieldSchema = z.strictObject({
  name: Name,
  type: z.enum(PROPERTY_TYPES).default('string'),
  /** Where the value is inside a record (dotted); default the name. */
  path: z.string().trim().min(1).optional(),
  /** Integers and decimals are sent as JSON numbers with their exact digits; true sends a JSON string. */
  asString: z.boolean().default(false),
  /** Set by the API (a stamp, a generated id): read, never sent. */
  readOnly: z.boolean().default(false),
  description: z.string().max(10_000).default(''),
});

const PaginationSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('none') }),
  z.strictObject({
    type: z.literal('page'),
    pageParam: Param.default('page'),
    sizeParam: Param.optional(),
    pageSize: PageSize.optional(),
    firstPage: z.number().int().min(0).default(1),
  }),
  z.strictObject({
    type: z.literal('offset'),
    offsetParam: Param.default('offset'),
    limitParam: Param.default('limit'),
    pageSize: PageSize.default(100),
  }),
  z.strictObject({
    type: z.literal('cursor'),
    /** Where the next cursor is in a page (dotted), sent as `cursorParam`. */
    cursorPath: z.string().trim().min(1).optional(),
    cursorParam: Param.optional(),
    /** Or: where the full URL of the next page is in a page. */
    nextUrlPath: z.string().trim().min(1).optional(),
    sizeParam: Param.optional(),
    pageSize: PageSize.optional(),
  }),
  z.strictObject({ type: z.literal('link'), sizeParam: Param.optional(), pageSize: PageSize.optional() }),
]);

const BatchSchema = z.strictObject({
  /** Most records in one request. */
  maxSize: z.number().int().min(1).max(10_000).default(100),
  /** Where the per-record results are in the answer (dotted; `$` = the answer is their array). */
  resultsPath: z.string().trim().optional(),
  /** Where a result's HTTP status is inside it. */
  statusPath: z.string().trim().min(1).default('status'),
});

const WriteOpSchema = (methods: readonly [string, ...string[]], dflt: string) =>
  z.strictObject({
    method: z.enum(methods).default(dflt),
    /** A path template: `{field}` is the record's value of that field, URL-encoded. */
    path: z.string().trim().min(1).optional(),
    /** Sends `{ "<wrap>": record }` (or the batch's array) instead of the bare record. */
    wrap: Param.optional(),
    /** The API takes an array of records in one request. */
    batch: BatchSchema.optional(),
  });

const EntitySchema = z.strictObject({
  name: Name,
  description: z.string().max(10_000).default(''),
  /** The read path (relative to the base URL); absent: the entity cannot be queried. */
  path: z.string().trim().min(1).optional(),
  recordsPath: z.string().trim().default('$'),
  fields: z.array(FieldSchema).min(1).max(10_000),
  key: z.union([Name, z.array(Name).max(20)]).optional(),
  /** Query parameters sent with every read of the entity. */
  params: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({}),
  pagination: PaginationSchema.default({ type: 'none' }),
  netChange: z
    .strictObject({
      field: Name,
      /** The query parameter that takes the net-change date; absent = filtered here only. */
      param: Param.optional(),
      format: z.enum(['iso', 'date', 'unix', 'unixMs']).default('iso'),
      /** The API returns records ascending by the field: no sort here. */
      ordered: z.boolean().default(false),
    })
    .optional(),
  /** Filter conditions the API can apply itself, as query parameters (`in`: comma-separated). */
  filters: z
    .array(
      z.strictObject({
        field: Name,
        param: Param,
        op: z.enum(['=', '<', '<=', '>', '>=', 'in']).default('='),
      }),
    )
    .max(100)
    .default([]),
  create: WriteOpSchema(['POST', 'PUT'], 'POST').optional(),
  update: WriteOpSchema(['PATCH', 'PUT', 'POST'], 'PATCH').optional(),
  upsert: WriteOpSchema(['PUT', 'POST', 'PATCH'], 'PUT').optional(),
  delete: WriteOpSchema(['DELETE', 'POST'], 'DELETE').optional(),
});

const DefinitionSchema = z.strictObject({
  /** What `test` reads; default the first page of the first entity that has a read path. */
  testPath: z.string().trim().min(1).optional(),
  entities: z.array(EntitySchema).min(1).max(1000),
});

type EntityInput = z.infer<typeof EntitySchema>;
export type Pagination = z.infer<typeof PaginationSchema>;

export interface FieldDef {
  name: string;
  fullName: string;
  type: PropertyType;
  path: JsonPath;
  asString: boolean;
  readOnly: boolean;
  description: string;
  /** 1-based position in the key; 0 = not a key field. */
  pk: number;
}

export interface BatchSpec {
  maxSize: number;
  resultsPath: JsonPath | undefined;
  statusPath: JsonPath;
}

export interface WriteOp {
  method: string;
  /** The path template as declared. */
  path: string;
  /** fullNames of the fields the template names, in order. */
  placeholders: string[];
  wrap: string | undefined;
  batch: BatchSpec | undefined;
}

export interface NetChangeDef {
  field: string;
  param: string | undefined;
  format: 'iso' | 'date' | 'unix' | 'unixMs';
  ordered: boolean;
}

export interface PushdownDef {
  field: string;
  param: string;
  op: '=' | '<' | '<=' | '>' | '>=' | 'in';
}

export interface EntityDef {
  name: string;
  fullName: string;
  description: string;
  readPath: string | undefined;
  recordsPath: JsonPath;
  fields: FieldDef[];
  byName: ReadonlyMap<string, FieldDef>;
  /** fullNames of the key fields. */
  key: string[];
  params: Readonly<Record<string, string>>;
  pagination: Pagination;
  netChange: NetChangeDef | undefined;
  filters: PushdownDef[];
  create: WriteOp | undefined;
  update: WriteOp | undefined;
  upsert: WriteOp | undefined;
  delete: WriteOp | undefined;
}

export interface Definition {
  testPath: string | undefined;
  entities: EntityDef[];
  byName: ReadonlyMap<string, EntityDef>;
}

const bad = (where: string, message: string): ConnectorError =>
  new ConnectorError('InvalidProperties', `definition: ${where}: ${message}`);

/** `entities[0].pagination.type` */
function issuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : `${out ? '.' : ''}${String(p)}`;
  return out || '(top level)';
}

/** Parses and checks the definition's JSON text; every error is InvalidProperties naming the bad path. */
export function parseDefinition(text: string): Definition {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConnectorError('InvalidProperties', `definition: not valid JSON (${(err as Error).message}).`);
  }
  // A bare array of entities is accepted as { entities: [...] }.
  const parsed = DefinitionSchema.safeParse(Array.isArray(json) ? { entities: json } : json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw bad(issuePath(issue?.path ?? []), `${issue?.message ?? 'invalid'}.`);
  }
  const fullNames = uniqueFullNames(parsed.data.entities.map((e) => e.name));
  const entities = parsed.data.entities.map((e, i) => compileEntity(e, fullNames[i] as string, `entities[${i}]`));
  const byName = new Map(entities.map((e) => [e.fullName, e]));
  return { testPath: parsed.data.testPath, entities, byName };
}

function compileEntity(e: EntityInput, fullName: string, where: string): EntityDef {
  const names = uniqueFullNames(e.fields.map((f) => f.name));
  const keyNames = e.key === undefined ? [] : typeof e.key === 'string' ? [e.key] : e.key;
  const fields: FieldDef[] = e.fields.map((f, i) => ({
    name: f.name,
    fullName: names[i] as string,
    type: f.type,
    path: parsePath(f.path ?? f.name),
    asString: f.asString,
    readOnly: f.readOnly,
    description: f.description,
    pk: 0,
  }));
  const lookup = new Map<string, FieldDef>();
  for (const f of fields) lookup.set(f.name, f);
  for (const f of fields) if (!lookup.has(f.fullName)) lookup.set(f.fullName, f);
  const field = (name: string, at: string): FieldDef => {
    const f = lookup.get(name) ?? lookup.get(toFullName(name));
    if (!f) throw bad(at, `the entity ${e.name} has no field ${name}.`);
    return f;
  };
  const key = keyNames.map((k, i) => {
    const f = field(k, `${where}.key[${i}]`);
    f.pk = i + 1;
    return f.fullName;
  });
  let netChange: NetChangeDef | undefined;
  if (e.netChange) {
    const f = field(e.netChange.field, `${where}.netChange.field`);
    if (f.type !== 'date' && f.type !== 'datetime')
      throw bad(`${where}.netChange.field`, `the field ${f.name} is a ${f.type}, not a date or datetime.`);
    netChange = { ...e.netChange, param: e.netChange.param, field: f.fullName };
  }
  const filters = e.filters.map((p, i) => ({ ...p, field: field(p.field, `${where}.filters[${i}].field`).fullName }));
  const p = e.pagination;
  if (p.type === 'cursor' && !p.nextUrlPath && !(p.cursorPath && p.cursorParam))
    throw bad(`${where}.pagination`, 'a cursor pagination needs cursorPath and cursorParam, or nextUrlPath.');
  const op = (name: 'create' | 'update' | 'upsert' | 'delete'): WriteOp | undefined => {
    const o = e[name];
    if (!o) return undefined;
    const path = o.path ?? e.path;
    if (!path) throw bad(`${where}.${name}.path`, 'give the path (the entity has no read path to default to).');
    const placeholders = [...path.matchAll(/\{([^{}]*)\}/g)].map(
      (m) => field(m[1] as string, `${where}.${name}.path`).fullName,
    );
    const keyed = name !== 'create';
    if (keyed && !o.batch && placeholders.length === 0)
      throw bad(`${where}.${name}.path`, `the ${name} path must name its record by the key, e.g. /items/{id}.`);
    if (o.batch && placeholders.length > 0)
      throw bad(`${where}.${name}.path`, 'a batch request has one path for all its records: no {field} in it.');
    const batch = o.batch && {
      maxSize: o.batch.maxSize,
      resultsPath: o.batch.resultsPath === undefined ? undefined : parsePath(o.batch.resultsPath),
      statusPath: parsePath(o.batch.statusPath),
    };
    return { method: o.method, path, placeholders, wrap: o.wrap, batch };
  };
  return {
    name: e.name,
    fullName,
    description: e.description,
    readPath: e.path,
    recordsPath: parsePath(e.recordsPath),
    fields,
    byName: new Map(fields.map((f) => [f.fullName, f])),
    key,
    params: Object.fromEntries(Object.entries(e.params).map(([k, v]) => [k, String(v)])),
    pagination: p,
    netChange,
    filters,
    create: op('create'),
    update: op('update'),
    upsert: op('upsert'),
    delete: op('delete'),
  };
}
