/**
 * `ferry formula eval '<formula>' [--record '<json>'] [--lookup-tables '<json>'] [--now <iso>]`:
 * evaluates one formula through the real engine (the same sandbox a Map run uses) and prints its
 * value as JSON, or the error with its position; exits 1 on a formula error, 2 on bad usage (a
 * `--record` holding none of the fields the formula reads is refused as such).
 */
import { parseArgs } from 'node:util';
import { FerryError, isFerryError, type ErrorData } from '../errors/ferry-error.js';
import type { FieldRef } from '../maps/formula/compiler.js';
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
  if (positionals.length !== 1)
    return usage(positionals.length === 0 ? 'The formula is missing.' : 'Give exactly one formula (quote it).');
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
    if (isFerryError(err))
      return report(formula, {
        code: err.code,
        kind: err.kind,
        message: err.message,
        ...(err.details ? { details: err.details } : {}),
      });
    throw err;
  }
  if (values.record !== undefined) {
    const unmatched = recordMismatch(record, compiled.fields);
    if (unmatched) return usage(`FML_INVALID_INPUT: ${unmatched}`);
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

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function parseRecord(text: string): Record<string, unknown> {
  const record = parseJson(text, 'record');
  if (!isPlainObject(record)) throw invalid('--record must be an object {"Block": {"Field": value}}');
  for (const [block, fields] of Object.entries(record)) {
    if (fields !== null && !isPlainObject(fields))
      throw invalid(`--record: "${block}" must be an object of fields {"Field": value}`);
  }
  return record;
}

/** The formula's syntax for a reference: a part that is not a plain name goes in brackets. */
const referenceText = ({ block, field }: FieldRef): string =>
  [block, field].map((p) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(p) ? p : `[${p.replace(/]/g, ']]')}]`)).join('.');

/**
 * Why a `--record` cannot be the one meant: it holds none of the fields the formula reads (a
 * misspelt Block, or fields written `{"Block.Field": value}`), which would evaluate every
 * reference to null. Undefined when some reference is found, or the formula reads no field.
 */
function recordMismatch(record: Record<string, unknown>, refs: readonly FieldRef[]): string | undefined {
  if (refs.length === 0) return undefined;
  const has = (o: unknown, key: string): boolean => isPlainObject(o) && Object.prototype.hasOwnProperty.call(o, key);
  if (refs.some(({ block, field }) => has(record, block) && has(record[block], field))) return undefined;
  const given = Object.entries(record).flatMap(([block, fields]) =>
    isPlainObject(fields) ? Object.keys(fields).map((f) => `${block} → ${f}`) : [`${block} → (null)`],
  );
  const shape = `{${[...new Map(refs.map((r) => [r.block, refs.filter((x) => x.block === r.block)])).entries()]
    .map(([block, fs]) => `${JSON.stringify(block)}: {${fs.map((f) => `${JSON.stringify(f.field)}: …`).join(', ')}}`)
    .join(', ')}}`;
  return [
    `--record holds none of the fields the formula reads: ${refs.map(referenceText).join(', ')}.`,
    `It gives ${given.length === 0 ? 'no field' : given.join(', ')}. Write the record as ${shape}`,
    '(Block, then field; names match exactly, case included).',
  ].join('\n');
}

function parseLookupTables(text: string): LookupTableData[] {
  const tables = parseJson(text, 'lookup-tables');
  if (!isPlainObject(tables)) throw invalid('--lookup-tables must be an object {"Table": [["value1", "value2"], …]}');
  return Object.entries(tables).map(([name, pairs], i) => {
    const ok =
      Array.isArray(pairs) &&
      pairs.every((p) => Array.isArray(p) && p.length === 2 && p.every((v) => typeof v === 'string'));
    if (!ok) throw invalid(`--lookup-tables: "${name}" must be a list of [value1, value2] text pairs`);
    return {
      id: `cli-lookup-table-${i + 1}`,
      name,
      values: (pairs as [string, string][]).map(([value1, value2]) => ({ value1, value2 })),
    };
  });
}

function parseNow(text: string): number {
  const t = Date.parse(text);
  if (Number.isNaN(t)) throw invalid(`--now is not an ISO-8601 instant: ${text}`);
  return t;
}
