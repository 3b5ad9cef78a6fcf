import type { FastifyReply } from 'fastify';
import { errorSpec } from '../../src/errors/codes.js';
import type { FerryError, FieldError } from '../../src/errors/ferry-error.js';

/** An RFC 9457 problem document, the body of every error answer. */
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

export function sendProblem(reply: FastifyReply, err: FerryError, instance?: string): FastifyReply {
  const problem = problemOf(err, instance);
  const retryAfter = err.details?.['retryAfterSeconds'];
  if (typeof retryAfter === 'number') void reply.header('Retry-After', String(retryAfter));
  return reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).serializer(JSON.stringify).send(problem);
}
