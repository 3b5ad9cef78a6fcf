import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { FerryError } from '../errors/ferry-error.js';
import type { LookupTableData } from '../maps/formula/evaluator.js';
import { mkdirPrivate } from '../util/private-files.js';

const Answer = z.object({
  tables: z.array(z.object({ id: z.string(), name: z.string(), values: z.array(z.tuple([z.string(), z.string()])) })),
});
type Answer = z.infer<typeof Answer>;

export interface FetchLookupTablesOptions {
  serviceUrl: string;
  authorization: string;
  names: readonly string[];
  /** A folder for the last copy of each set of tables read (0600 files): read when the Service cannot be reached. */
  cacheDir?: string;
  timeoutMs?: number;
}

/**
 * Reads the Lookup Tables a Solution run uses from the Service (`GET /v1/agent/lookuptables`,
 * bearer credentials), once per run, and keeps the copy in `cacheDir`. When the Service cannot be
 * reached (a scheduled run during an outage) the last copy read serves instead; without one the
 * run fails with AGT_SERVICE_UNREACHABLE.
 */
export async function fetchLookupTables(opts: FetchLookupTablesOptions): Promise<LookupTableData[]> {
  const url = `${opts.serviceUrl}/v1/agent/lookuptables?names=${encodeURIComponent(opts.names.join(','))}`;
  const cache = opts.cacheDir
    ? path.join(
        opts.cacheDir,
        `${createHash('sha256')
          .update(JSON.stringify([...opts.names].sort()))
          .digest('hex')
          .slice(0, 24)}.json`,
      )
    : undefined;
  let answer: Answer;
  try {
    const res = await fetch(url, {
      headers: { authorization: opts.authorization },
      signal: AbortSignal.timeout(opts.timeoutMs ?? 120_000),
    });
    if (!res.ok)
      throw new FerryError(
        'AGT_SERVICE_UNREACHABLE',
        `The Service answered ${res.status} when the Lookup Tables ${opts.names.join(', ')} were read.`,
        { details: { tables: opts.names, status: res.status } },
      );
    const text = await res.text();
    answer = Answer.parse(JSON.parse(text));
    if (cache && opts.cacheDir) {
      mkdirPrivate(opts.cacheDir);
      const tmp = `${cache}.${process.pid}.tmp`;
      await fs.writeFile(tmp, text, { mode: 0o600 });
      await fs.rename(tmp, cache);
    }
  } catch (err) {
    const kept = cache ? await readCache(cache) : undefined;
    if (kept) return tablesOf(kept);
    if (err instanceof FerryError) throw err;
    throw new FerryError(
      'AGT_SERVICE_UNREACHABLE',
      `The Lookup Tables ${opts.names.join(', ')} could not be read from the Service: ${err instanceof Error ? err.message : String(err)}`,
      { details: { tables: opts.names } },
    );
  }
  return tablesOf(answer);
}

async function readCache(file: string): Promise<Answer | undefined> {
  try {
    return Answer.parse(JSON.parse(await fs.readFile(file, 'utf8')));
  } catch {
    return undefined;
  }
}

function tablesOf(a: Answer): LookupTableData[] {
  return a.tables.map((t) => ({
    id: t.id,
    name: t.name,
    values: t.values.map(([value1, value2]) => ({ value1, value2 })),
  }));
}
