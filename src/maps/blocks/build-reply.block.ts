/**
 * Build Reply: evaluates its field mappings (one sandbox call per batch) into a reply object bound
 * to the Block's name: `targetField` ← `targetFormula`. Send Reply sends it; later formulas may read it.
 */
import type { ConnectorRecord } from '../../connectors/sdk.js';
import type { Block } from '../../protocol/map.js';
import type { CompiledFormulas } from '../formula/evaluator.js';
import type { Step } from '../runtime/context.js';
import { evaluateItems } from '../runtime/formulas.js';
import type { BlockKind } from './registry.js';

export function buildReplyStep(block: Block, formulas: CompiledFormulas, targetFields: readonly string[]): Step {
  return {
    block,
    async run(items, env) {
      const { values, errors } = await evaluateItems(formulas, items, env);
      items.forEach((item, i) => {
        const err = errors.get(i);
        if (err) return env.fail(item, block, err);
        const reply: ConnectorRecord = {};
        targetFields.forEach((f, j) => (reply[f] = values[i]?.[j] ?? null));
        item.ctx[block.name] = reply;
      });
      return items.filter((i) => !i.state.failed);
    },
  };
}

export const buildReplyKind: BlockKind = {
  type: 'BuildReply',
  fields: (block) => (block.fieldMappings ?? []).map((m) => m.targetField),
  bind(block, cx) {
    const maps = block.fieldMappings ?? [];
    return buildReplyStep(
      block,
      cx.compile(
        block,
        maps.map((m) => [m.targetField, m.targetFormula]),
      ),
      maps.map((m) => m.targetField),
    );
  },
};
