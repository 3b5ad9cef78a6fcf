/**
 * Packed copies: a Map of one Query and one bulk Create whose every mapping copies a source field
 * unchanged (`Q.Field`) moves its rows as packed batches (connectors/packed.ts), as a
 * Replication's first copy does: the source reads them packed, the target encodes them into its
 * bulk format, and no item, formula value or record is made per row. The run is the same run:
 * batches, statistics, progress, stop and abort as runtime/run.ts does them, and a record the
 * target refuses becomes its record error (and failed-record copy) with the record made then,
 * for that row alone.
 *
 * A copy evaluates nothing, so what a bare field's formula would change is checked per batch
 * (fitsCopy): a batch holding a number the formula would turn (−0, NaN, ±Infinity) or a text
 * over the formula engine's length limit runs the records way instead, where the formula decides.
 */
import { CELL_NUMBER, CELL_TEXT, CELL_VALUE, packedRecord, type PackedBatch } from '../../connectors/packed.js';
import type { Block } from '../../protocol/map.js';
import type { FieldCopies, FormulaEvaluator, Item } from './context.js';
import type { RunOptions, RunPlan } from './run-types.js';

export interface PackedCopy {
  /** The Create, and what it copies (`sourceFields`: what the source reads). */
  readonly block: Block;
  readonly copies: FieldCopies;
  /** The formula engine's text limit, in characters; undefined for an exact copy (no batch goes the records way for its values). */
  readonly maxText: number | undefined;
}

/**
 * The packed copy a run can make of its Map, or undefined: a Query (no net change, no
 * relationships; net change only for a first copy in key order) and one Create of {@link FieldCopies}
 * of the Query's fields (or a generated copy's Upsert: blocks/copy-step.ts), into a Connection
 * whose plugin writes packed batches, the source's key fields among those copied (a record
 * error names its key). Whether the source reads the query packed is its own answer (queryPacked).
 */
export function packedCopyOf(
  plan: RunPlan,
  opts: Pick<RunOptions, 'connections' | 'source' | 'message'>,
  engine: FormulaEvaluator,
  firstCopy = false,
): PackedCopy | undefined {
  const { starter, steps } = plan;
  const [step] = steps;
  const copies = step?.fieldCopies;
  if (!step || !copies || steps.length !== 1 || copies.block !== starter.name) return undefined;
  if (
    starter.blockType !== 'Query' ||
    // With net change only a first copy in key order: the watermark is the copy's, not a batch's.
    (starter.netChange && !firstCopy) ||
    plan.source.children ||
    opts.source ||
    opts.message !== undefined
  )
    return undefined;
  const maxText = copies.exact ? undefined : engine.maxTextLength;
  if (maxText === undefined && !copies.exact) return undefined;
  if (!plan.sourceKeyFields.every((f) => copies.sourceFields.includes(f))) return undefined;
  const conn = opts.connections.get(step.block.connectionId ?? '');
  // An exact copy also moves packed reads into a target that takes records: the batch is unpacked there.
  if (!conn || (!conn.writesPacked && !copies.exact)) return undefined;
  return { block: step.block, copies, maxText };
}

/** A bad number for a copy: one the formula would give as another value (−0 as 0, NaN and ±Infinity as null). */
const changed = (x: number): boolean => (x === 0 ? Object.is(x, -0) : !Number.isFinite(x));

/** Whether every value of the batch is what its bare field's formula gives (see the module comment). */
export function fitsCopy(b: PackedBatch, maxText: number): boolean {
  const { tags, nums, ends, values } = b;
  const cells = b.rows * b.fields.length;
  for (let v = 0; v < cells; v++) {
    const t = tags[v];
    if (t === CELL_NUMBER) {
      if (changed(nums[v] as number)) return false;
    } else if (t === CELL_TEXT) {
      // Bytes: a text within the limit in UTF-8 bytes is within it in characters.
      if ((ends[v] as number) - (nums[v] as number) > maxText) return false;
    } else if (t === CELL_VALUE) {
      const x = values[v];
      if (typeof x === 'number' ? changed(x) : typeof x === 'string' && x.length > maxText) return false;
    }
  }
  return true;
}

/** The item of row `row` of a packed batch read by the starter, made only when the row needs one. */
export function packedItem(b: PackedBatch, row: number, starter: string, position: number): Item {
  const source = packedRecord(b, row);
  return { ctx: { [starter]: source }, results: undefined, state: { source, failed: false, row: position } };
}
