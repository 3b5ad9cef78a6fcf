/**
 * One batch of read-ahead, for {@link transfer} and a Map run's starter: while a batch is written
 * (or goes through the Blocks), the next is read, so the source's work (a CSV file's parsing, a
 * query's rows) overlaps the target's and the formula sandbox's. Memory holds two batches.
 */
import { setImmediate as nextMacrotask } from 'node:timers/promises';

/**
 * Yields the batches of `source`, asking for the next one a macrotask after handing one out (so
 * the consumer's synchronous start runs first). Stopping early releases the source once the batch
 * being read has settled.
 */
export async function* readAhead<T>(source: AsyncIterable<T>): AsyncGenerator<T, void, undefined> {
  const it = source[Symbol.asyncIterator]();
  let next: Promise<IteratorResult<T>> = it.next();
  let done = false;
  try {
    for (;;) {
      const r = await next;
      if (r.done) {
        done = true;
        return;
      }
      next = nextMacrotask().then(() => it.next());
      // A failed read-ahead is thrown when its batch is asked for.
      next.catch(() => undefined);
      yield r.value;
    }
  } finally {
    if (!done) {
      await next.catch(() => undefined);
      await it.return?.();
    }
  }
}
