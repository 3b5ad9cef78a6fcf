import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { FerryError, isFerryError } from '../../errors/ferry-error.js';
import { toChannelError } from '../../channel/client.js';
import type { Outbox } from '../../channel/outbox.js';
import { zipLogs } from '../../logs/zip.js';
import { resolveUploadUrl, uploadFile } from '../../logs/upload.js';
import type { ZipLogsCommand } from '../../protocol/channel.js';
import type { WorkRegistry } from '../work.js';

/** What the zipLogs command needs. */
export interface ZipLogsDeps {
  readonly work: WorkRegistry;
  readonly outbox: Outbox;
  readonly log: Logger;
  readonly logsDir: string;
  /** Where the archive is built before upload (the instance's data folder, never the logs folder itself). */
  readonly tmpDir: string;
  readonly serviceUrl: string;
  readonly authorization: string;
  /** Writes out buffered log lines so the archive holds everything logged so far. */
  readonly flushLogs: () => void;
}

/**
 * `zipLogs`: accepted at once (a zip may take minutes, longer than a channel request may wait),
 * then zipped and uploaded as tracked work, so a restart with restartNow=false waits for it. A
 * failure is reported durably (`logArchiveFailed`) so the Service can answer the user's GET.
 */
export function zipLogsCommand(deps: ZipLogsDeps) {
  return async (command: ZipLogsCommand): Promise<{ accepted: true }> => {
    // Refuse before accepting, so the Service learns now rather than never.
    if (deps.work.draining)
      throw new FerryError(
        'AGT_DRAINING',
        'The Agent is waiting to restart and starts no new work; ask again after the restart.',
      );
    const target = resolveUploadUrl(command.uploadUrl, deps.serviceUrl);
    // Not `solutionId`: this line is about the archive, not a line of the Solution's runs.
    const log = deps.log.child({
      logId: command.logId,
      ...(command.solutionId ? { forSolutionId: command.solutionId } : {}),
      ...(command.runId ? { forRunId: command.runId } : {}),
    });
    deps.work
      .run('zipLogs', async (work) => {
        const file = path.join(deps.tmpDir, `logs-${command.logId.replace(/[^\w-]/g, '_')}.zip`);
        try {
          log.info('zipping logs');
          deps.flushLogs();
          const zip = await zipLogs(deps.logsDir, file, {
            solutionId: command.solutionId,
            runId: command.runId,
            since: command.since,
            signal: work.signal,
          });
          await uploadFile(target, file, deps.authorization, { signal: work.signal });
          log.info({ bytes: zip.bytes, files: zip.entries.length }, 'log archive uploaded');
        } finally {
          fs.rmSync(file, { force: true });
        }
      })
      .catch((err: unknown) => {
        const error = toChannelError(
          !isFerryError(err) && isAbortError(err)
            ? new FerryError('AGT_INTERRUPTED', 'The log zip was interrupted.')
            : err,
        );
        log.warn({ code: error.code, err }, 'log archive failed');
        deps.outbox.enqueue({ kind: 'logArchiveFailed', logId: command.logId, error });
      });
    return { accepted: true };
  };
}

/** An abort surfaces as the signal's reason (a FerryError) or as a DOMException/AbortError from streams. */
function isAbortError(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}
