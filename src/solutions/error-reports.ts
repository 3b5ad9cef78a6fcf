/**
 * A run's record errors grouped into `runErrors` reports (src/protocol/solutions.ts):
 *
 *   record error ─▶ add ─▶ report of ≤ MAX_ERRORS_PER_REPORT errors and ≤ MAX_ERROR_REPORT_CHARS
 *                           └─ full: held ─▶ a microtask later, every full report ─▶ one outbox transaction
 *   end of the run ─▶ flush(): the last report, however small
 */
import { MAX_ERRORS_PER_REPORT, type RunRecordError } from '../protocol/solutions.js';

/** A report of these many characters fits a channel message (MAX_MESSAGE_BYTES, 1 MiB) even as 3-byte UTF-8. */
export const MAX_ERROR_REPORT_CHARS = 320 * 1024;

/**
 * Record errors in reports small enough for a channel message whatever their texts. A Map fails
 * the refused records of a batch in one pass (their captures commit together and their errors
 * follow in one run of the microtask queue), so the reports that pass fills are written together,
 * in a microtask: measured (docs/benchmarks.md "Solutions"), a batch refusing 1,000 records then
 * costs one outbox commit, not five. A write that fails keeps its reports and throws from the
 * next `add` or `flush`, so the run fails as when each report was written at once.
 */
export class ErrorBatcher {
  #batch: RunRecordError[] = [];
  #chars = 0;
  #full: RunRecordError[][] = [];
  #scheduled = false;
  #failure: { error: unknown } | undefined;

  /** `write` stores the reports' errors durably, in order, all or none (Outbox.enqueueAll). */
  constructor(private readonly write: (reports: RunRecordError[][]) => void) {}

  add(e: RunRecordError): void {
    this.#rethrow();
    const chars = errorChars(e);
    if (this.#batch.length > 0 && this.#chars + chars > MAX_ERROR_REPORT_CHARS) this.#cut();
    this.#batch.push(e);
    this.#chars += chars;
    if (this.#batch.length >= MAX_ERRORS_PER_REPORT) this.#cut();
  }

  /** Writes every error held, the last report however small. */
  flush(): void {
    this.#rethrow();
    if (this.#batch.length > 0) {
      this.#full.push(this.#batch);
      this.#batch = [];
      this.#chars = 0;
    }
    this.#writeFull();
  }

  #cut(): void {
    this.#full.push(this.#batch);
    this.#batch = [];
    this.#chars = 0;
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      try {
        this.#writeFull();
      } catch (error) {
        this.#failure ??= { error };
      }
    });
  }

  #writeFull(): void {
    if (this.#full.length === 0) return;
    const full = this.#full;
    this.#full = [];
    try {
      this.write(full);
    } catch (err) {
      // Not written: they go with the next write, in order.
      this.#full = [...full, ...this.#full];
      throw err;
    }
  }

  #rethrow(): void {
    const failure = this.#failure;
    if (!failure) return;
    this.#failure = undefined;
    throw failure.error;
  }
}

/**
 * A record error's length as JSON, from above for the usual texts: ~250 characters of names, IDs
 * and punctuation, its texts, and its detail twice (itself JSON, its quotes are escaped).
 */
function errorChars(e: RunRecordError): number {
  return (
    250 +
    e.mapName.length +
    e.sourceEntity.length +
    (e.blockId?.length ?? 0) +
    (e.blockName?.length ?? 0) +
    e.code.length +
    e.errorMessage.length +
    2 * e.errorDetail.length +
    (e.failedRecordId?.length ?? 0) +
    (e.sourceKey ? keyChars(e.sourceKey) : 0)
  );
}

/** A source key's JSON, at most: names and text values may each double when escaped. */
function keyChars(key: Readonly<Record<string, unknown>>): number {
  let n = 2;
  for (const k in key) {
    const v = key[k];
    n += 2 * k.length + 6 + (typeof v === 'string' ? 2 * v.length : 24);
  }
  return n;
}
