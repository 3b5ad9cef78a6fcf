/**
 * The public API of the formula engine.
 *
 *   const compiled = compileFormulas([{ key: 'Name', formula: 'UPPER(Query_Account.Name)' }], { fields });
 *   const engine = await FormulaEngine.create({ lookupTables });      // one per Map run
 *   const { values, errors } = await engine.evaluate(compiled, records); // per batch
 *   engine.dispose();
 *
 * Compiling parses and checks every formula once and writes one JavaScript program for the set.
 * The engine owns one sandbox (an isolated-vm isolate with the library and the run's Lookup
 * Tables); `evaluate` sends a whole batch across in one call. When the batch as a whole fails —
 * the time limit, the memory limit — the engine finds the records responsible by halving: each
 * half runs again with its own time budget, halves that succeed keep their results, halves that
 * fail are halved again, and a single record that still fails gets the error, attributed to the
 * formula that causes it. Only the offending records fail.
 */
import { webcrypto } from 'node:crypto';
import type { ErrorCode } from '../../errors/codes.js';
import { FerryError, toErrorData, type ErrorData } from '../../errors/ferry-error.js';
import type { LookupPair } from '../lookup/lookup-set.js';
import { fieldKey } from './ast.js';
import { checkTree, fieldsOf, generateProgram, lookupTablesOf, type FieldRef } from './compiler.js';
import type { ErrorTuple, WireLookupTable } from './library/types.js';
import { parseFormula } from './parser.js';
import { FormulaSandbox, RunFailure, type RunFailureKind } from './sandbox.js';
import { chunk, fatalError, packRows, recordError, type FormulaInfo, type FormulaRecord, type FormulaRecordError, type FormulaValue, type WireValue } from './wire.js';

export type { FieldRef } from './compiler.js';
export type { FormulaRecord, FormulaRecordError, FormulaValue } from './wire.js';

/** One formula to compile; `key` names it in errors (default: its index). */
export interface FormulaSource {
  readonly key?: string;
  readonly formula: string;
  /** The Block the formula belongs to, repeated in its record errors' details. */
  readonly blockId?: string;
}

export interface CompileOptions {
  /** The fields that exist, as `Block.Field` text or parts; when given, other references are compile errors. */
  readonly fields?: Iterable<string | FieldRef>;
}

export interface CompiledFormula {
  readonly key: string;
  readonly formula: string;
  readonly blockId?: string;
  /** The fields this formula reads. */
  readonly fields: readonly FieldRef[];
}

/** A compiled formula set: compile once, evaluate over any number of batches. Immutable. */
export interface CompiledFormulas {
  readonly formulas: readonly CompiledFormula[];
  /** Every field the set reads: the only values that cross into the sandbox, in this order. */
  readonly fields: readonly FieldRef[];
  /** Lookup Tables named by text literals: the tables a run must load. */
  readonly lookupTables: readonly string[];
  /** True when some lookup names its table with a computed value: load every table the Map may use. */
  readonly dynamicLookupTables: boolean;
  /** The generated program (JavaScript source, for the sandbox). */
  readonly source: string;
  /** @internal spans the program's errors refer to, per formula. */
  readonly info: readonly FormulaInfo[];
}

/**
 * Parses, checks and compiles a set of formulas. Throws the first compile error as a FerryError
 * (FML_SYNTAX, FML_UNKNOWN_FUNCTION, FML_ARGUMENT_COUNT, FML_UNKNOWN_FIELD, FML_TOO_COMPLEX) whose
 * details carry `position` ({offset, line, column, length}) and `formula` (the key).
 */
export function compileFormulas(formulas: ReadonlyArray<FormulaSource | string> | Readonly<Record<string, string>>, options: CompileOptions = {}): CompiledFormulas {
  const sources: FormulaSource[] = Array.isArray(formulas)
    ? (formulas as ReadonlyArray<FormulaSource | string>).map((f) => (typeof f === 'string' ? { formula: f } : f))
    : Object.entries(formulas as Record<string, string>).map(([key, formula]) => ({ key, formula }));
  const known = options.fields ? new Set([...options.fields].map((f) => (typeof f === 'string' ? f : fieldKey(f.block, f.field)))) : undefined;

  const checked = sources.map((source, index) => {
    const key = source.key ?? String(index);
    try {
      const ast = parseFormula(source.formula);
      checkTree(source.formula, ast, known);
      return { key, source, ast };
    } catch (err) {
      if (err instanceof FerryError) {
        throw new FerryError(err.code, sources.length > 1 ? `Formula ${key}: ${err.message}` : err.message, { details: { ...err.details, formula: key }, cause: err });
      }
      throw err;
    }
  });

  const fieldIndex = new Map<string, number>();
  const fields: FieldRef[] = [];
  const tables = new Set<string>();
  let dynamicLookupTables = false;
  const compiled: CompiledFormula[] = checked.map(({ key, source, ast }) => {
    const own = fieldsOf(ast);
    for (const f of own) {
      const k = fieldKey(f.block, f.field);
      if (!fieldIndex.has(k)) {
        fieldIndex.set(k, fields.length);
        fields.push(f);
      }
    }
    const lookups = lookupTablesOf(ast);
    lookups.names.forEach((n) => tables.add(n));
    dynamicLookupTables ||= lookups.dynamic;
    return { key, formula: source.formula, ...(source.blockId !== undefined ? { blockId: source.blockId } : {}), fields: own };
  });
  const { source, spans } = generateProgram(
    checked.map((c) => ({ text: c.source.formula, ast: c.ast })),
    fieldIndex,
  );
  const info = compiled.map((c, j) => ({ key: c.key, formula: c.formula, ...(c.blockId !== undefined ? { blockId: c.blockId } : {}), spans: spans[j] ?? [] }));
  return Object.freeze({ formulas: compiled, fields, lookupTables: [...tables], dynamicLookupTables, source, info });
}

/** Checks one formula without compiling a program: the compile error as plain data, or null. */
export function checkFormula(formula: string, options: CompileOptions = {}): ErrorData | null {
  try {
    compileFormulas([formula], options);
    return null;
  } catch (err) {
    if (err instanceof FerryError) return toErrorData(err);
    throw err;
  }
}

/** A Lookup Table for a run: its identity and its pairs (duplicates allowed; see lookup-set.ts). */
export interface LookupTableData {
  readonly id: string;
  readonly name: string;
  readonly values: Iterable<LookupPair>;
}

/** The Lookup Tables a run loads into its sandbox once. */
export type LookupTables = Iterable<LookupTableData>;

export interface FormulaEngineOptions {
  /** The sandbox's memory limit in MiB (default 128, at least 8). */
  readonly memoryLimitMb?: number;
  /** The time limit of one sandbox call: this base (default 250 ms) … */
  readonly timeLimitMs?: number;
  /** … plus this much per record of the batch (default 1 ms). */
  readonly timeLimitPerRecordMs?: number;
  /** The longest text a function may produce (default 10,000,000 characters). */
  readonly maxTextLength?: number;
  readonly lookupTables?: LookupTables;
  /** The clock NOW() reads, once per batch (default Date.now). */
  readonly clock?: () => number;
  readonly onCatastrophicError?: (message: string) => void;
}

export interface EvaluateOptions {
  /** NOW() for this batch (default: the engine's clock when the batch starts). */
  readonly now?: Date | number;
}

export interface FormulaBatchResult {
  /** `values[i][j]`: formula j for record i; null where it failed. */
  readonly values: FormulaValue[][];
  /** One per failed record and formula, by record then formula. */
  readonly errors: FormulaRecordError[];
}

interface RunOutput {
  values: FormulaValue[][];
  errors: ErrorTuple[];
}

const FATAL_CODE: Record<RunFailureKind, ErrorCode> = { timeout: 'FML_TIMEOUT', memory: 'FML_MEMORY_LIMIT', error: 'FML_INTERNAL' };

/** Evaluates compiled formula sets over batches of records inside one sandbox. */
export class FormulaEngine {
  readonly #sandbox: FormulaSandbox;
  readonly #timeLimitMs: number;
  readonly #perRecordMs: number;
  readonly #clock: () => number;
  /** Runs one after another: a rebuilt isolate must not surprise a concurrent run. */
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(sandbox: FormulaSandbox, options: FormulaEngineOptions) {
    this.#sandbox = sandbox;
    this.#timeLimitMs = options.timeLimitMs ?? 250;
    this.#perRecordMs = options.timeLimitPerRecordMs ?? 1;
    this.#clock = options.clock ?? Date.now;
  }

  static async create(options: FormulaEngineOptions = {}): Promise<FormulaEngine> {
    const lookupTables: WireLookupTable[] = [...(options.lookupTables ?? [])].map((t) => ({
      id: t.id,
      name: t.name,
      pairs: Array.from(t.values, (p): [string, string] => [p.value1, p.value2]),
    }));
    const sandbox = await FormulaSandbox.create({
      memoryLimitMb: Math.max(8, options.memoryLimitMb ?? 128),
      maxTextLength: options.maxTextLength ?? 10_000_000,
      lookupTables,
      ...(options.onCatastrophicError ? { onCatastrophicError: options.onCatastrophicError } : {}),
    });
    return new FormulaEngine(sandbox, options);
  }

  /** How many isolates the engine built: 1, plus one after each batch that hit the memory limit. */
  get isolatesCreated(): number {
    return this.#sandbox.isolatesCreated;
  }

  /** The underlying sandbox (tests of the boundary). */
  get sandbox(): FormulaSandbox {
    return this.#sandbox;
  }

  /**
   * Evaluates every formula of the set for every record of the batch, in one sandbox call when
   * nothing goes wrong. Record errors are data in the result; only a broken sandbox rejects.
   */
  evaluate(formulas: CompiledFormulas, records: readonly FormulaRecord[], options: EvaluateOptions = {}): Promise<FormulaBatchResult> {
    const now = options.now === undefined ? this.#clock() : typeof options.now === 'number' ? options.now : options.now.getTime();
    const rows = packRows(records, formulas.fields);
    const next = this.#queue.then(() => this.#evaluateRows(formulas, rows, now));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** Frees the sandbox. Evaluations afterwards reject with FML_SANDBOX. */
  dispose(): void {
    this.#sandbox.dispose();
  }

  async #evaluateRows(formulas: CompiledFormulas, rows: WireValue[][], now: number): Promise<FormulaBatchResult> {
    const values = new Array<FormulaValue[]>(rows.length);
    const errors: FormulaRecordError[] = [];
    await this.#runRange(formulas, rows, 0, rows.length, now, values, errors);
    if (errors.length > 1) errors.sort((a, b) => a.record - b.record || a.formula - b.formula);
    return { values, errors };
  }

  /** Runs rows [start, end); on a failure of the whole run, halves the range (see the module comment). */
  async #runRange(formulas: CompiledFormulas, rows: WireValue[][], start: number, end: number, now: number, values: FormulaValue[][], errors: FormulaRecordError[]): Promise<void> {
    if (start >= end) return;
    const slice = start === 0 && end === rows.length ? rows : rows.slice(start, end);
    try {
      const out = await this.#run(formulas, slice, now, -1);
      out.values.forEach((v, i) => (values[start + i] = v));
      for (const t of out.errors) errors.push(recordError(formulas.info[t[1]] as FormulaInfo, t, start));
      return;
    } catch (err) {
      if (!(err instanceof RunFailure)) throw err;
      if (end - start > 1) {
        const mid = start + Math.ceil((end - start) / 2);
        await this.#runRange(formulas, rows, start, mid, now, values, errors);
        await this.#runRange(formulas, rows, mid, end, now, values, errors);
        return;
      }
      await this.#attribute(formulas, rows, start, now, err, values, errors);
    }
  }

  /** One record failed the whole run: run its formulas one at a time to find which fail. */
  async #attribute(formulas: CompiledFormulas, rows: WireValue[][], index: number, now: number, failure: RunFailure, values: FormulaValue[][], errors: FormulaRecordError[]): Promise<void> {
    const k = formulas.formulas.length;
    const row = [rows[index] as WireValue[]];
    const result = new Array<FormulaValue>(k).fill(null);
    values[index] = result;
    const fatal = (j: number, f: RunFailure): void => {
      errors.push(fatalError(formulas.info[j] as FormulaInfo, index, j, FATAL_CODE[f.kind], `${f.message} while evaluating this record`));
    };
    if (k === 1) return fatal(0, failure);
    for (let j = 0; j < k; j++) {
      try {
        const out = await this.#run(formulas, row, now, j);
        result[j] = out.values[0]?.[j] ?? null;
        for (const t of out.errors) errors.push(recordError(formulas.info[t[1]] as FormulaInfo, t, index));
      } catch (err) {
        if (!(err instanceof RunFailure)) throw err;
        fatal(j, err);
      }
    }
  }

  async #run(formulas: CompiledFormulas, rows: WireValue[][], now: number, only: number): Promise<RunOutput> {
    const seed = webcrypto.getRandomValues(new Uint32Array(4));
    const timeout = this.#timeLimitMs + this.#perRecordMs * rows.length;
    const json = await this.#sandbox.run(formulas.source, [chunk(JSON.stringify(rows)), now, seed[0] ?? 1, seed[1] ?? 2, seed[2] ?? 3, seed[3] ?? 4, only], timeout);
    const [values, errors] = JSON.parse(json) as [FormulaValue[][], ErrorTuple[]];
    return { values, errors };
  }
}
