import type { Logger } from 'pino';
import type { ConnectorHost } from '../connectors/host.js';
import { FerryError } from '../errors/ferry-error.js';
import type { PreparedSolution, RunMapStats, RunRecordError } from '../protocol/solutions.js';
import type { CommittedCounts } from './committed.js';
import type { RunCounts } from '../maps/runtime/run-counts.js';
import { replicate, type ReplicateOptions, type ReplicateResult } from './replicate.js';
import { captureName, replicateChanges } from './change-capture.js';
import { FileReplicationState } from './replication-state.js';
import { agentDataLayout } from '../agent/state.js';

/**
 * An RS run of a prepared Solution: opens its source and target Connections on the Agent's host,
 * replicates the prepared entities (./replicate.ts) with the checkpoints kept in the Agent's data
 * folder per Solution, and closes the Connections. `committed` is told each entity's counts as
 * its batches are checkpointed (what a killed run is reported with).
 */
export async function replicateSolution(opts: {
  solution: PreparedSolution;
  host: ConnectorHost;
  signal: AbortSignal;
  dataDir: string;
  log: Logger;
  onProgress(processed: number, failed: number): void;
  onRecordError(e: RunRecordError): void;
  committed?: Pick<CommittedCounts, 'begin' | 'batch' | 'end'>;
  /** The run's ID, committed with its counts in a target's checkpoint (maps/runtime/run-counts.ts). */
  runId?: string;
  /** An entity's checkpoint in the target was committed by another run, with that run's counts. */
  onEarlierRun?: ((entity: string, counts: RunCounts) => void) | undefined;
  /** How long a write waits for a target that went away before the entity fails (default 90 s). */
  targetRetryMs?: number | undefined;
}): Promise<{ statistics: RunMapStats[]; fatal?: string; cancelled: boolean; retainedBytes?: number }> {
  const { solution, host } = opts;
  const rs = solution.replication;
  if (!rs)
    throw new FerryError('RUN_MAP_FAILED', `Solution ${solution.name} has no replication settings; prepare it again.`);
  const spec = (id: string) => {
    const c = solution.connections.find((x) => x.connectionId === id);
    if (!c)
      throw new FerryError(
        'RUN_MAP_FAILED',
        `Connection ${id} of Solution ${solution.name} is missing from its prepared definition; prepare it again.`,
      );
    return { connectorId: c.connectorId, connectionId: c.connectionId, properties: c.properties, log: opts.log };
  };
  const source = await host.open(spec(rs.sourceConnectionId), { signal: opts.signal });
  try {
    const target = await host.open(spec(rs.targetConnectionId), { signal: opts.signal });
    try {
      let processedBefore = 0;
      let failedBefore = 0;
      const totals = new Map<string, { processed: number; failed: number }>();
      const stateDir = agentDataLayout(opts.dataDir).replicationState(solution.solutionId);
      const capture = rs.changeCapture?.method === 'Logical' ? rs.changeCapture : undefined;
      const common: Omit<ReplicateOptions, 'state'> = {
        source,
        target,
        entities: rs.entities,
        checkForBulk: rs.checkForBulk,
        signal: opts.signal,
        log: opts.log,
        onEntityStart: (entity) => opts.committed?.begin({ mapName: entity, entity }),
        onEntityEnd: (s) => opts.committed?.end(s),
        onProgress: (p) => {
          opts.committed?.batch(p.processed, p.failed, p.saving);
          totals.set(p.entity, { processed: p.processed, failed: p.failed });
          processedBefore = [...totals.values()].reduce((n, t) => n + t.processed, 0);
          failedBefore = [...totals.values()].reduce((n, t) => n + t.failed, 0);
          opts.onProgress(processedBefore, failedBefore);
        },
        onRecordError: (e) => opts.onRecordError(e),
        ...(opts.runId !== undefined ? { runId: opts.runId } : {}),
        ...(opts.onEarlierRun ? { onEarlierRun: opts.onEarlierRun } : {}),
        ...(opts.targetRetryMs !== undefined ? { targetRetry: { budgetMs: opts.targetRetryMs } } : {}),
      };
      const r: ReplicateResult & { retainedBytes?: number } = capture
        ? await replicateChanges({
            ...common,
            name: captureName(solution.solutionId),
            settings: { continuous: capture.continuous, retainedWarnBytes: capture.retainedWalWarningMb * 1024 * 1024 },
            stateDir,
          })
        : await replicate({ ...common, state: new FileReplicationState(stateDir) });
      return {
        statistics: r.statistics,
        ...(r.fatal !== undefined ? { fatal: r.fatal } : {}),
        cancelled: r.cancelled,
        ...(r.retainedBytes !== undefined ? { retainedBytes: r.retainedBytes } : {}),
      };
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}
