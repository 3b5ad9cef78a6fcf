import type { Outbox } from '../../channel/outbox.js';
import type { KnownRunsCommand, KnownRunsResult } from '../../protocol/reprocess.js';
import type { SolutionRunner } from '../../solutions/runner.js';

/** `knownRuns`: the runs asked about that this Agent has open or still reports; it gives up the others for good. */
export function knownRunsCommand(deps: { runner: SolutionRunner; outbox: Outbox }) {
  return (command: KnownRunsCommand): Promise<KnownRunsResult> =>
    Promise.resolve({ known: deps.runner.knownRuns(command.runIds, deps.outbox.runsReported(command.runIds)) });
}
