/**
 * `ferry agent failures list|show [--home DIR] [--instance N]`: the failed source records an
 * installed Agent keeps on this machine (the Organization's isSourceDataLocal true), read from
 * its instance folder without opening SQLite by hand. The IDs are the `failedRecordId`s of
 * History's record errors. A table on a terminal, JSON when piped or with --json.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { resolveInstance } from '../agent/home.js';
import { parseAgentConfig } from '../agent/config.js';
import { FerryError } from '../errors/ferry-error.js';
import { FailedRecordBrowser } from '../failures/browse.js';
import { FAILED_RECORDS_FILE } from '../failures/store.js';
import { LIST_OPTIONS, printFailures } from './failures-output.js';

const USAGE = `Usage: ferry agent failures list [--home DIR] [--instance N] [--execution RUN] [--map NAME] [--code CODE]
                                [--limit N] [--page N] [--json]
       ferry agent failures show ID [--home DIR] [--instance N] [--json]

  --home       the Agents' home folder (FERRY_AGENT_HOME; default the platform's, see ferry agent status)
  --instance   which installed Agent, when there are several (2 or ferry-agent-2)
  list         the Agent's failed records, newest first, a page at a time (default 20 a page);
               --execution keeps one run's (the processExecutionId History shows)
  show         one record: its source fields and its error; ID is the failedRecordId of the
               record error in History (GET …/history/{id}/errors), or a unique beginning of it`;

const OPTIONS = {
  home: { type: 'string' },
  instance: { type: 'string' },
  ...LIST_OPTIONS,
} as const;

/** `ferry agent failures <list|show>`. */
export async function agentFailures(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [sub, ...rest] = argv;
  const { values, positionals } = parseArgs({ args: rest, options: OPTIONS, allowPositionals: true });
  if (values.help || sub === '--help' || sub === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if ((sub !== 'list' && sub !== 'show') || (sub === 'show' ? positionals.length !== 1 : positionals.length !== 0)) {
    process.stderr.write(
      `ferry agent failures: ${sub === 'list' || sub === 'show' ? (sub === 'show' && positionals.length === 0 ? 'give the ID of a failed record' : 'unexpected arguments') : 'say list or show'}\n\n${USAGE}\n`,
    );
    process.exitCode = 2;
    return;
  }
  const home = parseAgentConfig(env, { home: values.home }).home;
  const paths = resolveInstance(home, values.instance);
  const store = openStore(paths.failures, paths.serviceName);
  const storeFlags = [
    values.home !== undefined ? `--home ${home}` : '',
    values.instance !== undefined ? `--instance ${paths.number}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  printFailures(store, sub, positionals[0], values, { name: 'ferry agent failures', storeFlags });
}

/** The instance's store, read-only; said plainly when it has none yet or this user may not read it. */
function openStore(folder: string, instance: string): FailedRecordBrowser {
  const file = path.join(folder, FAILED_RECORDS_FILE);
  try {
    fs.accessSync(file, fs.constants.R_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT')
      throw new FerryError('RUN_STORE_FAILED', `Agent ${instance} has kept no failed records yet (no ${file}).`, {
        details: { file },
      });
    if (code === 'EACCES' || code === 'EPERM') {
      throw new FerryError(
        'RUN_STORE_FAILED',
        `${file} cannot be read by this user: run the command as the Agent's account (for example with sudo).`,
        { details: { file } },
      );
    }
    throw err;
  }
  return new FailedRecordBrowser(folder);
}
