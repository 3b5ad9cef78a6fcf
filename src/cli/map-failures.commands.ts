/**
 * `ferry map failures list|show --failures DIR`: the local failed-record store a `ferry map run
 * --failures DIR` keeps, read without opening SQLite by hand. A table on a terminal, JSON when
 * piped or with --json.
 */
import { parseArgs } from 'node:util';
import { FailedRecordBrowser } from '../failures/browse.js';
import { LIST_OPTIONS, printFailures } from './failures-output.js';

const USAGE = `Usage: ferry map failures list --failures DIR [--map NAME] [--code CODE] [--execution ID]
                                [--limit N] [--page N] [--json]
       ferry map failures show ID --failures DIR [--json]

  --failures   the folder given to ferry map run --failures
  list         the failed records, newest first, a page at a time (default 20 a page)
  show         one record: its source fields and its error (the ID a list shows, or a unique beginning of it)`;

const OPTIONS = {
  failures: { type: 'string' },
  ...LIST_OPTIONS,
} as const;

/** `ferry map failures <list|show>`. */
export async function mapFailures(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  const { values, positionals } = parseArgs({ args: rest, options: OPTIONS, allowPositionals: true });
  if (values.help || sub === '--help' || sub === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (
    (sub !== 'list' && sub !== 'show') ||
    !values.failures ||
    (sub === 'show' ? positionals.length !== 1 : positionals.length !== 0)
  ) {
    process.stderr.write(
      `ferry map failures: ${sub === 'list' || sub === 'show' ? (values.failures ? 'unexpected arguments' : 'give --failures DIR') : 'say list or show'}\n\n${USAGE}\n`,
    );
    process.exitCode = 2;
    return;
  }
  printFailures(new FailedRecordBrowser(values.failures), sub, positionals[0], values, {
    name: 'ferry map failures',
    storeFlags: `--failures ${values.failures}`,
  });
}
