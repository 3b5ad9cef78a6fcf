import type { FastifyReply } from 'fastify';
import type { FerryError } from '../../src/errors/ferry-error.js';
import { PROBLEM_CONTENT_TYPE, problemOf } from '../util/problem.js';

/** Answers the request with the error's problem document (and Retry-After when the error gives one). */
export function sendProblem(reply: FastifyReply, err: FerryError, instance?: string): FastifyReply {
  const problem = problemOf(err, instance);
  const retryAfter = err.details?.['retryAfterSeconds'];
  if (typeof retryAfter === 'number') void reply.header('Retry-After', String(retryAfter));
  return reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).serializer(JSON.stringify).send(problem);
}
