/**
 * What For Each Result and For Each Child share: run a body once per record of a collection of
 * each item, on a copy of the item with the record bound to a name.
 *
 * Without a Loop Exit in the body, the iterations of all items are independent: they go through
 * the body in slices of the batch size. With one, the n-th record of every item that has not left
 * the loop goes through in round n, so a Loop Exit stops the records after it. Map Exit in the
 * body makes the item itself leave the Map.
 */
import type { ConnectorRecord } from '../../connectors/sdk.js';
import { LOOP_TYPES, type Block } from '../../protocol/map.js';
import { slices } from '../runtime/batching.js';
import { forkItem, runSequence, type Item, type RunEnv, type Step } from '../runtime/context.js';

export interface IterateSpec {
  /** The records of the item to iterate. */
  records(item: Item): readonly ConnectorRecord[];
  /** The name each record is bound to. */
  bindAs: string;
  body: readonly Step[];
  /** The body holds a Loop Exit for this loop: iterate in order. */
  ordered: boolean;
}

/** Whether a sequence holds a Loop Exit that acts on the loop around it (not one of a nested loop). */
export function hasLoopExit(blocks: readonly Block[]): boolean {
  return blocks.some(
    (b) =>
      b.blockType === 'LoopExit' ||
      (!LOOP_TYPES.includes(b.blockType) && hasLoopExit([...(b.then ?? []), ...(b.else ?? []), ...(b.body ?? [])])),
  );
}

export async function iterate(items: readonly Item[], spec: IterateSpec, env: RunEnv): Promise<Item[]> {
  const settle = (parent: Item, child: Item): boolean => {
    // true: the parent's iteration goes on
    if (child.exit === 'map') parent.exit = 'map';
    return child.exit !== 'map' && child.exit !== 'loop' && !parent.state.failed;
  };
  if (!spec.ordered) {
    let pending: Array<[Item, Item]> = [];
    const flush = async (): Promise<void> => {
      for (const part of slices(pending, env.batchSize)) {
        await runSequence(
          spec.body,
          part.map(([, c]) => c),
          env,
        );
        for (const [p, c] of part) settle(p, c);
      }
      pending = [];
    };
    for (const item of items) {
      // Expanded lazily so a large collection never builds one huge array.
      for (const r of spec.records(item)) {
        const child = forkItem(item);
        child.exit = undefined;
        child.ctx[spec.bindAs] = r;
        pending.push([item, child]);
        if (pending.length >= env.batchSize) await flush();
      }
    }
    await flush();
  } else {
    let active = items.map((item) => ({ item, records: spec.records(item) })).filter((a) => a.records.length > 0);
    for (let n = 0; active.length > 0 && !env.signal.aborted; n++) {
      const round = active.map((a) => {
        const child = forkItem(a.item);
        child.exit = undefined;
        child.ctx[spec.bindAs] = a.records[n] ?? null;
        return { ...a, child };
      });
      for (const part of slices(round, env.batchSize)) {
        await runSequence(
          spec.body,
          part.map((r) => r.child),
          env,
        );
      }
      active = round.filter((r) => settle(r.item, r.child) && n + 1 < r.records.length);
    }
  }
  return items.filter((i) => !i.state.failed && i.exit !== 'map');
}
