/** The options of the Agent's run queue (runner.ts) and what it keeps of each run. */
import type { Logger } from 'pino';
import type { ConnectorHost } from '../connectors/host.js';
import type { LookupTableData } from '../maps/formula/evaluator.js';
import type { ReportBody } from '../protocol/channel.js';
import type { RunRequestResult } from '../protocol/events.js';
import type { ReprocessMap } from '../protocol/reprocess.js';
import type { RunTrigger } from '../protocol/solutions.js';
import type { WorkRegistry } from '../agent/work.js';
import type { ReprocessPages } from '../failures/copies.js';
import type { MessagePump, MessageTaker, PumpMessage } from './message-pump.js';
import type { SolutionStore } from './solution-store.js';

export interface SolutionRunnerOptions {
  readonly store: SolutionStore;
  readonly host: () => Promise<ConnectorHost>;
  readonly work: WorkRegistry;
  /** Writes a report durably (the outbox). */
  readonly report: (body: ReportBody) => void;
  /** Writes several reports durably at once, in order (one outbox transaction); default: one `report` each. */
  readonly reportAll?: (bodies: ReportBody[]) => void;
  readonly log: Logger;
  /** Folder for checkpoints and the local failed-record store. */
  readonly dataDir: string;
  /** Runs at once on this Agent (default 2). */
  readonly concurrency?: number;
  readonly runsOn: 'cloud' | 'local';
  /** The Lookup Tables a run reads, by name (from the Service). */
  readonly lookupTables?: (orgId: number, names: readonly string[]) => Promise<LookupTableData[]>;
  /** Least time between two progress reports of a run (default 5 s). */
  readonly progressMs?: number;
  /** The pages of a reprocess run's records, from the Service. */
  readonly reprocessPages?: ReprocessPages;
  readonly now?: () => Date;
  /** How long a stopped run's batch in progress may take before its calls are cancelled (default 2,500 ms). */
  readonly stopGraceMs?: number;
  /** How long a write waits for its datastore to come back before the run ends with RUN_TARGET_UNAVAILABLE (default 90 s). */
  readonly targetRetryMs?: number;
  /** Takes Event Solutions' messages from the Service (message-taker.ts); absent: no event runs. */
  readonly messages?: MessageTaker;
  /** Told after each batch a run completes (the Agent's metrics). */
  readonly onBatch?: () => void;
  /** A Replication reading its source's log ended a run: the log the source keeps for it. */
  readonly onChangeCapture?: (solutionId: string, retainedBytes: number) => void;
}

/** A run in this process: queued or executing. */
export interface ActiveRun {
  readonly runId: string;
  readonly solutionId: string;
  readonly trigger: RunTrigger;
  readonly startedAt: string;
  readonly controller: AbortController;
  /** Only these Maps (a single-Map run), disabled ones included; absent: every enabled Map. */
  readonly mapIds?: readonly number[];
  /** A reprocess run: the Maps whose failed records it reprocesses, from their stored copies. */
  readonly reprocess?: readonly ReprocessMap[];
  processed: number;
  failed: number;
  stopped: boolean;
  /** The stop cut the run short: a Map or an entity was left before its end. */
  incomplete: boolean;
  /** What the run's Maps did otherwise than asked (runMap's notice), for its History. */
  notices: string[];
  /** An event run: the first batch of each message Map, taken before it began (event-runs.ts). */
  readonly first?: ReadonlyMap<number, PumpMessage[]>;
  /** An event run's message pumps, one per message Map it reached. */
  pumps: MessagePump[];
  /** A request/reply Map's run: its request, and the caller waiting for the reply. */
  readonly request?: RequestRun;
  /** Its fatal error's text, when it ended with one. */
  fatalText?: string;
  /** Writes the record errors held and the counts committed (an event run acknowledges messages only after both). */
  flushErrors?: () => void;
  fatal?: boolean;
}

/** A request run's request and its caller (event-runs.ts; docs/events.md "Request/reply Maps"). */
export interface RequestRun {
  /** The request, the Wait For Request Block's record. */
  readonly body: Record<string, unknown>;
  /** Answers the caller, once: the reply as Send Reply sends it, or why there is none. */
  readonly settle: (result: RunRequestResult) => void;
  /** The request's record error, when the Map failed it. */
  error?: { code: string; message: string };
}
