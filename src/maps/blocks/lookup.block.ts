/**
 * Lookup: finds records of an entity whose fields match the conditions (compare values are
 * formulas evaluated per record, in one sandbox call per batch). The first match is bound to the
 * Block's name (null when none); all matches (up to {@link MAX_LOOKUP_RESULTS}) feed For Each
 * Result. With `cacheResults`, answers are kept per key for the run.
 */
import type { ConnectorRecord, Value } from '../../connectors/sdk.js';
import { toErrorData, isFerryError } from '../../errors/ferry-error.js';
import type { Filter } from '../../protocol/filter.js';
import type { Block, LookupCondition } from '../../protocol/map.js';
import type { CompiledFormulas } from '../formula/evaluator.js';
import type { Step } from '../runtime/context.js';
import { evaluateItems } from '../runtime/formulas.js';
import { isRunFatal } from './write.js';
import type { BlockKind } from './registry.js';

export const MAX_LOOKUP_RESULTS = 1000;
const MAX_CACHE_KEYS = 100_000;

export function lookupStep(
  block: Block,
  conditions: readonly LookupCondition[],
  compareValues: CompiledFormulas,
): Step {
  const cache = block.cacheResults ? new Map<string, ConnectorRecord[]>() : undefined;
  return {
    block,
    async run(items, env) {
      const conn = env.connections.get(block.connectionId ?? '');
      const entity = block.entity ?? '';
      const { values, errors } = await evaluateItems(compareValues, items, env);
      for (let i = 0; i < items.length; i++) {
        const item = items[i];
        if (!item) continue;
        const err = errors.get(i);
        if (err) {
          env.fail(item, block, err);
          continue;
        }
        const vals = (values[i] ?? []) as Value[];
        const key = cache ? JSON.stringify(vals) : '';
        let matches = cache?.get(key);
        if (!matches) {
          const args: Filter[] = conditions.map((c, j) => {
            const v = vals[j] ?? null;
            if (v === null)
              return c.comparisonOperator === '<>'
                ? { op: 'not', arg: { op: 'isNull', field: c.fieldName } }
                : { op: 'isNull', field: c.fieldName };
            return { op: c.comparisonOperator, field: c.fieldName, value: v };
          });
          const filter: Filter | undefined =
            args.length === 0 ? undefined : args.length === 1 ? args[0] : { op: 'and', args };
          matches = [];
          try {
            if (!conn) throw new Error(`connection ${block.connectionId ?? ''} is not open`);
            // A datastore that went away is waited for (and past the budget ends the run), not blamed on the record.
            matches = await env.retrying(block, async () => {
              const found: ConnectorRecord[] = [];
              for await (const batch of conn.query(entity, filter, {
                limit: MAX_LOOKUP_RESULTS,
                batchSize: Math.min(MAX_LOOKUP_RESULTS, conn.bulkLimit),
                signal: env.signal,
              })) {
                for (const r of batch) found.push(r);
              }
              return found;
            });
          } catch (e) {
            if (env.signal.aborted || isRunFatal(e)) throw e;
            const cause = isFerryError(e) ? toErrorData(e) : { message: e instanceof Error ? e.message : String(e) };
            env.fail(item, block, {
              code: 'RUN_LOOKUP_FAILED',
              kind: 'transient',
              message: `${block.name}: the lookup in ${entity} failed: ${cause.message}`,
              details: { blockId: block.blockId, cause },
            });
            continue;
          }
          if (cache && cache.size < MAX_CACHE_KEYS) cache.set(key, matches);
        }
        item.ctx[block.name] = matches[0] ?? null;
        (item.results ??= new Map()).set(block.name, matches);
      }
      return items.filter((i) => !i.state.failed);
    },
  };
}

export const lookupKind: BlockKind = {
  type: 'Lookup',
  connection: 'entity',
  entityAction: 'Query',
  bind(block, cx) {
    const conds = block.lookupConditions ?? [];
    return lookupStep(
      block,
      conds,
      cx.compile(
        block,
        conds.map((c) => [c.fieldName, c.compareValue]),
      ),
    );
  },
};
