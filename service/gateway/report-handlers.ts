import type { ReportBody } from '../../src/protocol/channel.js';
import type { AgentRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';

/** The kinds of durable report an Agent sends (src/protocol/channel.ts `ReportBody`). */
export type ReportKind = ReportBody['kind'];

/** Each report kind's body. */
export type ReportOfKind = { [K in ReportKind]: Extract<ReportBody, { kind: K }> };

/**
 * What a report of kind `K` does beyond the Agent's own record. It runs inside the transaction
 * that records the report (so a report is applied exactly once, with its dedupe row), after the
 * Agent's record was patched; `agent` is the record as read before that patch.
 */
export type ReportHandler<K extends ReportKind> = (
  tx: Db,
  agent: AgentRow,
  report: ReportOfKind[K],
  now: string,
) => Promise<void>;

/** A handler of any kind, as the table keeps it: it checks the kind before it calls the typed one. */
type AnyReportHandler = (tx: Db, agent: AgentRow, report: ReportBody, now: string) => Promise<void>;

function isKind<K extends ReportKind>(report: ReportBody, kind: K): report is ReportOfKind[K] {
  return report.kind === kind;
}

/**
 * The kind → handler table of Agent reports. The composition root fills it in with each domain's
 * handlers (the Marketplace's Connector installs, the Agent log archives, …), so the gateway knows
 * no domain: a new report kind is a new line of registration, not a new branch in the gateway.
 * A kind may have several handlers; they run one after the other in the order they were
 * registered. A kind without one only patches the Agent's record.
 */
export class ReportHandlers {
  readonly #table = new Map<ReportKind, AnyReportHandler[]>();

  /** Adds a handler for reports of `kind`. */
  on<K extends ReportKind>(kind: K, handler: ReportHandler<K>): this {
    const list = this.#table.get(kind) ?? [];
    list.push(async (tx, agent, report, now) => {
      if (isKind(report, kind)) await handler(tx, agent, report, now);
    });
    this.#table.set(kind, list);
    return this;
  }

  /** Runs the handlers of the report's kind in `tx`, one after the other. */
  async apply(tx: Db, agent: AgentRow, report: ReportBody, now: string): Promise<void> {
    for (const handler of this.#table.get(report.kind) ?? []) await handler(tx, agent, report, now);
  }
}
