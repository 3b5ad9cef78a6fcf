import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { FerryError, type FieldError } from '../../src/errors/ferry-error.js';
import { closestName } from '../../src/util/closest-name.js';
import { MAX_JSON_DEPTH } from '../util/json-depth.js';
import { normalizeKeys, schemaKeys } from './case-insensitive.js';

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/**
 * Validates each request part with its zod schema (after case-insensitive key matching for bodies
 * and query strings) and turns failures into one API_VALIDATION error listing every field.
 */
export const validatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  const part = PART_NAMES[httpPart ?? ''] ?? httpPart ?? 'input';
  const normalize = httpPart === 'body' || httpPart === 'querystring';
  return (data: unknown) => {
    // First, without recursion: what no later (recursive) step may see, and what no store keeps.
    const bad = findBadInput(data, part);
    if (bad) return { error: badInputError(bad) };
    if (httpPart === 'querystring') {
      const bracketed = findBracketedKey(schema, data);
      if (bracketed) {
        const path = `${part}.${clip(bracketed, 100)}`;
        return {
          error: new FerryError(
            'API_VALIDATION',
            `The request is not valid: ${path}: give each query parameter once, as name=value.`,
            { errors: [{ path, message: 'is not a query parameter; give it once, as name=value' }] },
          ),
        };
      }
      const miss = findNearMiss(schema, data);
      if (miss) {
        const path = `${part}.${clip(miss.key, 100)}`;
        const message = `is not a query parameter of this operation; did you mean ${miss.known}?`;
        return {
          error: new FerryError('API_VALIDATION', `The request is not valid: ${path} ${message}`, {
            errors: [{ path, message }],
          }),
        };
      }
    }
    const input = normalize ? normalizeKeys(schema, data) : data;
    const result = schema.safeParse(input);
    if (result.success) return { value: result.data };
    const errors: FieldError[] = result.error.issues.slice(0, 50).flatMap((issue) => {
      const at = [part, ...issue.path.map(String)];
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((key) => ({
          path: [...at, clip(key, 100)].join('.'),
          message: 'is not a field of this model',
        }));
      }
      if (issue.code === 'invalid_type' && isMissing(input, issue.path))
        return [{ path: at.join('.'), message: REQUIRED }];
      return [{ path: at.join('.'), message: clip(issue.message, 300) }];
    });
    const first = errors[0];
    const summary =
      errors.length !== 1 || !first
        ? `${errors.length} fields are not valid.`
        : first.message === REQUIRED
          ? `${first.path} is required.`
          : `${first.path}: ${first.message}`;
    return { error: new FerryError('API_VALIDATION', `The request is not valid: ${summary}`, { errors }) };
  };
};

const REQUIRED = 'is required';

/** Whether the value at `path` is absent (or undefined), so a type issue there means a missing field. */
function isMissing(input: unknown, path: ReadonlyArray<PropertyKey>): boolean {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return false;
    const holder = value as Record<PropertyKey, unknown>;
    if (!Object.hasOwn(holder, key)) return true;
    value = holder[key];
  }
  return value === undefined;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** A lone UTF-16 surrogate: text that is not valid Unicode (paired surrogates do not match with the u flag). */
const LONE_SURROGATE = /\p{Surrogate}/u;

type BadInput = { path: string; problem: 'nul' | 'surrogate' | 'depth' };

function textProblem(text: string): BadInput['problem'] | undefined {
  if (text.includes('\u0000')) return 'nul';
  if (LONE_SURROGATE.test(text)) return 'surrogate';
  return undefined;
}

/** A key as it may appear in a path of an error: printable, valid Unicode, bounded. */
function keyForPath(key: string): string {
  return clip(key.replaceAll('\u0000', '\\0').replace(new RegExp(LONE_SURROGATE.source, 'gu'), '\uFFFD'), 100);
}

/**
 * The first string or key that holds U+0000 (no store keeps it; PostgreSQL refuses it) or a lone
 * surrogate (not valid Unicode; each store would replace it differently), or the first array or
 * object nested deeper than MAX_JSON_DEPTH. Walks with its own stack, never by recursion, so no
 * input can overflow the call stack here.
 */
function findBadInput(value: unknown, root: string): BadInput | undefined {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: root, depth: 0 }];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const { value: v, path, depth } = top;
    if (typeof v === 'string') {
      const problem = textProblem(v);
      if (problem) return { path, problem };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return { path, problem: 'depth' };
    // Children are pushed last-first, so the first bad one in document order is found first.
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--)
        stack.push({ value: v[i] as unknown, path: `${path}.${i}`, depth: depth + 1 });
      continue;
    }
    const entries = Object.entries(v);
    for (const [key] of entries) {
      const problem = textProblem(key);
      if (problem) return { path: `${path}.${keyForPath(key)}`, problem };
    }
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i] as [string, unknown];
      stack.push({ value: child, path: `${path}.${clip(key, 100)}`, depth: depth + 1 });
    }
  }
  return undefined;
}

function badInputError({ path, problem }: BadInput): FerryError {
  if (problem === 'depth') {
    return new FerryError(
      'API_BODY_TOO_DEEP',
      `The request nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels (at ${clip(path, 200)}); send a flatter document.`,
    );
  }
  const message =
    problem === 'nul'
      ? 'contains the NUL character (U+0000)'
      : 'is not valid Unicode text (a lone surrogate such as \\ud800)';
  const reason =
    problem === 'nul'
      ? 'the NUL character (U+0000) is not allowed in text'
      : 'text must be valid Unicode: a lone surrogate (\\ud800–\\udfff without its pair) is not allowed';
  return new FerryError('API_VALIDATION', `The request is not valid: ${path}: ${reason}.`, {
    errors: [{ path, message }],
  });
}

/**
 * `limit[]=1` or `limit[x]=1`: a parameter of the route given in bracket form. The query string
 * parser keeps such a key as it is, so the schema would silently ignore it and use the default;
 * refuse it instead (unknown parameters, bracketed or not, are still ignored).
 */
function findBracketedKey(schema: z.ZodType, data: unknown): string | undefined {
  if (data === null || typeof data !== 'object') return undefined;
  const known = queryNames(schema);
  return Object.keys(data).find((key) => {
    const base = /^([^[\]]+)\[[^\]]*\]/.exec(key)?.[1];
    return base !== undefined && known.has(base.toLowerCase());
  });
}

const queryNamesCache = new WeakMap<z.ZodType, Set<string>>();

function queryNames(schema: z.ZodType): Set<string> {
  let names = queryNamesCache.get(schema);
  if (!names) {
    names = new Set(schemaKeys(schema).map((k) => k.toLowerCase()));
    queryNamesCache.set(schema, names);
  }
  return names;
}

const queryKeysCache = new WeakMap<z.ZodType, string[]>();

/**
 * An unknown query parameter that is a near miss of one the route takes (`includeLookupTableValue`
 * for `includeLookupTableValues`): refused, since ignoring it would silently drop what the caller
 * asked for. Other unknown parameters are ignored: clients of the original service send extras such
 * as `expand=false`. Case differences are not misses (keys match case-insensitively); a miss is at
 * most one edit away for names under six characters, two otherwise.
 */
function findNearMiss(schema: z.ZodType, data: unknown): { key: string; known: string } | undefined {
  if (data === null || typeof data !== 'object') return undefined;
  let keys = queryKeysCache.get(schema);
  if (!keys) {
    keys = schemaKeys(schema);
    queryKeysCache.set(schema, keys);
  }
  if (keys.length === 0) return undefined;
  const names = queryNames(schema);
  for (const key of Object.keys(data)) {
    if (key.length > 100 || names.has(key.toLowerCase())) continue;
    const known = closestName(key, keys, 2);
    if (known && editDistanceWithin(key, known)) return { key, known };
  }
  return undefined;
}

function editDistanceWithin(key: string, known: string): boolean {
  return Math.min(key.length, known.length) >= 6 || closestName(key, [known], 1) !== undefined;
}
