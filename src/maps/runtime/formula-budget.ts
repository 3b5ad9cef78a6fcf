/**
 * The formula time budget of a record: how much sandbox time one source record may use, in one
 * Block and in the whole run, before it fails with RUN_FORMULA_TIME_BUDGET.
 *
 * Each sandbox call already has a time limit (250 ms plus 1 ms per record), but a Loop calls the
 * sandbox once per iteration: without a total, one record looping 100,000 times over a 17 ms
 * regular expression keeps the Agent busy for half an hour. A call's time is shared evenly among
 * the records it evaluated (a record alone in a call, as a record still looping usually is, pays
 * it all); the items of a For Each or a Loop charge the source record they come from.
 */
import type { ErrorData } from '../../errors/ferry-error.js';

/** The budgets in milliseconds; 0 turns one off. */
export interface FormulaBudget {
  /** Formula time one record may use in one Block, over all its iterations. */
  readonly perBlockMs: number;
  /** Formula time one record may use in the whole run. */
  readonly perRunMs: number;
}

/** 10 s per Block and 60 s per run: see docs/decisions.md. */
export const DEFAULT_FORMULA_BUDGET: FormulaBudget = Object.freeze({ perBlockMs: 10_000, perRunMs: 60_000 });

/** What a record has used so far (kept on its SourceState, context.ts). */
export interface FormulaTimeUsed {
  runMs: number;
  readonly blockMs: Map<string, number>;
}

const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`;

/** Adds `ms` of the Block `blockId` to the record's time; answers the record error once a budget is spent. */
export function chargeFormulaTime(
  state: { formulaTime?: FormulaTimeUsed },
  blockId: string,
  ms: number,
  budget: FormulaBudget,
): ErrorData | undefined {
  const used = (state.formulaTime ??= { runMs: 0, blockMs: new Map() });
  used.runMs += ms;
  const inBlock = (used.blockMs.get(blockId) ?? 0) + ms;
  used.blockMs.set(blockId, inBlock);
  if (budget.perBlockMs > 0 && inBlock > budget.perBlockMs) {
    return budgetError(
      'block',
      blockId,
      inBlock,
      budget.perBlockMs,
      `The record's formulas took ${seconds(inBlock)} in this Block, more than its budget of ${seconds(budget.perBlockMs)} per record and Block`,
    );
  }
  if (budget.perRunMs > 0 && used.runMs > budget.perRunMs) {
    return budgetError(
      'run',
      blockId,
      used.runMs,
      budget.perRunMs,
      `The record's formulas took ${seconds(used.runMs)} in this run, more than its budget of ${seconds(budget.perRunMs)} per record`,
    );
  }
  return undefined;
}

function budgetError(
  scope: 'block' | 'run',
  blockId: string,
  spentMs: number,
  budgetMs: number,
  what: string,
): ErrorData {
  return {
    code: 'RUN_FORMULA_TIME_BUDGET',
    kind: 'config',
    message: `${what}: a Loop that runs too often, or a slow formula (a regular expression)? Correct the Map, or raise the budget.`,
    details: { blockId, scope, spentMs: Math.round(spentMs), budgetMs },
  };
}
