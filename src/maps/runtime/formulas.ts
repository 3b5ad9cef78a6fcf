/** Evaluates a Block's compiled formulas over the items of a batch: one sandbox call per batch. */
import type { ErrorData } from '../../errors/ferry-error.js';
import type { CompiledFormulas, FormulaValue } from '../formula/evaluator.js';
import type { Item, RunEnv } from './context.js';

export interface ItemValues {
  /** values[i][j]: formula j of item i. */
  values: FormulaValue[][];
  /** The first error per failed item index. */
  errors: Map<number, ErrorData>;
}

export async function evaluateItems(compiled: CompiledFormulas, items: readonly Item[], env: RunEnv): Promise<ItemValues> {
  if (compiled.formulas.length === 0) return { values: items.map(() => []), errors: new Map() };
  const res = await env.engine.evaluate(
    compiled,
    items.map((i) => i.ctx),
  );
  const errors = new Map<number, ErrorData>();
  for (const e of res.errors) if (!errors.has(e.record)) errors.set(e.record, e.error);
  return { values: res.values, errors };
}
