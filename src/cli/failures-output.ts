/**
 * What `ferry map failures` and `ferry agent failures` print of a local failed-record store: a
 * page of records or one record, as a table on a terminal and as JSON when piped or with --json.
 * IDs are printed whole: the store's IDs are time-ordered, so the records a batch refused share
 * their first characters, and no shorter prefix is unique.
 */
import { FerryError } from '../errors/ferry-error.js';
import type { FailedRecordBrowser, FailedRecordQuery } from '../failures/browse.js';

/** The list's filters and page as the commands take them (text, from the flags). */
export interface ListFlags {
  map?: string | undefined;
  code?: string | undefined;
  execution?: string | undefined;
  limit?: string | undefined;
  page?: string | undefined;
}

/** How the commands name themselves in the hints they print (`ferry agent failures`, its flags). */
export interface FailuresCommand {
  readonly name: string;
  /** The flags that find the store again, as typed (`--failures DIR`, `--home DIR --instance 2`). */
  readonly storeFlags: string;
}

function whole(flag: string, text: string | undefined, fallback: number, min: number): number {
  if (text === undefined) return fallback;
  if (!/^[0-9]{1,9}$/.test(text) || Number(text) < min)
    throw new FerryError('API_VALIDATION', `--${flag} must be a whole number from ${min}, not "${text}".`);
  return Number(text);
}

/** Prints a page of the store's records, newest first. */
export function printList(
  store: FailedRecordBrowser,
  flags: ListFlags,
  json: boolean,
  cmd: FailuresCommand,
  out: (text: string) => void,
): void {
  const limit = whole('limit', flags.limit, 20, 1);
  const page = whole('page', flags.page, 1, 1);
  const query: FailedRecordQuery = {
    mapName: flags.map,
    code: flags.code,
    executionId: flags.execution?.toLowerCase(),
    limit,
    offset: (page - 1) * limit,
  };
  const { total, records } = store.page(query);
  if (json) {
    out(`${JSON.stringify({ total, page, limit, records })}\n`);
    return;
  }
  if (records.length === 0) {
    out(total === 0 ? 'No failed records.\n' : `No failed records on page ${page} (${total} in all).\n`);
    return;
  }
  const rows = records.map((r) => [
    r.id,
    r.createdAt.slice(0, 19).replace('T', ' '),
    r.mapName,
    r.blockName,
    r.code,
    r.marked ? 'marked' : r.canReprocess ? '' : 'reprocessed',
    oneLine(r.errorMessage, 60),
  ]);
  out(table(['ID', 'WHEN (UTC)', 'MAP', 'BLOCK', 'CODE', 'STATE', 'ERROR'], rows));
  const last = Math.ceil(total / limit);
  out(
    `Page ${page} of ${last} (${total} record${total === 1 ? '' : 's'}).${page < last ? ` Next: --page ${page + 1}.` : ''} Details: ${cmd.name} show ID ${cmd.storeFlags}\n`,
  );
}

/** Prints one record: its error and its source fields. */
export function printRecord(store: FailedRecordBrowser, id: string, json: boolean, out: (text: string) => void): void {
  const r = store.get(id);
  if (!r) throw new FerryError('API_NOT_FOUND', `There is no failed record ${id} in this store.`);
  if (json) {
    out(`${JSON.stringify(r, null, 2)}\n`);
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
  out(`${lines.join('\n')}\n`);
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${[line(head), ...rows.map(line)].join('\n')}\n`;
}

/** The flags both commands take besides the ones that find their store. */
export const LIST_OPTIONS = {
  map: { type: 'string' },
  code: { type: 'string' },
  execution: { type: 'string' },
  limit: { type: 'string' },
  page: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Runs `list` or `show ID` on the store, as a table on a terminal or JSON (piped, --json), and closes it. */
export function printFailures(
  store: FailedRecordBrowser,
  sub: 'list' | 'show',
  id: string | undefined,
  flags: ListFlags & { json: boolean },
  cmd: FailuresCommand,
): void {
  const json = flags.json || !process.stdout.isTTY;
  const out = (text: string): void => void process.stdout.write(text);
  try {
    if (sub === 'show') printRecord(store, id as string, json, out);
    else printList(store, flags, json, cmd, out);
  } finally {
    store.close();
  }
}
