/**
 * The record errors of `ferry map run`, summarized: the first few of each error code as they
 * happen, then one summary by code with its count. A run where every record fails the same way
 * prints a handful of lines, not one per record.
 *
 * On a terminal, readable lines:
 *   CreateContact  key id=3  RUN_WRITE_FAILED  contacts refused the record: UNIQUE constraint …
 *   RUN_WRITE_FAILED: 100000 records (CreateContact: 100000); the first 5 are shown above.
 * Piped, JSON lines: each shown error as `{"recordError": …}`, then `{"recordErrors": {code: {count, blocks, shown}}}`.
 */
import type { MapRecordError } from '../maps/runtime/run-types.js';

/** Errors shown per code; the rest are counted. */
export const SHOWN_PER_CODE = 5;

interface CodeTally {
  count: number;
  shown: number;
  blocks: Record<string, number>;
}

export class RecordErrorReport {
  readonly #tally = new Map<string, CodeTally>();

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly terminal: boolean,
    private readonly perCode = SHOWN_PER_CODE,
    /** Called before a line is printed on a terminal (clears the progress line). */
    private readonly beforeLine: () => void = () => undefined,
  ) {}

  /** The number of record errors seen. */
  get count(): number {
    let n = 0;
    for (const t of this.#tally.values()) n += t.count;
    return n;
  }

  add(e: MapRecordError): void {
    let t = this.#tally.get(e.code);
    if (!t) {
      t = { count: 0, shown: 0, blocks: {} };
      this.#tally.set(e.code, t);
    }
    t.count++;
    t.blocks[e.blockName] = (t.blocks[e.blockName] ?? 0) + 1;
    if (t.shown >= this.perCode) return;
    t.shown++;
    if (!this.terminal) {
      this.out.write(`${JSON.stringify({ recordError: e })}\n`);
      return;
    }
    this.beforeLine();
    this.out.write(`${formatRecordError(e)}\n`);
  }

  /** Prints the summary by code (nothing when there were no record errors). */
  finish(failuresDir?: string): void {
    if (this.#tally.size === 0) return;
    if (!this.terminal) {
      this.out.write(`${JSON.stringify({ recordErrors: Object.fromEntries(this.#tally) })}\n`);
      return;
    }
    this.beforeLine();
    for (const [code, t] of this.#tally) {
      const blocks = Object.entries(t.blocks)
        .map(([name, n]) => `${name}: ${n}`)
        .join(', ');
      const more = t.count > t.shown ? `; the first ${t.shown} are shown above` : '';
      this.out.write(`${code}: ${t.count} record${t.count === 1 ? '' : 's'} (${blocks})${more}.\n`);
    }
    if (failuresDir) this.out.write(`The failed records are kept: ferry map failures list --failures ${failuresDir}\n`);
  }
}

/** One record error as a line: the Block, the record (its key, else its row), the code and the message. */
export function formatRecordError(e: MapRecordError): string {
  const record = e.sourceKey
    ? `key ${Object.entries(e.sourceKey)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(',')}`
    : e.sourceRow !== undefined
      ? `row ${e.sourceRow}`
      : 'record';
  // The Block's name often opens the message ("CreateContact: …"): said once.
  const message = e.errorMessage.startsWith(`${e.blockName}: `)
    ? e.errorMessage.slice(e.blockName.length + 2)
    : e.errorMessage;
  return `${e.blockName}  ${record}  ${e.code}  ${message}`;
}
