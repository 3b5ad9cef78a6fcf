import type { FastifyRequest } from 'fastify';
import { FerryError } from '../../src/errors/ferry-error.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The content types a route's body may have, named by its 415 answer; absent: JSON only. A
     * route that takes more registers their parsers in its plugin and lists them here.
     */
    bodyTypes?: readonly string[];
  }
}

const JSON_ONLY: readonly string[] = ['application/json'];

function listOf(types: readonly string[]): string {
  if (types.length <= 1) return types[0] ?? 'application/json';
  return `${types.slice(0, -1).join(', ')} or ${types[types.length - 1] ?? ''}`;
}

/**
 * The 415 answer for a body whose content type the route has no parser for: names what was sent,
 * every type the route takes, and, for curl's default (`-d` sends a form), the header to add.
 */
export function unsupportedMediaType(req: FastifyRequest): FerryError {
  const types = req.routeOptions.config.bodyTypes ?? JSON_ONLY;
  const sent = (req.headers['content-type'] ?? '').split(';')[0]?.trim().slice(0, 100) ?? '';
  const what = sent
    ? `The body is sent as ${sent}, which this operation does not take`
    : 'The body has no Content-Type';
  const curl =
    sent === 'application/x-www-form-urlencoded'
      ? ` (curl -d sends a form: add -H 'Content-Type: ${types[0] ?? 'application/json'}', and use --data-binary @FILE for a file)`
      : '';
  return new FerryError('API_UNSUPPORTED_MEDIA_TYPE', `${what}; send it as ${listOf(types)}${curl}.`, {
    details: { accepted: [...types] },
  });
}
