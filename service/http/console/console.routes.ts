import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { MAX_LOGIN_LENGTH, MAX_PASSWORD_LENGTH } from '../../auth/basic-credentials.js';
import { packageRoot } from '../../util/package-root.js';
import type { PasswordLogin } from '../guard.js';
import type { ConsoleSessions } from './sessions.js';
import { SESSION_IDLE_MS } from './sessions.js';
import { ConsoleFiles } from './static-files.js';

/** The header every console request carries: the sign-in and sign-out refuse a request without it. */
const ConsoleHeaders = z.object({ 'x-ferry-console': z.literal('1') });

const SignIn = z
  .object({
    email: z.string().min(1).max(MAX_LOGIN_LENGTH),
    password: z.string().min(1).max(MAX_PASSWORD_LENGTH),
  })
  .strict();

/**
 * The web console (docs/console.md): its built files under /console, and its sign-in and sign-out.
 * Everything else the console does goes through the /v1 API with the session cookie.
 */
export function registerConsole(
  app: FastifyInstance,
  sessions: ConsoleSessions,
  login: PasswordLogin,
  dir: string = path.join(packageRoot(), 'dist', 'console'),
): void {
  const files = new ConsoleFiles(dir);
  const zapp = app.withTypeProvider<ZodTypeProvider>();

  zapp.post(
    '/console/session',
    { config: { access: 'public' }, schema: { hide: true, headers: ConsoleHeaders, body: SignIn } },
    async (req, reply) => {
      const user = await login(req.body.email, req.body.password, req.ip);
      await sessions.begin(req, reply, user);
      void reply.header('Cache-Control', 'no-store');
      return {
        email: user.email,
        firstName: user.firstName,
        lastName: user.lastName,
        idleTimeoutSeconds: SESSION_IDLE_MS / 1000,
      };
    },
  );

  zapp.delete(
    '/console/session',
    { config: { access: 'public' }, schema: { hide: true, headers: ConsoleHeaders } },
    async (req, reply) => {
      await sessions.end(req, reply);
      return reply.code(204).send();
    },
  );

  app.get('/console', { config: { access: 'public' }, schema: { hide: true } }, async (_req, reply) =>
    files.send(reply, ''),
  );
  app.get<{ Params: { '*': string } }>(
    '/console/*',
    { config: { access: 'public' }, schema: { hide: true } },
    async (req, reply) => files.send(reply, req.params['*']),
  );
}
