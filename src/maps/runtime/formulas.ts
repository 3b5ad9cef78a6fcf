/** Evaluates a Block's compiled formulas over the items of a batch: one sandbox call per batch. */
import type { ErrorData } from '../../errors/ferry-error.js';
import type { CompiledFormulas, FormulaValue } from '../formula/evaluator.js';
import type { AheadValues, Item, ItemValues, RunEnv } from './context.js';
import { chargeFormulaTime } from './formula-budget.js';

export type { ItemValues } from './context.js';

export async function evaluateItems(
  compiled: CompiledFormulas,
  items: readonly Item[],
  env: RunEnv,
): Promise<ItemValues> {
  if (compiled.formulas.length === 0) return { values: items.map(() => []), errors: new Map() };
  const started = performance.now();
  const res = await env.engine.evaluate(
    compiled,
    items.map((i) => i.ctx),
  );
  // The sandbox's own time when the engine reports it (not the time spent queued behind other calls).
  const ms = res.sandboxMs ?? performance.now() - started;
  const errors = new Map<number, ErrorData>();
  for (const e of res.errors) if (!errors.has(e.record)) errors.set(e.record, e.error);
  if (ms > 0 && items.length > 0) {
    const blockId = compiled.formulas[0]?.blockId ?? '';
    const share = ms / items.length;
    items.forEach((item, i) => {
      const spent = chargeFormulaTime(item.state, blockId, share, env.formulaBudget);
      if (spent && !errors.has(i)) errors.set(i, spent);
    });
  }
  return { values: res.values, errors };
}

/** Starts evaluating `compiled` over a batch's items ahead of the step that needs the values. */
export function evaluateAhead(compiled: CompiledFormulas, items: readonly Item[], env: RunEnv): AheadValues {
  const values = evaluateItems(compiled, items, env);
  // Awaited by the step, or dropped with its batch when the run stops first.
  values.catch(() => undefined);
  return { formulas: compiled, items, values };
}

/**
 * The values of `compiled` for `items`: taken from `ahead` when it was evaluated for these formulas
 * over these items or a superset of them (records skipped at the watermark or failed
 * before the step), else evaluated now.
 */
export async function evaluateOrTake(
  compiled: CompiledFormulas,
  items: readonly Item[],
  env: RunEnv,
  ahead: AheadValues | undefined,
): Promise<ItemValues> {
  if (!ahead || ahead.formulas !== compiled) return evaluateItems(compiled, items, env);
  if (items.length === ahead.items.length && items.every((item, i) => item === ahead.items[i])) return ahead.values;
  const index = new Map<Item, number>();
  ahead.items.forEach((item, i) => index.set(item, i));
  if (!items.every((item) => index.has(item))) return evaluateItems(compiled, items, env);
  const all = await ahead.values;
  const values = new Array<FormulaValue[]>(items.length);
  const errors = new Map<number, ErrorData>();
  items.forEach((item, k) => {
    const i = index.get(item) as number;
    values[k] = all.values[i] ?? [];
    const e = all.errors.get(i);
    if (e) errors.set(k, e);
  });
  return { values, errors };
}
