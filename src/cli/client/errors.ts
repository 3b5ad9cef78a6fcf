import { parseArgs, type ParseArgsConfig } from 'node:util';

/** The options of a parseArgs call. */
type ParseArgsOptionsConfig = NonNullable<ParseArgsConfig['options']>;

/**
 * The API client's failures and its exit codes: 1 the API refused the call (4xx/5xx) or the work
 * failed (a Connection test), 2 bad usage, 4 not logged in or the credentials were refused.
 * Messages never carry a password or a property value.
 */

/** Exit code when the Service refused the credentials, or there are none. */
export const EXIT_AUTH = 4;

/** Wrong arguments or a missing login; `exitCode` 2 unless given. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** An error answer of the API: its status and the problem document's code, title and detail (status 0: no usable answer). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly code: string | undefined,
  ) {
    super(
      `${status ? `${status} ` : ''}${title}${detail && detail !== title ? `: ${detail}` : ''}${code ? ` (${code})` : ''}`,
    );
    this.name = 'ApiError';
  }

  get exitCode(): number {
    return this.status === 401 ? EXIT_AUTH : 1;
  }
}

/** Runs a client command: known failures become one `ferry: …` line on stderr and the exit code. */
export async function runClientCommand(run: () => Promise<number | void>): Promise<void> {
  try {
    const code = await run();
    if (typeof code === 'number' && code !== 0) process.exitCode = code;
  } catch (err) {
    if (err instanceof ApiError || err instanceof UsageError) {
      const hint =
        err instanceof ApiError && err.status === 401
          ? '\n  check the user and password: ferry login URL --user EMAIL (or FERRY_USER / FERRY_PASSWORD)'
          : '';
      process.stderr.write(`ferry: ${err.message}${hint}\n`);
      process.exitCode = err.exitCode;
      return;
    }
    if (err instanceof Error && String((err as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`ferry: ${err.message} (see --help)\n`);
      process.exitCode = 2;
      return;
    }
    throw err;
  }
}

/** The values parseArgs gives for `options`, positionals allowed. */
export type ParsedValues<O extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ options: O; allowPositionals: true }>
>['values'];

/**
 * A client command of a group (`ferry solutions …`, `ferry maps …`): parses the group's options,
 * prints its usage on --help, and runs through {@link runClientCommand} for the exit codes.
 */
export function clientCommand<const O extends ParseArgsOptionsConfig>(
  options: O,
  usage: string,
  run: (values: ParsedValues<O>, positionals: string[], env: NodeJS.ProcessEnv) => Promise<number | void>,
): (argv: string[], env: NodeJS.ProcessEnv) => Promise<void> {
  return (argv, env) =>
    runClientCommand(async () => {
      const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true });
      // Every group's options hold --help.
      if ((values as { help?: unknown }).help) {
        process.stdout.write(`${usage}\n`);
        return;
      }
      return run(values, positionals, env);
    });
}
