/**
 * `ferry formula eval '<formula>' [--record '<json>'] [--lookup-tables '<json>'] [--now <iso>]`:
 * evaluates one formula through the real engine (the same sandbox a Map run uses) and prints its
 * value as JSON, or the error with its position; exits 1 on a formula error, 2 on bad usage.
 */
import { parseArgs } from 'node:util';
import { FerryError, isFerryError, type ErrorData } from '../errors/ferry-error.js';
import { compileFormulas, FormulaEngine, type LookupTableData } from '../maps/formula/evaluator.js';
import { caretLines, type FormulaPosition } from '../maps/formula/positions.js';

const USAGE = `Usage: ferry formula eval '<formula>' [--record '<json>'] [--lookup-tables '<json>'] [--now <iso-8601>]

  --record         the record the formula reads, as {"Block": {"Field": value}}
  --lookup-tables  Lookup Tables by name, as {"States": [["California", "CA"], …]}
  --now            the instant NOW() and TODAY() read (default: the current time)

Prints the value as JSON. A formula that starts with - goes after --: ferry formula eval -- '-1 + 2'.`;

const OPTIONS = {
  record: { type: 'string' },
  'lookup-tables': { type: 'string' },
  now: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `ferry formula eval`. */
export async function formulaEval(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  } catch (err) {
    return usage(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (positionals.length !== 1) return usage(positionals.length === 0 ? 'The formula is missing.' : 'Give exactly one formula (quote it).');
  const formula = positionals[0] as string;

  let record: Record<string, unknown>;
  let lookupTables: LookupTableData[];
  let now: number | undefined;
  try {
    record = values.record === undefined ? {} : parseRecord(values.record);
    lookupTables = values['lookup-tables'] === undefined ? [] : parseLookupTables(values['lookup-tables']);
    now = values.now === undefined ? undefined : parseNow(values.now);
  } catch (err) {
    if (isFerryError(err)) return usage(`${err.code}: ${err.message}`);
    throw err;
  }

  let compiled;
  try {
    compiled = compileFormulas([formula]);
  } catch (err) {
    if (isFerryError(err)) return report(formula, { code: err.code, kind: err.kind, message: err.message, ...(err.details ? { details: err.details } : {}) });
    throw err;
  }
  const engine = await FormulaEngine.create({ lookupTables });
  try {
    const result = await engine.evaluate(compiled, [record], now === undefined ? {} : { now });
    const error = result.errors[0];
    if (error) return report(formula, error.error);
    process.stdout.write(`${JSON.stringify(result.values[0]?.[0] ?? null)}\n`);
  } finally {
    // Waits for the isolate to be idle before freeing it: the process ends right after.
    await engine.close();
  }
}

function usage(message: string): void {
  process.stderr.write(`ferry formula eval: ${message}\n\n${USAGE}\n`);
  process.exitCode = 2;
}

/** Prints an error with the formula and a caret under its position. */
function report(formula: string, error: ErrorData): void {
  const position = error.details?.['position'] as FormulaPosition | undefined;
  const where = position ? `\n${indent(caretLines(formula, position))}` : '';
  process.stderr.write(`${error.code}: ${error.message}${where}\n`);
  process.exitCode = 1;
}

const indent = (text: string): string =>
  text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');

const invalid = (message: string): FerryError => new FerryError('FML_INVALID_INPUT', message);

function parseJson(text: string, flag: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw invalid(`--${flag} is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseRecord(text: string): Record<string, unknown> {
  const record = parseJson(text, 'record');
  if (!isPlainObject(record)) throw invalid('--record must be an object {"Block": {"Field": value}}');
  for (const [block, fields] of Object.entries(record)) {
    if (fields !== null && !isPlainObject(fields)) throw invalid(`--record: "${block}" must be an object of fields {"Field": value}`);
  }
  return record;
}

function parseLookupTables(text: string): LookupTableData[] {
  const tables = parseJson(text, 'lookup-tables');
  if (!isPlainObject(tables)) throw invalid('--lookup-tables must be an object {"Table": [["value1", "value2"], …]}');
  return Object.entries(tables).map(([name, pairs], i) => {
    const ok = Array.isArray(pairs) && pairs.every((p) => Array.isArray(p) && p.length === 2 && p.every((v) => typeof v === 'string'));
    if (!ok) throw invalid(`--lookup-tables: "${name}" must be a list of [value1, value2] text pairs`);
    return { id: `cli-lookup-table-${i + 1}`, name, values: (pairs as [string, string][]).map(([value1, value2]) => ({ value1, value2 })) };
  });
}

function parseNow(text: string): number {
  const t = Date.parse(text);
  if (Number.isNaN(t)) throw invalid(`--now is not an ISO-8601 instant: ${text}`);
  return t;
}
