/**
 * `ferry map failures list|show --failures DIR`: the local failed-record store a `ferry map run
 * --failures DIR` keeps, read without opening SQLite by hand. A table on a terminal, JSON when
 * piped or with --json.
 */
import { parseArgs } from 'node:util';
import { FerryError } from '../errors/ferry-error.js';
import { FailedRecordBrowser } from '../failures/browse.js';

const USAGE = `Usage: ferry map failures list --failures DIR [--map NAME] [--code CODE] [--execution ID]
                                [--limit N] [--page N] [--json]
       ferry map failures show ID --failures DIR [--json]

  --failures   the folder given to ferry map run --failures
  list         the failed records, newest first, a page at a time (default 20 a page)
  show         one record: its source fields and its error (ID, or the beginning a list shows)`;

const OPTIONS = {
  failures: { type: 'string' },
  map: { type: 'string' },
  code: { type: 'string' },
  execution: { type: 'string' },
  limit: { type: 'string' },
  page: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `ferry map failures <list|show>`. */
export async function mapFailures(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  const { values, positionals } = parseArgs({ args: rest, options: OPTIONS, allowPositionals: true });
  if (values.help || sub === '--help' || sub === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if ((sub !== 'list' && sub !== 'show') || !values.failures || (sub === 'show' ? positionals.length !== 1 : positionals.length !== 0)) {
    process.stderr.write(`ferry map failures: ${sub === 'list' || sub === 'show' ? (values.failures ? 'unexpected arguments' : 'give --failures DIR') : 'say list or show'}\n\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const json = values.json || !process.stdout.isTTY;
  const store = new FailedRecordBrowser(values.failures);
  try {
    if (sub === 'show') show(store, positionals[0] as string, json);
    else list(store, values, json);
  } finally {
    store.close();
  }
}

function whole(flag: string, text: string | undefined, fallback: number, min: number): number {
  if (text === undefined) return fallback;
  if (!/^[0-9]{1,9}$/.test(text) || Number(text) < min) throw new FerryError('API_VALIDATION', `--${flag} must be a whole number from ${min}, not "${text}".`);
  return Number(text);
}

function list(store: FailedRecordBrowser, values: { map?: string | undefined; code?: string | undefined; execution?: string | undefined; limit?: string | undefined; page?: string | undefined }, json: boolean): void {
  const limit = whole('limit', values.limit, 20, 1);
  const page = whole('page', values.page, 1, 1);
  const { total, records } = store.page({ mapName: values.map, code: values.code, executionId: values.execution, limit, offset: (page - 1) * limit });
  if (json) {
    process.stdout.write(`${JSON.stringify({ total, page, limit, records })}\n`);
    return;
  }
  if (records.length === 0) {
    process.stdout.write(total === 0 ? 'No failed records.\n' : `No failed records on page ${page} (${total} in all).\n`);
    return;
  }
  const rows = records.map((r) => [r.id.slice(0, 8), r.createdAt.slice(0, 19).replace('T', ' '), r.mapName, r.blockName, r.code, r.marked ? 'marked' : r.canReprocess ? '' : 'reprocessed', oneLine(r.errorMessage, 80)]);
  process.stdout.write(table(['ID', 'WHEN (UTC)', 'MAP', 'BLOCK', 'CODE', 'STATE', 'ERROR'], rows));
  const last = Math.ceil(total / limit);
  process.stdout.write(`Page ${page} of ${last} (${total} record${total === 1 ? '' : 's'}).${page < last ? ` Next: --page ${page + 1}.` : ''} Details: ferry map failures show ID --failures DIR\n`);
}

function show(store: FailedRecordBrowser, id: string, json: boolean): void {
  const r = store.get(id);
  if (!r) throw new FerryError('API_NOT_FOUND', `There is no failed record ${id} in this store.`);
  if (json) {
    process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
    return;
  }
  const lines = [
    `Failed record ${r.id}`,
    `  Map:        ${r.mapName}${r.mapId !== null ? ` (${r.mapId})` : ''}   entity ${r.entity}`,
    `  Block:      ${r.blockName} [${r.blockId}]`,
    `  Execution:  ${r.executionId}   at ${r.createdAt}`,
    `  Error:      ${r.code}: ${r.errorMessage}`,
    ...(r.errorDetail && r.errorDetail !== '{}' ? [`  Detail:     ${r.errorDetail}`] : []),
    `  State:      ${r.marked ? 'marked for reprocessing' : r.canReprocess ? 'can be reprocessed' : 'reprocessed'}`,
    '  Record:',
    ...Object.entries(r.source).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd();
  return `${[line(head), ...rows.map(line)].join('\n')}\n`;
}
