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
import { fieldKey, type Expr } from './ast.js';
import { checkTree, fieldsOf, generateProgram, lookupTablesOf, type FieldRef } from './compiler.js';
import type { ErrorTuple, WireLookupTable } from './library/types.js';
import { parseFormula } from './parser.js';
import { FormulaSandbox, RunFailure, type RunFailureKind } from './sandbox.js';
import {
  fatalError,
  packColumns,
  readField,
  recordError,
  sliceColumns,
  wireColumns,
  type Columns,
  type FormulaInfo,
  type FormulaRecord,
  type FormulaRecordError,
  type FormulaValue,
  type WireValue,
} from './wire.js';

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
  /** Set when the formula is a bare field or a literal: the host evaluates it, the sandbox never sees it. */
  readonly host?: HostFormula;
}

/**
 * A formula whose value the host computes exactly as the sandbox would, with no call across: a
 * bare field (`Block.Field`, the field's value as the sandbox would receive it) or a literal.
 */
export type HostFormula =
  | { readonly kind: 'field'; readonly block: string; readonly field: string }
  | { readonly kind: 'literal'; readonly value: WireValue };

/** The formulas of a set that need the sandbox: their program, and only the fields they read. */
export interface SandboxPart {
  /** Index in the whole set of each formula of the part, in the part's order. */
  readonly indices: readonly number[];
  /** The fields that cross into the sandbox, in this order. */
  readonly fields: readonly FieldRef[];
  readonly source: string;
  /** @internal spans the program's errors refer to, per formula of the part. */
  readonly info: readonly FormulaInfo[];
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
  /** The generated program of the whole set (JavaScript source, for the sandbox). */
  readonly source: string;
  /** @internal spans the program's errors refer to, per formula. */
  readonly info: readonly FormulaInfo[];
  /** What `evaluate` sends into the sandbox: the formulas that are not bare fields or literals; null when none. */
  readonly sandboxed: SandboxPart | null;
}

/** A formula the host can evaluate: a bare field, or a literal whose value leaves the sandbox unchanged. */
function hostFormula(ast: Expr): HostFormula | undefined {
  if (ast.kind === 'field') return { kind: 'field', block: ast.block, field: ast.field };
  if (ast.kind !== 'literal') return undefined;
  if (typeof ast.value === 'number' && !Number.isFinite(ast.value)) return undefined;
  return { kind: 'literal', value: ast.value === 0 ? 0 : ast.value };
}

/** Generates the program of the formulas at `indices` with only the fields they read. */
function sandboxPart(
  checked: ReadonlyArray<{ source: FormulaSource; ast: Expr }>,
  compiled: readonly CompiledFormula[],
  indices: readonly number[],
): SandboxPart {
  const fieldIndex = new Map<string, number>();
  const fields: FieldRef[] = [];
  for (const j of indices) {
    for (const f of (compiled[j] as CompiledFormula).fields) {
      const k = fieldKey(f.block, f.field);
      if (!fieldIndex.has(k)) {
        fieldIndex.set(k, fields.length);
        fields.push(f);
      }
    }
  }
  const part = indices.map((j) => checked[j] as { source: FormulaSource; ast: Expr });
  const { source, spans } = generateProgram(
    part.map((c) => ({ text: c.source.formula, ast: c.ast })),
    fieldIndex,
  );
  const info = indices.map((j, p) => {
    const c = compiled[j] as CompiledFormula;
    return {
      key: c.key,
      formula: c.formula,
      ...(c.blockId !== undefined ? { blockId: c.blockId } : {}),
      spans: spans[p] ?? [],
    };
  });
  return Object.freeze({ indices, fields, source, info });
}

/**
 * Parses, checks and compiles a set of formulas. Throws the first compile error as a FerryError
 * (FML_SYNTAX, FML_UNKNOWN_FUNCTION, FML_ARGUMENT_COUNT, FML_UNKNOWN_FIELD, FML_TOO_COMPLEX) whose
 * details carry `position` ({offset, line, column, length}) and `formula` (the key).
 */
export function compileFormulas(
  formulas: ReadonlyArray<FormulaSource | string> | Readonly<Record<string, string>>,
  options: CompileOptions = {},
): CompiledFormulas {
  const sources: FormulaSource[] = Array.isArray(formulas)
    ? (formulas as ReadonlyArray<FormulaSource | string>).map((f) => (typeof f === 'string' ? { formula: f } : f))
    : Object.entries(formulas as Record<string, string>).map(([key, formula]) => ({ key, formula }));
  const known = options.fields
    ? new Set([...options.fields].map((f) => (typeof f === 'string' ? f : fieldKey(f.block, f.field))))
    : undefined;

  const checked = sources.map((source, index) => {
    const key = source.key ?? String(index);
    try {
      const ast = parseFormula(source.formula);
      checkTree(source.formula, ast, known);
      return { key, source, ast };
    } catch (err) {
      if (err instanceof FerryError) {
        throw new FerryError(err.code, sources.length > 1 ? `Formula ${key}: ${err.message}` : err.message, {
          details: { ...err.details, formula: key },
          cause: err,
        });
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
    const host = hostFormula(ast);
    return {
      key,
      formula: source.formula,
      ...(source.blockId !== undefined ? { blockId: source.blockId } : {}),
      fields: own,
      ...(host ? { host } : {}),
    };
  });
  const { source, spans } = generateProgram(
    checked.map((c) => ({ text: c.source.formula, ast: c.ast })),
    fieldIndex,
  );
  const info = compiled.map((c, j) => ({
    key: c.key,
    formula: c.formula,
    ...(c.blockId !== undefined ? { blockId: c.blockId } : {}),
    spans: spans[j] ?? [],
  }));
  const indices = compiled.flatMap((c, j) => (c.host ? [] : [j]));
  const sandboxed =
    indices.length === 0
      ? null
      : indices.length === compiled.length
        ? Object.freeze({ indices, fields, source, info })
        : sandboxPart(checked, compiled, indices);
  return Object.freeze({
    formulas: compiled,
    fields,
    lookupTables: [...tables],
    dynamicLookupTables,
    source,
    info,
    sandboxed,
  });
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
  /** The time the sandbox spent on the batch (its calls, retries included), without time queued behind other batches. */
  readonly sandboxMs?: number;
}

interface RunOutput {
  values: FormulaValue[][];
  errors: ErrorTuple[];
}

const DEFAULT_MAX_TEXT = 10_000_000;

const FATAL_CODE: Record<RunFailureKind, ErrorCode> = {
  timeout: 'FML_TIMEOUT',
  memory: 'FML_MEMORY_LIMIT',
  error: 'FML_INTERNAL',
};

/** Evaluates compiled formula sets over batches of records inside one sandbox. */
export class FormulaEngine {
  readonly #sandbox: FormulaSandbox;
  readonly #timeLimitMs: number;
  readonly #perRecordMs: number;
  readonly #clock: () => number;
  readonly #maxText: number;
  /** Runs one after another: a rebuilt isolate must not surprise a concurrent run. */
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(sandbox: FormulaSandbox, options: FormulaEngineOptions) {
    this.#sandbox = sandbox;
    this.#timeLimitMs = options.timeLimitMs ?? 250;
    this.#perRecordMs = options.timeLimitPerRecordMs ?? 1;
    this.#clock = options.clock ?? Date.now;
    this.#maxText = Math.floor(options.maxTextLength ?? DEFAULT_MAX_TEXT);
  }

  static async create(options: FormulaEngineOptions = {}): Promise<FormulaEngine> {
    const lookupTables: WireLookupTable[] = [...(options.lookupTables ?? [])].map((t) => ({
      id: t.id,
      name: t.name,
      pairs: Array.from(t.values, (p): [string, string] => [p.value1, p.value2]),
    }));
    const sandbox = await FormulaSandbox.create({
      memoryLimitMb: Math.max(8, options.memoryLimitMb ?? 128),
      maxTextLength: options.maxTextLength ?? DEFAULT_MAX_TEXT,
      lookupTables,
      ...(options.onCatastrophicError ? { onCatastrophicError: options.onCatastrophicError } : {}),
    });
    return new FormulaEngine(sandbox, options);
  }

  /** How many isolates the engine built: 1, plus one after each batch that hit the memory limit. */
  get isolatesCreated(): number {
    return this.#sandbox.isolatesCreated;
  }

  /** The longest text a formula's value may be, in characters (FML_TEXT_TOO_LONG beyond). */
  get maxTextLength(): number {
    return this.#maxText;
  }

  /** The underlying sandbox (tests of the boundary). */
  get sandbox(): FormulaSandbox {
    return this.#sandbox;
  }

  /**
   * Evaluates every formula of the set for every record of the batch. Bare fields and literals are
   * computed in the host; the other formulas go into the sandbox in one call when nothing goes
   * wrong, with only the fields they read. Record errors are data in the result; only a broken
   * sandbox rejects.
   */
  evaluate(
    formulas: CompiledFormulas,
    records: readonly FormulaRecord[],
    options: EvaluateOptions = {},
  ): Promise<FormulaBatchResult> {
    if (this.#sandbox.disposed)
      return Promise.reject(new FerryError('FML_SANDBOX', 'The formula sandbox was disposed'));
    const part = formulas.sandboxed;
    if (part === null) return Promise.resolve(this.#merge(formulas, records, null));
    const now =
      options.now === undefined ? this.#clock() : typeof options.now === 'number' ? options.now : options.now.getTime();
    const rows = packColumns(records, part.fields);
    const run = this.#queue.then(async () => {
      const started = performance.now();
      const res = await this.#evaluateRows(part, rows, now);
      return { ...res, sandboxMs: performance.now() - started };
    });
    this.#queue = run.catch(() => undefined);
    return part.indices.length === formulas.formulas.length
      ? run
      : run.then((res) => this.#merge(formulas, records, res));
  }

  /** The values of the whole set: the host formulas' beside the sandbox part's (`res`, in the part's order). */
  #merge(
    formulas: CompiledFormulas,
    records: readonly FormulaRecord[],
    res: FormulaBatchResult | null,
  ): FormulaBatchResult {
    const list = formulas.formulas;
    const k = list.length;
    const indices = formulas.sandboxed?.indices ?? [];
    const errors: FormulaRecordError[] = res
      ? res.errors.map((e) => ({ ...e, formula: indices[e.formula] as number }))
      : [];
    const values = new Array<FormulaValue[]>(records.length);
    for (let i = 0; i < records.length; i++) {
      const o = new Array<FormulaValue>(k);
      const sv = res?.values[i];
      for (let p = 0; p < indices.length; p++) o[indices[p] as number] = sv?.[p] ?? null;
      for (let j = 0; j < k; j++) {
        const host = (list[j] as CompiledFormula).host;
        if (!host) continue;
        const v = host.kind === 'literal' ? host.value : readField(records[i], host.block, host.field);
        if (typeof v === 'string' && v.length > this.#maxText) {
          o[j] = null;
          const message = `The formula: the text would be ${v.length} characters long, more than the limit of ${this.#maxText}`;
          errors.push(
            recordError(formulas.info[j] as FormulaInfo, [i, j, 'FML_TEXT_TOO_LONG', message, null, 0, null]),
          );
        } else {
          o[j] = v === 0 ? 0 : v;
        }
      }
      values[i] = o;
    }
    if (errors.length > 1) errors.sort((a, b) => a.record - b.record || a.formula - b.formula);
    return { values, errors, ...(res?.sandboxMs !== undefined ? { sandboxMs: res.sandboxMs } : {}) };
  }

  /** Frees the sandbox at once. Evaluations afterwards reject with FML_SANDBOX. */
  dispose(): void {
    this.#sandbox.dispose();
  }

  /** Lets the evaluations already asked for finish, then frees the sandbox: what a process does before it ends. */
  async close(): Promise<void> {
    await this.#queue;
    await this.#sandbox.close();
  }

  async #evaluateRows(formulas: SandboxPart, rows: Columns, now: number): Promise<FormulaBatchResult> {
    const values = new Array<FormulaValue[]>(rows.n);
    const errors: FormulaRecordError[] = [];
    await this.#runRange(formulas, rows, 0, rows.n, now, values, errors);
    if (errors.length > 1) errors.sort((a, b) => a.record - b.record || a.formula - b.formula);
    return { values, errors };
  }

  /** Runs rows [start, end); on a failure of the whole run, halves the range (see the module comment). */
  async #runRange(
    formulas: SandboxPart,
    rows: Columns,
    start: number,
    end: number,
    now: number,
    values: FormulaValue[][],
    errors: FormulaRecordError[],
  ): Promise<void> {
    if (start >= end) return;
    const slice = sliceColumns(rows, start, end);
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
  async #attribute(
    formulas: SandboxPart,
    rows: Columns,
    index: number,
    now: number,
    failure: RunFailure,
    values: FormulaValue[][],
    errors: FormulaRecordError[],
  ): Promise<void> {
    const k = formulas.info.length;
    const row = sliceColumns(rows, index, index + 1);
    const result = new Array<FormulaValue>(k).fill(null);
    values[index] = result;
    const fatal = (j: number, f: RunFailure): void => {
      errors.push(
        fatalError(
          formulas.info[j] as FormulaInfo,
          index,
          j,
          FATAL_CODE[f.kind],
          `${f.message} while evaluating this record`,
        ),
      );
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

  async #run(formulas: SandboxPart, rows: Columns, now: number, only: number): Promise<RunOutput> {
    const seed = webcrypto.getRandomValues(new Uint32Array(4));
    const timeout = this.#timeLimitMs + this.#perRecordMs * rows.n;
    const json = await this.#sandbox.run(
      formulas.source,
      [wireColumns(rows), now, seed[0] ?? 1, seed[1] ?? 2, seed[2] ?? 3, seed[3] ?? 4, only],
      timeout,
    );
    const [cols, errors] = JSON.parse(json) as [FormulaValue[][], ErrorTuple[]];
    const k = cols.length;
    const values = new Array<FormulaValue[]>(rows.n);
    for (let i = 0; i < rows.n; i++) {
      const v = new Array<FormulaValue>(k);
      for (let j = 0; j < k; j++) v[j] = (cols[j] as FormulaValue[])[i] ?? null;
      values[i] = v;
    }
    return { values, errors };
  }
}
