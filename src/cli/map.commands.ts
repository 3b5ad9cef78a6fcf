/**
 * `ferry map validate MAP.json --connections CONNS.json` and `ferry map run MAP.json --connections
 * CONNS.json [--state FILE] [--failures DIR] [--lookup-tables FILE] [--batch-size N]`: validate or
 * run a Map locally with the built-in Connector plugins, no Service needed.
 *
 * CONNS.json: `{ "<connectionId>": { "connector": "CSV", "properties": { "folder": "/data" } } }`.
 * The Lookup Tables file: see lookup-tables-file.ts.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { FerryError, isFerryError } from '../errors/ferry-error.js';
import { upgradeMap } from '../maps/compiler/upgrade.js';
import { validateModel, type ValidationResult } from '../maps/compiler/validate.js';
import {
  connectionIdsOf,
  openConnections,
  openRun,
  type ConnectionSpec,
  type HostChoice,
  type RunHandle,
} from '../maps/open-run.js';
import type { FormulaBudget } from '../maps/runtime/formula-budget.js';
import { runMap } from '../maps/runtime/run.js';
import { FileWatermark } from '../maps/runtime/watermark.js';
import { missingTables, readLookupTablesFile } from './lookup-tables-file.js';
import { RecordErrorReport, SHOWN_PER_CODE } from './record-errors.js';

const OPTIONS = {
  connections: { type: 'string' },
  connectors: { type: 'string' },
  state: { type: 'string' },
  failures: { type: 'string' },
  'lookup-tables': { type: 'string' },
  'batch-size': { type: 'string' },
  message: { type: 'string' },
  'formula-budget-block-ms': { type: 'string' },
  'formula-budget-run-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const USAGE = `Usage: ferry map validate MAP.json --connections CONNS.json
       ferry map run MAP.json --connections CONNS.json [--state FILE] [--failures DIR]
                     [--lookup-tables FILE] [--batch-size N] [--message FILE]
                     [--formula-budget-block-ms N] [--formula-budget-run-ms N]

  --connections  {"<connectionId>": {"connector": "CSV", "properties": {...}}}
  --connectors   the folder of Connector plugins (default: the built-in ones)
  --state        a JSON file keeping the net-change watermark between runs (checkpointed per batch)
  --failures     a folder for the local failed-record store (SQLite)
  --lookup-tables  a JSON file of the Lookup Tables the formulas read:
                 {"States": [{"value1": "California", "value2": "CA"}, …], …}
  --batch-size   records per batch (default the Map's, else 2000; clamped to the Connector's limit)
  --message      a JSON file: the message of a Wait For Message / Wait For Request Map; a reply sent
                 by Send Reply is printed as {"reply": …} before the statistics
  --formula-budget-block-ms  the formula time one record may use in one Block, all its Loop
                 iterations together (default 10000); past it the record fails with
                 RUN_FORMULA_TIME_BUDGET and the run goes on; 0 turns it off
  --formula-budget-run-ms    the same for one record in the whole run (default 60000)`;

/** The built-in plugins beside the command: `connectors/` from src/cli, `dist/connectors/` from dist/src/cli. */
const defaultConnectorsDir = (): string =>
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../connectors');

async function readJson(file: string, what: string): Promise<unknown> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as unknown;
  } catch (err) {
    throw new FerryError(
      'MAP_MODEL_INVALID',
      `${what} ${file} cannot be read: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/** The --connections file and the Connector host of the command (the --connectors folder, else the built-in plugins). */
async function connectionsOf(
  values: Record<string, string | boolean | undefined>,
): Promise<HostChoice & { connections: Record<string, ConnectionSpec | undefined> }> {
  const connections = (await readJson(values['connections'] as string, 'The connections file')) as Record<
    string,
    ConnectionSpec | undefined
  >;
  return {
    connections,
    connectorsDir: (values['connectors'] as string | undefined) ?? defaultConnectorsDir(),
    log: pino({ level: 'silent' }),
  };
}

function parse(argv: string[]): { file: string; values: Record<string, string | boolean | undefined> } | undefined {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return undefined;
  }
  if (positionals.length !== 1 || !values.connections) {
    process.stderr.write(`ferry map: give one MAP.json and --connections CONNS.json\n\n${USAGE}\n`);
    process.exitCode = 2;
    return undefined;
  }
  return { file: positionals[0] as string, values };
}

function formatResult(r: ValidationResult): string {
  // A formula error's message already ends with its position; other results get it appended.
  const position = r.position ? `(line ${r.position.line}, column ${r.position.column})` : '';
  const where = position && !r.message.includes(position) ? ` ${position}` : '';
  return `${r.severity.toUpperCase()} ${r.code} ${r.blockName ?? '(map)'}${r.blockId ? ` [${r.blockId}]` : ''}: ${r.message}${where}`;
}

/** The --formula-budget-* flags: milliseconds, a whole number from 0 (off). */
function formulaBudget(values: Record<string, string | boolean | undefined>): Partial<FormulaBudget> {
  const read = (flag: string): number | undefined => {
    const text = values[flag];
    if (typeof text !== 'string') return undefined;
    if (!/^[0-9]{1,10}$/.test(text))
      throw new FerryError(
        'MAP_MODEL_INVALID',
        `--${flag} must be a whole number of milliseconds (0 turns the budget off), not "${text}".`,
      );
    return Number(text);
  };
  const perBlockMs = read('formula-budget-block-ms');
  const perRunMs = read('formula-budget-run-ms');
  return { ...(perBlockMs !== undefined ? { perBlockMs } : {}), ...(perRunMs !== undefined ? { perRunMs } : {}) };
}

/** `ferry map validate`: prints the per-Block results; exit 1 when there are errors. */
export async function mapValidate(argv: string[]): Promise<void> {
  const a = parse(argv);
  if (!a) return;
  const model = upgradeMap(await readJson(a.file, 'The Map'));
  const opened = await openConnections(connectionIdsOf(model), await connectionsOf(a.values));
  try {
    const v = validateModel(model, opened.metadata);
    for (const r of v.results) process.stdout.write(`${formatResult(r)}\n`);
    process.stdout.write(
      v.valid
        ? `The Map ${model.name} is valid.\n`
        : `The Map ${model.name} has ${v.results.filter((r) => r.severity === 'error').length} error(s).\n`,
    );
    if (!v.valid) process.exitCode = 1;
  } finally {
    await opened.close();
  }
}

/** `ferry map run`: runs the Map; a progress line on a terminal, the statistics as JSON at the end. */
export async function mapRun(argv: string[]): Promise<void> {
  const a = parse(argv);
  if (!a) return;
  const model = upgradeMap(await readJson(a.file, 'The Map'));
  const tablesFile = a.values['lookup-tables'] as string | undefined;
  const lookupTables = tablesFile ? await readLookupTablesFile(tablesFile) : [];
  let run: RunHandle;
  try {
    run = await openRun(model, {
      ...(await connectionsOf(a.values)),
      failuresDir: a.values['failures'] as string | undefined,
    });
  } catch (err) {
    if (isFerryError(err) && err.code === 'MAP_INVALID') {
      for (const r of (err.details?.['results'] as ValidationResult[] | undefined) ?? [])
        process.stderr.write(`${formatResult(r)}\n`);
    }
    throw err;
  }
  const { plan, connections, failures } = run;
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  process.once('SIGINT', stop);
  const tty = process.stderr.isTTY;
  // On a terminal the progress line is rewritten in place: a record error line clears it first.
  const report = new RecordErrorReport(
    process.stderr,
    tty,
    SHOWN_PER_CODE,
    () => void process.stderr.write('\r\u001b[K'),
  );
  try {
    const missing = missingTables(plan.lookupTables.names, lookupTables);
    if (missing.length > 0) {
      throw new FerryError(
        'MAP_LOOKUP_TABLE_NOT_FOUND',
        `The Map reads the Lookup Table(s) ${missing.map((n) => `"${n}"`).join(', ')}, ${tablesFile ? `which ${tablesFile} does not hold` : 'but no --lookup-tables file was given'}.`,
        { details: { tables: missing } },
      );
    }
    const batch = a.values['batch-size'] ? Number(a.values['batch-size']) : undefined;
    const budget = formulaBudget(a.values);
    const message = a.values['message'] ? await readJson(a.values['message'] as string, 'The message') : undefined;
    const started = Date.now();
    const { stats } = await runMap(plan, {
      connections,
      signal: ac.signal,
      lookupTables,
      ...(batch ? { batchSize: batch } : {}),
      ...(a.values['state'] ? { watermark: new FileWatermark(a.values['state'] as string) } : {}),
      ...(failures ? { failures } : {}),
      ...(message !== undefined ? { message } : {}),
      formulaBudget: budget,
      onReply: (reply) => void process.stdout.write(`${JSON.stringify({ reply })}\n`),
      onProgress: (p) => {
        if (!tty) return;
        const s = (Date.now() - started) / 1000;
        process.stderr.write(
          `\r${p.processed} processed, ${p.failed} failed, ${Math.round(p.processed / Math.max(s, 0.001))} records/s`,
        );
      },
      onRecordError: (e) => report.add(e),
    });
    if (tty) process.stderr.write('\n');
    report.finish(failures ? (a.values['failures'] as string) : undefined);
    process.stdout.write(`${JSON.stringify(stats, null, 2)}\n`);
    if (stats.failed > 0) process.exitCode = 1;
  } finally {
    process.off('SIGINT', stop);
    await run.close();
  }
}
