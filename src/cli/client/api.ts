/**
 * `ferry api METHOD PATH [--data JSON|@FILE|-] [--query k=v …]`: any call of the /v1 API with the
 * stored login; the answer's JSON on stdout, problem title and detail on stderr with exit 1.
 */
import fs from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { resolveCredentials } from './config.js';
import { runClientCommand, UsageError } from './errors.js';
import { apiErrorOf, ApiClient } from './http.js';
import { printJson } from './output.js';
import { readStdin } from './prompt.js';

const USAGE = `Usage: ferry api METHOD PATH [--data JSON|@FILE|-] [--query key=value …] [--include]

  PATH is /v1/… or relative to /v1 (orgs/1/connections). --data sends a JSON body: inline, from a
  file (@FILE) or from stdin (-). --include prints the status and Total-Count on stderr.
  Exit 1 on 4xx/5xx with the problem's title and detail on stderr.`;

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']);

/** `ferry api`. */
export function api(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return runClientCommand(async () => {
    const { values, positionals } = parseArgs({
      args: argv,
      options: {
        data: { type: 'string', short: 'd' },
        query: { type: 'string', short: 'q', multiple: true },
        include: { type: 'boolean', short: 'i' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    });
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      return;
    }
    const [rawMethod, path] = positionals;
    const method = rawMethod?.toUpperCase();
    if (positionals.length !== 2 || !method || !path) throw new UsageError(`give METHOD and PATH\n\n${USAGE}`);
    if (!METHODS.has(method)) throw new UsageError(`${rawMethod} is not an HTTP method (${[...METHODS].join(', ')})`);
    const query = (values.query ?? []).map((pair): [string, string] => {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new UsageError(`--query ${pair}: write key=value`);
      return [pair.slice(0, eq), pair.slice(eq + 1)];
    });
    const body = values.data === undefined ? undefined : await readData(values.data);
    const client = new ApiClient(resolveCredentials(env));
    const answer = await client.request(method, path, { query, ...(body !== undefined ? { body } : {}) });
    if (values.include) {
      const total = answer.headers.get('total-count');
      process.stderr.write(`HTTP ${answer.status}${total !== null ? `  Total-Count: ${total}` : ''}\n`);
    }
    if (answer.status >= 400) throw apiErrorOf(answer);
    if (typeof answer.body === 'string') {
      if (answer.body) process.stdout.write(answer.body.endsWith('\n') ? answer.body : `${answer.body}\n`);
      return;
    }
    printJson(answer.body);
  });
}

/** The --data value as JSON text, checked locally so a typo is not sent. */
export async function readData(data: string): Promise<string> {
  let text: string;
  if (data === '-') text = await readStdin();
  else if (data.startsWith('@')) {
    try {
      text = await fs.readFile(data.slice(1), 'utf8');
    } catch (err) {
      throw new UsageError(`--data ${data}: ${err instanceof Error ? err.message : String(err)}`);
    }
  } else text = data;
  try {
    JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--data is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  return text;
}
