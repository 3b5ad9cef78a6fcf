/**
 * The Lookup Tables of a local Map run (`ferry map run --lookup-tables FILE`): one JSON file of
 * tables by name, each a list of pairs,
 *
 *   { "States": [{ "value1": "California", "value2": "CA" }, …], "Codes": [["A", "1"], …] }
 *
 * A pair is `{value1, value2}` (the REST API's shape) or `[value1, value2]` (`ferry formula
 * eval`'s); values are text.
 */
import fs from 'node:fs/promises';
import { FerryError } from '../errors/ferry-error.js';
import type { LookupTableData } from '../maps/formula/evaluator.js';
import type { LookupPair } from '../maps/lookup/lookup-set.js';

const invalid = (file: string, message: string): FerryError =>
  new FerryError('FML_INVALID_INPUT', `The Lookup Tables file ${file} ${message}`, { details: { file } });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function pair(file: string, table: string, index: number, p: unknown): LookupPair {
  if (Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && typeof p[1] === 'string')
    return { value1: p[0], value2: p[1] };
  if (isObject(p) && typeof p['value1'] === 'string' && typeof p['value2'] === 'string')
    return { value1: p['value1'], value2: p['value2'] };
  throw invalid(
    file,
    `is not valid: "${table}"[${index}] must be {"value1": text, "value2": text} or [value1, value2]`,
  );
}

/** Reads and checks a Lookup Tables file; throws FML_INVALID_INPUT naming the first bad entry. */
export async function readLookupTablesFile(file: string): Promise<LookupTableData[]> {
  let json: unknown;
  try {
    json = JSON.parse(await fs.readFile(file, 'utf8')) as unknown;
  } catch (err) {
    throw invalid(file, `cannot be read: ${err instanceof Error ? err.message : String(err)}`);
  }
  return lookupTablesOf(json, file);
}

/** Checks the parsed JSON of a Lookup Tables file (`file` names it in errors); throws FML_INVALID_INPUT naming the first bad entry. */
export function lookupTablesOf(json: unknown, file: string): LookupTableData[] {
  if (!isObject(json))
    throw invalid(
      file,
      'is not valid: it must be an object of tables by name, {"Table": [{"value1": …, "value2": …}, …]}',
    );
  return Object.entries(json).map(([name, pairs], i) => {
    if (!Array.isArray(pairs)) throw invalid(file, `is not valid: "${name}" must be a list of pairs`);
    return { id: `cli-lookup-table-${i + 1}`, name, values: pairs.map((p, k) => pair(file, name, k, p)) };
  });
}

/** The tables a Map names (by text) that are not among `tables`, compared as the formulas do (case and surrounding spaces ignored). */
export function missingTables(names: readonly string[], tables: readonly LookupTableData[]): string[] {
  const have = new Set(tables.map((t) => t.name.trim().toLowerCase()));
  return names.filter((n) => !have.has(n.trim().toLowerCase()));
}
