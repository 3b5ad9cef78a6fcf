/**
 * The Agent's state on disk: where each file of an instance's `data/` folder lives, and the schema
 * version of each SQLite file, so that a newer Agent opens an older home and an older Agent refuses
 * a newer one instead of writing into tables it does not know.
 *
 *   data/outbox.db                          reports waiting for the Service (channel/outbox.ts)
 *        solutions.db                       prepared Solutions, open runs and their counts (solutions/solution-store.ts)
 *        schedules.db                       each Solution's schedule and last due time (solutions/scheduler-store.ts)
 *        failures/failed-records.db         failed source records kept on this machine (failures/store.ts)
 *        checkpoints/<solution>-map-<id>.json   a Map's net-change watermark
 *        checkpoints/<solution>-rs/         a Replication's checkpoints, one file per entity
 *        lookup-tables/                     Lookup Tables fetched from the Service, kept for runs
 *
 * Each SQLite file keeps its schema version in `PRAGMA user_version` (util/sqlite-schema.ts): 0 for
 * a file made before versions (its tables are those of version 1), then one step per migration.
 */
import path from 'node:path';

/** The files of an instance's `data/` folder (see the module comment). */
export interface AgentDataLayout {
  readonly outbox: string;
  readonly solutions: string;
  readonly schedules: string;
  /** The folder of the failed-record store. */
  readonly failures: string;
  readonly checkpoints: string;
  /** The cache of Lookup Tables fetched from the Service. */
  readonly lookupTables: string;
  /** A Map's net-change watermark file. */
  mapCheckpoint(solutionId: string, mapId: number): string;
  /** The folder of a Replication's checkpoints. */
  replicationState(solutionId: string): string;
}

export function agentDataLayout(data: string): AgentDataLayout {
  const checkpoints = path.join(data, 'checkpoints');
  return {
    outbox: path.join(data, 'outbox.db'),
    solutions: path.join(data, 'solutions.db'),
    schedules: path.join(data, 'schedules.db'),
    failures: path.join(data, 'failures'),
    checkpoints,
    lookupTables: path.join(data, 'lookup-tables'),
    mapCheckpoint: (solutionId, mapId) => path.join(checkpoints, `${solutionId}-map-${mapId}.json`),
    replicationState: (solutionId) => path.join(checkpoints, `${solutionId}-rs`),
  };
}
