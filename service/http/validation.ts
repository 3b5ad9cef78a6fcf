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
