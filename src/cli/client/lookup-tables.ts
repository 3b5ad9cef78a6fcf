/**
 * `ferry lookuptables list|import|export --org N`: Lookup Tables through the API, to and from
 * files. A table is named by name (any case) or ID.
 *
 *   import: FILE (CSV, or a Lookup Tables JSON file) ─▶ per table: POST L when the Organization
 *           has none of that name ─▶ POST L/{id}/import?replace=true (raw text/csv, all or nothing)
 *           ─▶ an import refused leaves no table it created behind
 *   export: CSV  GET L/{id}/export ─▶ GET L/{id}/export/{exportId} (used once) ─▶ stdout | --out
 *           JSON GET L/{id} ─▶ {"Name": [{value1, value2}, …]}, the file `ferry map run
 *           --lookup-tables` and import read
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { parseArgs } from 'node:util';
import { z } from 'zod';
import { FerryError } from '../../errors/ferry-error.js';
import { lookupTablesOf } from '../lookup-tables-file.js';
import { orgOf } from './args.js';
import { resolveCredentials } from './config.js';
import { isGuid } from './connectors.js';
import { clientCommand, UsageError } from './errors.js';
import { apiErrorOf, ApiClient } from './http.js';
import { printJson, printTable, wantsJson } from './output.js';
import { readStdin } from './prompt.js';

const USAGE = `Usage: ferry lookuptables list --org N [--json]
       ferry lookuptables import --org N FILE|- [--name TABLE] [--description D] [--format csv|json]
                                 [--append] [--no-header] [--json]
       ferry lookuptables export --org N ID|NAME [--out FILE] [--format csv|json]

  import reads value1,value2 lines (CSV, a header line first unless --no-header) or a Lookup
  Tables file (JSON: {"Table": [{"value1": …, "value2": …}, …]}, the file of ferry map run
  --lookup-tables). A table the Organization does not have is created; an existing one gets the
  file's values in place of its own (--append adds them after its own). All or nothing per table.
  The format is --format, else JSON for a .json file, else CSV (- reads stdin). The table is
  --name, else the CSV file's name without its extension, else the names in the JSON file.
  export writes CSV (what import reads back) or, with --format json or --out FILE.json, a Lookup
  Tables file, to stdout or --out FILE.`;

const OPTIONS = {
  org: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  name: { type: 'string' },
  description: { type: 'string' },
  format: { type: 'string' },
  append: { type: 'boolean' },
  'no-header': { type: 'boolean' },
  out: { type: 'string', short: 'o' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

const Table = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable().optional(),
    lastModificationDate: z.string().nullable().optional(),
    modificationBy: z.string().nullable().optional(),
    lookupTableValues: z.array(z.object({ value1: z.string(), value2: z.string() }).passthrough()).optional(),
  })
  .passthrough();
type Table = z.infer<typeof Table>;

const ImportResult = z.object({
  lookupTableId: z.string(),
  valuesImported: z.number(),
  valuesRemoved: z.number(),
  valueCount: z.number(),
});

/** What an import did to one table. */
interface Imported {
  lookupTableId: string;
  name: string;
  created: boolean;
  valuesImported: number;
  valuesRemoved: number;
  valueCount: number;
}

const PAGE = 1000;
const base = (orgId: number): string => `/v1/orgs/${orgId}/lookuptables`;

const command = (run: Parameters<typeof clientCommand<typeof OPTIONS>>[2]) => clientCommand(OPTIONS, USAGE, run);

/** Every table of the Organization, without their values. */
async function allTables(client: ApiClient, org: number): Promise<Table[]> {
  const all: Table[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await client.call('GET', base(org), z.array(Table), { query: { limit: PAGE, offset } });
    all.push(...page);
    if (page.length < PAGE) return all;
  }
}

const sameName = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

/** The table with this ID or name (names are unique ignoring case). */
async function findTable(client: ApiClient, org: number, idOrName: string | undefined): Promise<Table> {
  if (!idOrName) throw new UsageError(`give the Lookup Table's ID or name\n\n${USAGE}`);
  const tables = await allTables(client, org);
  const found = tables.find((t) => (isGuid(idOrName) && sameName(t.id, idOrName)) || sameName(t.name, idOrName));
  if (found) return found;
  const near = tables.filter((t) => t.name.toLowerCase().includes(idOrName.toLowerCase())).slice(0, 5);
  const hint = near.length > 0 ? `; names containing it: ${near.map((t) => `"${t.name}"`).join(', ')}` : '';
  throw new UsageError(`No Lookup Table "${idOrName}" in Organization ${org}${hint}`, 1);
}

function formatOf(flag: string | undefined, file: string | undefined): 'csv' | 'json' {
  if (flag !== undefined) {
    const f = flag.toLowerCase();
    if (f !== 'csv' && f !== 'json') throw new UsageError(`--format ${flag}: give csv or json`);
    return f;
  }
  return file !== undefined && path.extname(file).toLowerCase() === '.json' ? 'json' : 'csv';
}

/** One CSV field as RFC 4180 quotes it (what the Service's import reads). */
function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/** The pairs of a JSON table as CSV text with a header line; an empty value1 is refused here, naming the pair. */
function csvOfPairs(table: string, source: string, pairs: Iterable<{ value1: string; value2: string }>): string {
  const lines = ['value1,value2'];
  let i = 0;
  for (const p of pairs) {
    if (p.value1 === '') throw new UsageError(`${source}: "${table}"[${i}] has an empty value1; every pair needs one`);
    lines.push(`${csvField(p.value1)},${csvField(p.value2)}`);
    i++;
  }
  return `${lines.join('\r\n')}\r\n`;
}

/** The tables a file gives: name, CSV text to import, and whether it starts with a header line. */
interface Incoming {
  name: string;
  csv: string | Buffer;
  hasHeaderRow: boolean;
}

/** What FILE holds, as tables to import. */
async function incomingOf(values: Values, file: string): Promise<Incoming[]> {
  const source = file === '-' ? 'stdin' : file;
  const format = formatOf(values.format, file === '-' ? undefined : file);
  let content: Buffer;
  try {
    content = file === '-' ? Buffer.from(await readStdin(), 'utf8') : await fs.readFile(file);
  } catch (err) {
    throw new UsageError(`${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const stem = file === '-' ? undefined : path.basename(file, path.extname(file));
  if (format === 'csv') {
    const name = values.name ?? stem;
    if (!name) throw new UsageError('give the table with --name TABLE when the CSV comes from stdin');
    return [{ name, csv: content, hasHeaderRow: values['no-header'] !== true }];
  }
  if (values['no-header']) throw new UsageError('--no-header is for CSV; a JSON file has no header line');
  let json: unknown;
  try {
    json = JSON.parse(content.toString('utf8')) as unknown;
  } catch (err) {
    throw new UsageError(`${source} is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  let tables: ReturnType<typeof lookupTablesOf>;
  try {
    if (Array.isArray(json)) {
      const name = values.name ?? stem;
      if (!name) throw new UsageError('give the table with --name TABLE for a list of pairs from stdin');
      tables = lookupTablesOf({ [name]: json }, source);
    } else tables = lookupTablesOf(json, source);
  } catch (err) {
    if (err instanceof FerryError) throw new UsageError(err.message);
    throw err;
  }
  if (tables.length === 0) throw new UsageError(`${source} holds no table`);
  if (values.name !== undefined && tables.length > 1)
    throw new UsageError(`${source} holds ${tables.length} tables; --name names one`);
  return tables.map((t) => ({
    name: values.name ?? t.name,
    csv: csvOfPairs(t.name, source, t.values),
    hasHeaderRow: true,
  }));
}

/** Creates the table when the Organization has none of its name, then imports its values; a table it created goes again when the import is refused. */
async function importTable(
  client: ApiClient,
  org: number,
  tables: Table[],
  table: Incoming,
  values: Values,
): Promise<Imported> {
  let target = tables.find((t) => sameName(t.name, table.name));
  const created = target === undefined;
  if (!target) {
    target = await client.call('POST', base(org), Table, {
      body: { name: table.name, ...(values.description !== undefined ? { description: values.description } : {}) },
    });
  } else if (values.description !== undefined && values.description !== (target.description ?? '')) {
    // Without lookupTableValues a PUT keeps the values.
    target = await client.call('PUT', `${base(org)}/${target.id}`, Table, {
      body: { name: target.name, description: values.description },
    });
  }
  try {
    const result = await client.call('POST', `${base(org)}/${target.id}/import`, ImportResult, {
      query: { hasHeaderRow: table.hasHeaderRow, replace: values.append !== true },
      body: table.csv,
      contentType: 'text/csv; charset=utf-8',
    });
    return { ...result, lookupTableId: target.id, name: target.name, created };
  } catch (err) {
    if (created) await client.request('DELETE', `${base(org)}/${target.id}`).catch(() => undefined);
    throw err;
  }
}

/** `ferry lookuptables list`. */
export const lookupTablesList = command(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  if (positionals.length > 0) throw new UsageError(`unexpected ${positionals[0]}\n\n${USAGE}`);
  const client = new ApiClient(resolveCredentials(env));
  const tables = await allTables(client, org);
  if (wantsJson(values.json)) return printJson(tables);
  printTable(tables, [
    { header: 'ID', value: (t) => t.id },
    { header: 'NAME', value: (t) => t.name },
    { header: 'MODIFIED', value: (t) => t.lastModificationDate ?? '' },
    { header: 'DESCRIPTION', value: (t) => t.description ?? '' },
  ]);
});

/** `ferry lookuptables import FILE|-`: exit 0 once every table is imported, 1 when the Service refuses one (the tables before it stay imported). */
export const lookupTablesImport = command(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const [file] = positionals;
  if (positionals.length !== 1 || file === undefined)
    throw new UsageError(`give one FILE (or - for stdin)\n\n${USAGE}`);
  const incoming = await incomingOf(values, file);
  const client = new ApiClient(resolveCredentials(env));
  const tables = await allTables(client, org);
  const done: Imported[] = [];
  for (const table of incoming) {
    const result = await importTable(client, org, tables, table, values);
    done.push(result);
    if (!wantsJson(values.json)) {
      const how = result.created
        ? 'created'
        : values.append
          ? `appended to ${result.valueCount - result.valuesImported}`
          : `replaced ${result.valuesRemoved}`;
      process.stdout.write(
        `Imported ${result.valuesImported} values into "${result.name}" (${how}): ${result.valueCount} in all\n`,
      );
    }
  }
  if (wantsJson(values.json)) printJson(done);
});

/** `ferry lookuptables export ID|NAME [--out FILE] [--format csv|json]`. */
export const lookupTablesExport = command(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  if (positionals.length > 1) throw new UsageError(`unexpected ${positionals[1]}: give one table\n\n${USAGE}`);
  if (values.json && values.format !== undefined && values.format.toLowerCase() !== 'json')
    throw new UsageError('give --json or --format csv, not both');
  const format = values.json ? 'json' : formatOf(values.format, values.out);
  const client = new ApiClient(resolveCredentials(env));
  const found = await findTable(client, org, positionals[0]);
  let content: string;
  if (format === 'csv') {
    const { exportId } = await client.call(
      'GET',
      `${base(org)}/${found.id}/export`,
      z.object({ exportId: z.number() }),
    );
    const answer = await client.request('GET', `${base(org)}/${found.id}/export/${exportId}`);
    if (answer.status >= 400) throw apiErrorOf(answer);
    content = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
  } else {
    const table = await client.call('GET', `${base(org)}/${found.id}`, Table);
    const pairs = (table.lookupTableValues ?? []).map((v) => ({ value1: v.value1, value2: v.value2 }));
    content = `${JSON.stringify({ [table.name]: pairs }, null, 2)}\n`;
  }
  if (values.out === undefined) {
    process.stdout.write(content);
    return;
  }
  try {
    await fs.writeFile(values.out, content);
  } catch (err) {
    throw new UsageError(`--out ${values.out}: ${err instanceof Error ? err.message : String(err)}`, 1);
  }
  process.stderr.write(`Exported "${found.name}" to ${values.out} (${format.toUpperCase()})\n`);
});
