import type { Logger } from 'pino';
import type { ConnectorHost } from '../../connectors/host.js';
import { FerryError } from '../../errors/ferry-error.js';
import type { ChangeCaptureStatusCommand, ChangeCaptureStatusResult } from '../../protocol/solutions.js';
import { captureName } from '../../solutions/change-capture.js';
import type { SolutionStore } from '../../solutions/solution-store.js';

/**
 * `changeCaptureStatus`: what the source keeps for a Replication that reads its log — the slot's
 * retained log against the Solution's warning threshold, and whether the source invalidated it
 * (docs/change-capture.md). Read from the source through the Solution's own source Connection.
 */
export function changeCaptureStatusCommand(deps: {
  store: SolutionStore;
  host: () => Promise<ConnectorHost>;
  log: Logger;
  /** Told each reading (the Agent's metrics). */
  observed?: (solutionId: string, retainedBytes: number) => void;
}) {
  return async (command: ChangeCaptureStatusCommand): Promise<ChangeCaptureStatusResult> => {
    const solution = deps.store.get(command.solutionId);
    const rs = solution?.replication;
    if (!solution || !rs || rs.changeCapture?.method !== 'Logical')
      throw new FerryError(
        'API_VALIDATION',
        `Solution ${command.solutionId} is not a Replication that captures changes from its source's log on this Agent (replicationSettings.changeCapture.method Logical, prepared).`,
      );
    const c = solution.connections.find((x) => x.connectionId === rs.sourceConnectionId);
    if (!c)
      throw new FerryError('RUN_MAP_FAILED', `The source Connection of ${solution.name} is missing; prepare it again.`);
    const source = await (
      await deps.host()
    ).open({ connectorId: c.connectorId, connectionId: c.connectionId, properties: c.properties, log: deps.log });
    try {
      const slotName = captureName(solution.solutionId);
      const s = await source.changeCaptureStatus(slotName);
      const warnAboveBytes = rs.changeCapture.retainedWalWarningMb * 1024 * 1024;
      deps.observed?.(solution.solutionId, s.retainedBytes);
      return {
        slotName,
        exists: s.exists,
        retainedBytes: s.retainedBytes,
        warnAboveBytes,
        warning: s.lost || s.retainedBytes > warnAboveBytes,
        lost: s.lost,
        confirmedPosition: s.confirmed,
      };
    } finally {
      await source.close();
    }
  };
}
