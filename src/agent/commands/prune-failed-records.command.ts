import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { FAILED_RECORDS_FILE, FailedRecordStore, pruneFailedRecords } from '../../failures/store.js';
import type { PruneFailedRecordsCommand, PruneFailedRecordsResult } from '../../protocol/retention.js';

export interface PruneFailedRecordsDeps {
  /** The folder of the local failed-record store. */
  readonly folder: string;
  /** Whether a run (a reprocess run included) is queued or going on this Agent. */
  readonly busy: () => boolean;
  readonly log: Logger;
}

/**
 * `pruneFailedRecords`: removes the local failed records of the runs the Service's History window
 * no longer holds (src/protocol/retention.ts). Deferred while a run is open, since a reprocess
 * run reads the records of an older execution; one prune at a time.
 */
export function pruneFailedRecordsCommand(deps: PruneFailedRecordsDeps) {
  let pruning = false;
  return async (command: PruneFailedRecordsCommand): Promise<PruneFailedRecordsResult> => {
    if (pruning || deps.busy()) return { removed: 0, deferred: true };
    if (!fs.existsSync(path.join(deps.folder, FAILED_RECORDS_FILE))) return { removed: 0 };
    pruning = true;
    const store = new FailedRecordStore(deps.folder);
    try {
      const removed = await pruneFailedRecords(store, command.before);
      if (removed > 0)
        deps.log.info({ removed, before: command.before }, 'local failed records past the History window removed');
      return { removed };
    } finally {
      store.close();
      pruning = false;
    }
  };
}
