import type { FastifyRequest } from 'fastify';
import { FerryError } from '../../src/errors/ferry-error.js';
import type { ServiceConfig } from '../config.js';

const HOST_RE = /^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:\d{1,5})?$/;

/**
 * The Service's base URL for links it hands out (installer, package): FERRY_PUBLIC_URL, else the
 * scheme and host the request came in on. The host is checked, because it ends up in a script.
 */
export function serviceBaseUrl(req: FastifyRequest, config: ServiceConfig): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/+$/, '');
  const host = req.host;
  if (!HOST_RE.test(host)) {
    throw new FerryError(
      'API_VALIDATION',
      'The Host header is not a host name; call the Service by its name or address, or set FERRY_PUBLIC_URL.',
      {
        errors: [{ path: 'header.host', message: 'not a host name' }],
      },
    );
  }
  return `${req.protocol === 'https' ? 'https' : 'http'}://${host}`;
}
