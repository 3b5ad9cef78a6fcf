import type { SecretBox } from '../crypto/master-key.js';
import type { ReportHandler } from '../gateway/report-handlers.js';
import { insertFailedRecords } from '../store/repos/failed-records.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import type { ConnectorRecord } from '../../src/connectors/sdk.js';
import type { FailedRecordRow } from '../store/schema.js';

/**
 * `runFailedRecords`: the failed source records of a run whose Organization keeps them in the
 * cloud, stored under their IDs (a re-sent report stores each once), the source fields sealed
 * under the master key. A report about a Solution that is gone (or of another Organization) is
 * acknowledged and dropped, like the other run reports.
 */
export function storeFailedRecords(secrets: SecretBox): ReportHandler<'runFailedRecords'> {
  return async (tx, agent, report, now) => {
    const solution = await getSolution(tx, agent.orgId, report.solutionId);
    if (!solution) return;
    await insertFailedRecords(
      tx,
      report.records.map((r) => ({
        id: r.id.toLowerCase(),
        runId: report.runId.toLowerCase(),
        solutionId: solution.id,
        orgId: solution.orgId,
        mapId: r.mapId ?? null,
        mapName: r.mapName,
        entity: r.entity,
        blockId: r.blockId,
        blockName: r.blockName,
        code: r.code,
        errorMessage: r.errorMessage,
        source: secrets.seal(JSON.stringify(r.source)),
        created: now,
      })),
    );
  };
}

/** A stored failed record's source fields, opened. */
export function sourceOf(secrets: SecretBox, row: Pick<FailedRecordRow, 'source'>): ConnectorRecord {
  return JSON.parse(secrets.open(row.source)) as ConnectorRecord;
}
