/**
 * What flows through a Map run: one {@link Item} per record (per source record, or per result
 * inside a For Each), the {@link RunEnv} every Block step gets, and what a compiled plan hands the
 * run: a {@link Source} for its starter and a {@link Step} for every other Block.
 */
import type { HostConnection } from '../../connectors/connection.js';
import type { Checkpoint, ConnectorRecord, PackedBatch, RecordBatch } from '../../connectors/sdk.js';
import type { ErrorData } from '../../errors/ferry-error.js';
import type { Block } from '../../protocol/map.js';
import type { Filter, OrderBy } from '../../connectors/sdk.js';
import type { CompiledFormulas, FormulaEngine, FormulaValue } from '../formula/evaluator.js';
import type { FormulaBudget, FormulaTimeUsed } from './formula-budget.js';
import type { StatsCollector } from './stats.js';

/** Shared by a source record and every item derived from it (For Each): one failure fails the source record. */
export interface SourceState {
  readonly source: ConnectorRecord;
  failed: boolean;
  /** Its position in the records the run read, from 1 (none for records made inside the run). */
  readonly row?: number;
  /** The first error, for the failed-record entry. */
  firstError?: { blockId: string; blockName: string; error: ErrorData };
  /** The sandbox time the record's formulas used so far (formula-budget.ts). */
  formulaTime?: FormulaTimeUsed;
}

/**
 * Where a control Block sent the item: `map` (Map Exit: the record leaves the Map), `loop` (Loop
 * Exit: leave the innermost Loop or For Each), `continue` (Continue: end this iteration). The
 * innermost Loop or For Each clears `loop` and `continue`.
 */
export type ItemExit = 'map' | 'loop' | 'continue';

export interface Item {
  /** What formulas read: `{"BlockName": {"Field": value}}`. */
  ctx: Record<string, ConnectorRecord | null>;
  /**
   * Record collections: each Lookup's results (by its name), each Query relationship's children (by
   * `Query.relationship`); made with the first one (most records of a run have none).
   */
  results?: Map<string, ConnectorRecord[]> | undefined;
  state: SourceState;
  exit?: ItemExit | undefined;
}

/** The key of a Query relationship's children in {@link Item.results}. */
export const childrenKey = (query: string, relationship: string): string => `${query}.${relationship}`;

/** What the Blocks need of the formula engine (the sandboxed FormulaEngine; benchmarks may swap in a host one). */
export type FormulaEvaluator = Pick<FormulaEngine, 'evaluate'> & Partial<Pick<FormulaEngine, 'maxTextLength'>>;

export interface RunEnv {
  readonly connections: ReadonlyMap<string, HostConnection>;
  readonly engine: FormulaEvaluator;
  readonly signal: AbortSignal;
  readonly stats: StatsCollector;
  /** Records per batch: what the starter reads, a For Each slice, a child write (batching.ts). */
  readonly batchSize: number;
  /** Records per bulk write call of a Block, decided when the run starts (batching.ts). */
  bulkSize(block: Block): number;
  /** The formula time each source record may use (formula-budget.ts). */
  readonly formulaBudget: FormulaBudget;
  /** Marks the item's source record failed and reports the record error. */
  fail(item: Item, block: Block, error: ErrorData): void;
  /** Send Reply: hands the reply of a request Map to the run's caller; false when a reply was already sent. */
  reply(reply: ConnectorRecord): Promise<boolean>;
  /**
   * The checkpoint the Block's Create commits with the current batch, in the same transaction of
   * its target (runtime/run.ts: exactly-once writes); undefined for every other Block.
   */
  checkpointFor?(block: Block): Checkpoint | undefined;
  /**
   * Runs a write call of the Block, trying it again with back-off while its datastore is away, and
   * throws RUN_TARGET_UNAVAILABLE past the run's retry budget (target-retry.ts). `settled` answers,
   * before a try after the first, the results of a failed try that had committed after all.
   */
  retrying<T>(block: Block, call: () => Promise<T>, settled?: () => Promise<T | undefined>): Promise<T>;
}

/** A Block's formula values for a batch of items. */
export interface ItemValues {
  /** values[i][j]: formula j of item i. */
  values: FormulaValue[][];
  /** The first error per failed item index. */
  errors: Map<number, ErrorData>;
}

/**
 * A step's leading formulas evaluated ahead over a batch's items as the starter handed them over
 * (see runtime/run.ts): the step takes the values of the items that reach it from here.
 */
export interface AheadValues {
  readonly formulas: CompiledFormulas;
  readonly items: readonly Item[];
  readonly values: Promise<ItemValues>;
}

/**
 * A bulk Create whose every mapping copies a field of one Block unchanged, with no key conditions:
 * a Map of a Query and only such a Create may move its rows packed (runtime/packed-copy.ts).
 */
export interface FieldCopies {
  /** The Block whose fields are copied. */
  readonly block: string;
  /** The field copied into each target field, in the order of `targetFields`. */
  readonly sourceFields: readonly string[];
  readonly targetFields: readonly string[];
  /** It copies values as read, with no formula whose result could differ (a generated copy: blocks/copy-step.ts). */
  readonly exact?: boolean;
  /**
   * Writes a packed batch of the copied fields (`sourceFields`, in that order) as the Create
   * writes records, and answers the rows that failed with their errors (each row the target
   * refused, or every row of a call that failed as a whole), in row order. The caller reports them.
   * When the run's signal fires it stops between calls and answers the rows refused so far.
   */
  write(batch: PackedBatch, env: RunEnv): Promise<Array<[row: number, error: ErrorData]>>;
}

/** A compiled Block: takes the items that reach it, returns those that go on. */
export interface Step {
  readonly block: Block;
  /** Set when the step is a {@link FieldCopies} write. */
  readonly fieldCopies?: FieldCopies;
  /** A write step that writes a batch's records in bulk calls of `env.bulkSize(block)` (else one by one). */
  readonly bulkWrite?: boolean;
  /**
   * Formulas the step evaluates over every item that reaches it before doing anything else. They
   * are pure, so the run evaluates those of its first step ahead, while the previous batch is
   * still in the Blocks, and hands them to `run` as `ahead`.
   */
  readonly leading?: CompiledFormulas;
  run(items: Item[], env: RunEnv, ahead?: AheadValues): Promise<Item[]>;
}

/** What a starter reads its batches with. */
export interface SourceOptions {
  /** The net-change watermark (Query). */
  since: string | null;
  batchSize: number;
  signal: AbortSignal;
  /** Wait For Message / Wait For Request: the message handed to the run. */
  message: unknown;
  /**
   * Query: read in this order (a run resumed at a point reads as the run before it did:
   * resume-point.ts; a first copy reads in key order: first-copy.ts), instead of the net-change order.
   */
  orderBy?: OrderBy[];
  /** Query: read only these records, besides the Block's own filter (a first copy's part: first-copy.ts). */
  filter?: Filter;
}

/** A starter Block bound by the plan: where a run's source records come from. */
export interface Source {
  readonly block: Block;
  /** It reads its Connection (Query, Fetch, Native Query); otherwise its record is the message handed to the run. */
  readonly readsConnection: boolean;
  /** A request Map (Wait For Request): the run's result carries the reply. */
  readonly answersRequest?: boolean;
  /** The source records as a stream of batches. */
  batches(conn: HostConnection | undefined, opts: SourceOptions): AsyncIterable<RecordBatch>;
  /** Reads the children of each item's source record through the starter's relationships; absent when it reads none. */
  children?(conn: HostConnection, items: readonly Item[], signal: AbortSignal): Promise<void>;
}

/** The error of a run whose starter's Connection is not open. */
export function connectionNotOpen(block: Block): Error {
  return new Error(`The connection ${block.connectionId ?? ''} of ${block.name} is not open.`);
}

/** The starter's open Connection; throws when it is not open. */
export function openConnection(block: Block, conn: HostConnection | undefined): HostConnection {
  if (!conn) throw connectionNotOpen(block);
  return conn;
}

/** Runs a sequence of steps over a batch of items; `ahead` holds the first step's leading formulas. */
export async function runSequence(
  steps: readonly Step[],
  items: Item[],
  env: RunEnv,
  ahead?: AheadValues,
): Promise<Item[]> {
  let live = items;
  for (const step of steps) {
    if (live.length === 0) break;
    if (env.signal.aborted) break;
    const t0 = performance.now();
    const before = live.length;
    const out = await (step === steps[0] && ahead ? step.run(live, env, ahead) : step.run(live, env));
    env.stats.block(step.block, before, performance.now() - t0);
    // A failed record goes no further: later Blocks would read output it never had.
    live = out.filter((i) => !i.state.failed);
  }
  return live;
}

/** A copy of an item for an iteration (same source state). */
export function forkItem(item: Item): Item {
  return { ctx: { ...item.ctx }, results: item.results ? new Map(item.results) : undefined, state: item.state };
}
