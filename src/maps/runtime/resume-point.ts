/**
 * Resume points: how a Map without net change that creates records in a table without a key
 * resumes a run that was cut short (a killed Agent, a target that stayed away, a stop) without
 * writing a record twice. Nothing in such a table tells a record written from one not written, so
 * the target itself keeps where the run is: each batch commits, in the same transaction as its
 * records, the number of source records the run has read through it and a fingerprint of the last
 * one. The next run reads the source again, passes over that many records and checks that the
 * last of them is the same record; then it writes the rest. A run that reaches the end clears the
 * point, so the run after it reads everything again, as a Map without net change does.
 *
 * The source must read its records in the same order each time: a SQL source with a primary key
 * is read ordered by it, a file in its own order. When the record at the point is not the one the
 * earlier run saw (the file was replaced, rows changed), the source is not the one the earlier run
 * read from, and this run writes every record, saying so.
 */
import { createHash } from 'node:crypto';
import type { ConnectorRecord, RecordBatch } from '../../connectors/sdk.js';
import { withCounts, type RunCounts } from './run-counts.js';

/** Where a run cut short stands: its ID, the source records read through its last written batch, the last one's fingerprint. */
export interface ResumePoint {
  readonly run: string;
  readonly read: number;
  readonly last: string;
}

/** The checkpoint value of a point, with the run's counts through it (run-counts.ts); null: no run to resume (the last one reached its end). */
export function resumeValue(point: ResumePoint | null, counts?: RunCounts): string {
  return JSON.stringify(counts ? withCounts({ resume: point }, counts) : { resume: point });
}

/** The point a checkpoint value holds, or null (none, cleared, or a checkpoint of another kind). */
export function parseResumePoint(value: string | null): ResumePoint | null {
  if (value === null) return null;
  try {
    const p = (JSON.parse(value) as { resume?: unknown }).resume as Partial<ResumePoint> | null | undefined;
    if (
      !p ||
      typeof p.run !== 'string' ||
      typeof p.last !== 'string' ||
      !Number.isSafeInteger(p.read) ||
      (p.read ?? 0) <= 0
    )
      return null;
    return { run: p.run, read: p.read as number, last: p.last };
  } catch {
    return null;
  }
}

/** A record's fingerprint: its fields and values, in the order the source gives them. */
export function fingerprint(record: ConnectorRecord): string {
  return createHash('sha1').update(JSON.stringify(record)).digest('base64url');
}

/**
 * The source's batches past the point: the first `point.read` records are passed over (read and
 * dropped, a batch at a time), and the last of them must be the one the point names. When it is
 * not, or the source ends before it, `onMismatch` is told and the source is read again from its
 * first record (`open` opens it anew), every record yielded.
 */
export async function* pastPoint(
  open: () => AsyncIterable<RecordBatch>,
  point: ResumePoint,
  onMismatch: () => void,
): AsyncGenerator<RecordBatch, void, undefined> {
  let seen = 0;
  let matched = false;
  for await (const batch of open()) {
    if (matched) {
      yield batch;
      continue;
    }
    if (seen + batch.length < point.read) {
      seen += batch.length;
      continue;
    }
    const at = point.read - seen - 1;
    const record = batch[at];
    // Not the record the earlier run wrote last: this is not the source it read (the loop's end closes the read).
    if (!record || fingerprint(record) !== point.last) break;
    matched = true;
    const rest = batch.slice(at + 1);
    if (rest.length > 0) yield rest;
  }
  if (matched) return;
  onMismatch();
  yield* open();
}
