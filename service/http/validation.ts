import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { FerryError, type FieldError } from '../../src/errors/ferry-error.js';
import { normalizeKeys } from './case-insensitive.js';

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/**
 * Validates each request part with its zod schema (after case-insensitive key matching for bodies
 * and query strings) and turns failures into one API_VALIDATION error listing every field.
 */
export const validatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  const part = PART_NAMES[httpPart ?? ''] ?? httpPart ?? 'input';
  const normalize = httpPart === 'body' || httpPart === 'querystring';
  return (data: unknown) => {
    const input = normalize ? normalizeKeys(schema, data) : data;
    // No store keeps U+0000 in text (PostgreSQL refuses it): refuse it here, for every route.
    const nul = findNul(input, part);
    if (nul) {
      return { error: new FerryError('API_VALIDATION', `The request is not valid: ${nul}: the NUL character (U+0000) is not allowed in text.`, { errors: [{ path: nul, message: 'contains the NUL character (U+0000)' }] }) };
    }
    const result = schema.safeParse(input);
    if (result.success) return { value: result.data };
    const errors: FieldError[] = result.error.issues.slice(0, 50).flatMap((issue) => {
      const at = [part, ...issue.path.map(String)];
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((key) => ({ path: [...at, clip(key, 100)].join('.'), message: 'is not a field of this model' }));
      }
      return [{ path: at.join('.'), message: clip(issue.message, 300) }];
    });
    const summary = errors.length === 1 ? `${errors[0]?.path}: ${errors[0]?.message}` : `${errors.length} fields are not valid.`;
    return { error: new FerryError('API_VALIDATION', `The request is not valid: ${summary}`, { errors }) };
  };
};

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The path of the first string (or key) holding U+0000, if any. */
function findNul(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNul(value[i], `${path}.${i}`);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, v] of Object.entries(value)) {
    if (key.includes('\u0000')) return `${path}.${clip(key.replaceAll('\u0000', '\\0'), 100)}`;
    const found = findNul(v, `${path}.${clip(key, 100)}`);
    if (found) return found;
  }
  return undefined;
}
