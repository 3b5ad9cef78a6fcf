#!/usr/bin/env node
/**
 * The `ferry` command. The CLI is the one place that composes both halves: Service commands are
 * loaded lazily, so the Agent runtime never loads Service code.
 */
import { readFileSync } from 'node:fs';

type Command = (argv: string[], env: NodeJS.ProcessEnv) => Promise<void>;

const loadService = () => import('../../service/cli.js');

const COMMANDS: Record<string, Command> = {
  'service start': async (argv, env) => (await loadService()).serviceStart(argv, env),
  'service openapi': async (argv, env) => (await loadService()).serviceOpenapi(argv, env),
  'service create-org': async (argv, env) => (await loadService()).serviceCreateOrg(argv, env),
  // The main job on the embedded default; the local Agent joins it with the Agent commands.
  up: async (argv, env) => (await loadService()).serviceStart(argv, env),
  version: async () => {
    process.stdout.write(`${packageVersion()}\n`);
  },
};

const USAGE = `Usage: ferry <command> [options]

Commands:
  up                     Service on the embedded store (what npm start runs)
  service start          the Service: --port, --host, --data-dir, --database-url
  service openapi        print the OpenAPI document
  service create-org     add a root Organization: --name, --admin-email, [--platform-hosted],
                         [--data-center N], [--allow RANGES], [--data-dir], [--database-url]
  version                print the version

Configuration comes from flags and FERRY_* variables (see README.md).`;

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

async function main(argv: string[]): Promise<number> {
  const two = argv.slice(0, 2).join(' ');
  const one = argv[0] ?? '';
  const [name, rest] = COMMANDS[two] ? [two, argv.slice(2)] : COMMANDS[one] ? [one, argv.slice(1)] : [undefined, argv];
  if (!name || one === '--help' || one === '-h') {
    process.stdout.write(USAGE + '\n');
    return name || one === '--help' || one === '-h' ? 0 : 2;
  }
  await (COMMANDS[name] as Command)(rest, process.env);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`ferry: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
