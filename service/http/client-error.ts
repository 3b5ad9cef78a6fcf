import http from 'node:http';
import type { Socket } from 'node:net';
import { FerryError } from '../../src/errors/ferry-error.js';
import { PROBLEM_CONTENT_TYPE, problemOf } from '../util/problem.js';

/**
 * Node's HTTP parser refuses a request before Fastify has one (unreadable request line or
 * headers, headers over the size limit, a request that took too long to arrive). Fastify's own
 * answer is plain JSON; this writes the same answer as a problem document with a code of the table.
 */
export function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const ferry =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new FerryError('API_REQUEST_TIMEOUT', 'The request did not arrive completely in time; send it again.')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new FerryError(
            'API_HEADERS_TOO_LARGE',
            'The request headers are larger than the Service accepts (16 KiB in all).',
          )
        : new FerryError(
            'API_MALFORMED_REQUEST',
            'The HTTP request could not be read: its request line or headers are not valid HTTP/1.1.',
          );
  const problem = problemOf(ferry);
  const body = JSON.stringify(problem);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${problem.status} ${http.STATUS_CODES[problem.status] ?? ''}\r\nConnection: close\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
