import { z } from 'zod';
import { FerryError } from '../errors/ferry-error.js';
import type { LookupTableData } from '../maps/formula/evaluator.js';

const Answer = z.object({
  tables: z.array(z.object({ id: z.string(), name: z.string(), values: z.array(z.tuple([z.string(), z.string()])) })),
});

/**
 * Reads the Lookup Tables a Solution run uses from the Service (`GET /v1/agent/lookuptables`,
 * bearer credentials), once per run. A Service that cannot be reached fails the Maps that read
 * the run with AGT_SERVICE_UNREACHABLE.
 */
export async function fetchLookupTables(opts: { serviceUrl: string; authorization: string; names: readonly string[]; timeoutMs?: number }): Promise<LookupTableData[]> {
  const url = `${opts.serviceUrl}/v1/agent/lookuptables?names=${encodeURIComponent(opts.names.join(','))}`;
  let res: Response;
  try {
    res = await fetch(url, { headers: { authorization: opts.authorization }, signal: AbortSignal.timeout(opts.timeoutMs ?? 120_000) });
  } catch (err) {
    throw new FerryError('AGT_SERVICE_UNREACHABLE', `The Lookup Tables ${opts.names.join(', ')} could not be read from the Service: ${err instanceof Error ? err.message : String(err)}`, { details: { tables: opts.names } });
  }
  if (!res.ok) throw new FerryError('AGT_SERVICE_UNREACHABLE', `The Service answered ${res.status} when the Lookup Tables ${opts.names.join(', ')} were read.`, { details: { tables: opts.names, status: res.status } });
  const parsed = Answer.parse(await res.json());
  return parsed.tables.map((t) => ({ id: t.id, name: t.name, values: t.values.map(([value1, value2]) => ({ value1, value2 })) }));
}
