import { errorSpec } from '../../src/errors/codes.js';
import type { FerryError, FieldError } from '../../src/errors/ferry-error.js';

/**
 * An RFC 9457 problem document, the body of every error answer: of the REST API, of a request
 * Node's HTTP parser refused, and of a refused Agent channel upgrade.
 */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  instance?: string;
  errors?: FieldError[];
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/** The problem document of an error: its code's title and HTTP status from the error table. */
export function problemOf(err: FerryError, instance?: string): Problem {
  const spec = errorSpec(err.code);
  const problem: Problem = {
    type: `urn:ferry:error:${err.code}`,
    title: spec.title,
    status: spec.status,
    detail: err.message,
    code: err.code,
  };
  if (instance) problem.instance = instance;
  if (err.errors?.length) problem.errors = err.errors;
  return problem;
}
