/**
 * `ferry login URL [--user EMAIL] [--password-stdin]` and `ferry logout`: checks the credentials
 * against the Service (`GET /v1/users`, your own account) before keeping them (config.ts).
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { credentialsFile, normalizeUrl, removeCredentials, writeCredentials } from './config.js';
import { ApiError, runClientCommand, UsageError } from './errors.js';
import { ApiClient } from './http.js';
import { canPrompt, promptLine, promptSecret, readStdin } from './prompt.js';

const LOGIN_USAGE = `Usage: ferry login URL [--user EMAIL] [--password-stdin]

  Checks the credentials against the Service and keeps URL, user and password in
  $FERRY_CONFIG_DIR/credentials.json (default ~/.config/ferry, mode 0600).
  The password comes from --password-stdin, else FERRY_PASSWORD, else a prompt on a terminal;
  the user from --user, else FERRY_USER, else a prompt.`;

const Me = z.object({ id: z.string(), email: z.string() });

/** `ferry login`. */
export function login(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return runClientCommand(async () => {
    const { values, positionals } = parseArgs({
      args: argv,
      options: {
        user: { type: 'string', short: 'u' },
        'password-stdin': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    });
    if (values.help) {
      process.stdout.write(`${LOGIN_USAGE}\n`);
      return;
    }
    const rawUrl = positionals[0] ?? env['FERRY_URL'];
    if (positionals.length > 1 || !rawUrl) throw new UsageError(`give the Service's URL\n\n${LOGIN_USAGE}`);
    const url = normalizeUrl(rawUrl);
    let user = values.user ?? env['FERRY_USER'];
    if (!user && canPrompt()) user = (await promptLine('Email: ')).trim();
    if (!user) throw new UsageError('give the user with --user EMAIL (or FERRY_USER)');
    let password: string | undefined;
    if (values['password-stdin']) password = await readStdin();
    else if (env['FERRY_PASSWORD'] !== undefined) password = env['FERRY_PASSWORD'];
    else if (canPrompt()) password = await promptSecret(`Password for ${user}: `);
    if (!password)
      throw new UsageError('give the password with --password-stdin, FERRY_PASSWORD or at the prompt on a terminal');

    const client = new ApiClient({ url, user, password });
    let me: z.infer<typeof Me>;
    try {
      me = await client.call('GET', '/v1/users', Me);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        throw new ApiError(
          401,
          `The Service at ${url} refused the credentials of ${user}`,
          'check the email and the password',
          err.code,
        );
      }
      throw err;
    }
    const file = writeCredentials(env, { url, user, password });
    process.stderr.write(`Logged in to ${url} as ${me.email} (credentials in ${file})\n`);
  });
}

/** `ferry logout`: forgets the stored credentials. */
export function logout(_argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return runClientCommand(async () => {
    const removed = removeCredentials(env);
    process.stderr.write(removed ? `Logged out (removed ${credentialsFile(env)})\n` : 'Not logged in\n');
  });
}
