import type { Pool, PoolClient } from 'pg';

/** Batches a strategy skips its first attempt for (`skip`), and the back-off that set it. */
export interface BackOff {
  skip: number;
  backoff: number;
}

/** What a {@link PgWriter} keeps between calls, shared by its strategies. */
export interface WriterState {
  readonly pool: Pool;
  /** The schema of the checkpoint table (the Connection's targetSchema). */
  readonly schema: string;
  /** A refused large Create is written by picksFirst before rowByRow (off: rowByRow only, as tests compare). */
  readonly picksFirst: boolean;
  /** Stage tables already created, per pooled connection (temporary tables live per session). */
  readonly stages: WeakMap<PoolClient, Set<string>>;
  /** Per table oid: batches left before an Upsert tries COPY into the table again, and the current back-off. */
  readonly copyBackoff: Map<number, BackOff>;
  /** Per table oid: large Create batches left that go straight to the stage (rowByRow), and the current back-off. */
  readonly createBackoff: Map<number, BackOff>;
  /** Whether this session made sure the checkpoint table exists. */
  checkpointTable: boolean;
  /** Numbers the temporary stage tables of rowByRow (a transaction may hold several). */
  rowStages: number;
}

/** Upserts of at least this many records go through COPY; fewer take one unnest statement. */
export const STAGE_MIN = 64;

/** Most batches an Upsert skips the COPY into the table for after it met existing keys. */
const COPY_BACKOFF_MAX = 64;

/** The back-off of a table in `states`, made at its first use. */
export function backOffOf(states: Map<number, BackOff>, oid: number): BackOff {
  const state = states.get(oid) ?? { skip: 0, backoff: 0 };
  states.set(oid, state);
  return state;
}

/** After a failed attempt: the next batches skip it, twice as many as the last time (at most COPY_BACKOFF_MAX). */
export function backOff(state: BackOff): void {
  state.backoff = Math.min(COPY_BACKOFF_MAX, Math.max(1, state.backoff * 2));
  state.skip = state.backoff;
}
