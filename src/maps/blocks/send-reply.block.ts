/**
 * Send Reply: hands the reply built by a Build Reply (`source`) to the run's caller (the
 * `onReply` callback; the run's result also carries it). A request gets one reply: a second Send
 * Reply, or one whose Build Reply did not run for the record, fails the record with RUN_REPLY_FAILED.
 */
import type { Block } from '../../protocol/map.js';
import type { Step } from '../runtime/context.js';
import type { BlockKind } from './registry.js';

export function sendReplyStep(block: Block, source: string): Step {
  return {
    block,
    async run(items, env) {
      for (const item of items) {
        const reply = item.ctx[source];
        let why: string | null = null;
        if (!reply) why = `the Build Reply ${source} did not run for this record`;
        else {
          try {
            if (!(await env.reply(reply))) why = 'the request was already answered';
          } catch (e) {
            why = `the reply could not be handed over: ${e instanceof Error ? e.message : String(e)}`;
          }
        }
        if (why)
          env.fail(item, block, {
            code: 'RUN_REPLY_FAILED',
            kind: 'config',
            message: `${block.name}: no reply was sent: ${why}.`,
            details: { blockId: block.blockId },
          });
      }
      return items.filter((i) => !i.state.failed);
    },
  };
}

export const sendReplyKind: BlockKind = {
  type: 'SendReply',
  check(block, cx) {
    if (cx.starter?.blockType !== 'WaitForRequest')
      cx.error(
        'MAP_BLOCK_MISPLACED',
        `${block.name}: Send Reply answers a request; the Map must begin with Wait For Request.`,
      );
    const src = block.source ? cx.scope.get(block.source) : undefined;
    if (src?.blockType !== 'BuildReply')
      cx.error(
        'MAP_BLOCK_MISPLACED',
        `${block.name}: Send Reply sends the reply of an earlier Build Reply Block; ${block.source ?? '(no source)'} is not one.`,
      );
  },
  bind: (block) => sendReplyStep(block, block.source ?? ''),
};
