import { FerryError } from '../errors/ferry-error.js';
import { ReprocessPage, reprocessRecordsPath } from '../protocol/reprocess.js';
import type { ReprocessPages } from './copies.js';

/**
 * Reads the pages of a reprocess run's records from the Service (`GET /v1/agent/reprocess/{runId}/records`,
 * the Agent's bearer credentials). A page that cannot be read fails the Map with AGT_SERVICE_UNREACHABLE.
 */
export function serviceReprocessPages(opts: {
  serviceUrl: string;
  authorization: string;
  timeoutMs?: number;
}): ReprocessPages {
  return async (runId, mapId, after, signal) => {
    const url = `${opts.serviceUrl}${reprocessRecordsPath(runId)}?mapId=${mapId}&after=${after}`;
    let res: Response;
    try {
      res = await fetch(url, {
        headers: { authorization: opts.authorization },
        signal: AbortSignal.any([signal, AbortSignal.timeout(opts.timeoutMs ?? 120_000)]),
      });
    } catch (err) {
      throw new FerryError(
        'AGT_SERVICE_UNREACHABLE',
        `The records to reprocess could not be read from the Service: ${err instanceof Error ? err.message : String(err)}`,
        { details: { runId, mapId } },
      );
    }
    if (!res.ok)
      throw new FerryError(
        'AGT_SERVICE_UNREACHABLE',
        `The Service answered ${res.status} when the records to reprocess were read.`,
        { details: { runId, mapId, status: res.status } },
      );
    return ReprocessPage.parse(await res.json());
  };
}
