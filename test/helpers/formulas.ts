/**
 * Helpers for formula tests: every evaluation goes through the real engine and its isolate.
 */
import type { ErrorData } from '../../src/errors/ferry-error.js';
import type { ExampleContext, JsonValue } from '../../src/maps/formula/catalogue.js';
import {
  compileFormulas,
  FormulaEngine,
  type FormulaEngineOptions,
  type FormulaRecord,
  type LookupTableData,
} from '../../src/maps/formula/evaluator.js';

/** What one formula gave for one record: its value, or its record error. */
export type Outcome = { value: JsonValue } | { error: ErrorData };

/** `{"Block.Field": v}` → `{"Block": {"Field": v}}`: field references as the catalogue examples write them. */
export function recordOf(fields: Readonly<Record<string, unknown>> = {}): FormulaRecord {
  const record: Record<string, Record<string, unknown>> = {};
  for (const [ref, value] of Object.entries(fields)) {
    const dot = ref.indexOf('.');
    const block = ref.slice(0, dot);
    (record[block] ??= {})[ref.slice(dot + 1)] = value;
  }
  return record;
}

/** The catalogue's `{Name: [[value1, value2], …]}` as engine input. */
export function lookupTablesOf(tables: ExampleContext['lookupTables'] = {}): LookupTableData[] {
  return Object.entries(tables).map(([name, pairs], i) => ({
    id: `00000000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`,
    name,
    values: pairs.map(([value1, value2]) => ({ value1, value2 })),
  }));
}

/** Evaluates one formula for one record. */
export async function evaluateOne(
  engine: FormulaEngine,
  formula: string,
  record: FormulaRecord = {},
  now?: number,
): Promise<Outcome> {
  const result = await engine.evaluate(compileFormulas([formula]), [record], now === undefined ? {} : { now });
  const error = result.errors[0];
  return error ? { error: error.error } : { value: (result.values[0]?.[0] ?? null) as JsonValue };
}

/** A shared engine for a test file, created lazily and disposed by `close()`. */
export function sharedEngine(options: FormulaEngineOptions = {}) {
  let engine: Promise<FormulaEngine> | undefined;
  const get = (): Promise<FormulaEngine> => (engine ??= FormulaEngine.create(options));
  return {
    get,
    /** The value of a formula, or throws with the record error's message. */
    async value(formula: string, fields?: Readonly<Record<string, unknown>>, now?: number): Promise<JsonValue> {
      const out = await evaluateOne(await get(), formula, recordOf(fields), now);
      if ('error' in out) throw new Error(`${formula}: ${out.error.code} ${out.error.message}`);
      return out.value;
    },
    /** The record error of a formula, or throws when it has a value. */
    async error(formula: string, fields?: Readonly<Record<string, unknown>>): Promise<ErrorData> {
      const out = await evaluateOne(await get(), formula, recordOf(fields));
      if ('value' in out) throw new Error(`${formula}: expected an error, got ${JSON.stringify(out.value)}`);
      return out.error;
    },
    async close(): Promise<void> {
      if (engine) (await engine).dispose();
      engine = undefined;
    },
  };
}
