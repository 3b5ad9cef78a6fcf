import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ZipArchive } from 'archiver';

/** What a zip holds. */
export interface LogZip {
  readonly file: string;
  readonly bytes: number;
  readonly entries: readonly string[];
}

/** Which lines of the log files a Solution's archive keeps. */
export interface LogLineFilter {
  /** Only lines whose top-level `solutionId` is this one. */
  readonly solutionId: string;
  /** Only lines whose top-level `runId` is this one (one run of the Solution). */
  readonly runId?: string | undefined;
  /** Only lines whose `time` is at or after this instant (ISO-8601). */
  readonly since?: string | undefined;
}

/** Options of {@link zipLogs}. */
export interface ZipLogsOptions {
  /** Without: every log file whole (an Agent's logs). With: one Solution's lines of every file. */
  readonly solutionId?: string | undefined;
  readonly runId?: string | undefined;
  readonly since?: string | undefined;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Zips the log files of `logsDir` (the current one and the rotated ones, oldest first) into
 * `dest`, streaming: no file is read whole, and a filtered file is read a line at a time. With
 * `solutionId`, each file is filtered to that Solution's lines (narrowed by `runId` and `since`
 * when given); a line that is not JSON is kept out of a filtered zip, since it cannot be
 * attributed, and a rotated file last written before `since` is skipped unread.
 */
export async function zipLogs(logsDir: string, dest: string, opts: ZipLogsOptions = {}): Promise<LogZip> {
  const filter: LogLineFilter | undefined =
    opts.solutionId === undefined ? undefined : { solutionId: opts.solutionId, runId: opts.runId, since: opts.since };
  const sinceMs = filter?.since === undefined ? undefined : Date.parse(filter.since);
  const names = logFileNames(logsDir).filter(
    (name) => sinceMs === undefined || !writtenBefore(path.join(logsDir, name), sinceMs),
  );
  opts.signal?.throwIfAborted();
  const archive = new ZipArchive({ zlib: { level: 9 } });
  const out = fs.createWriteStream(dest, { mode: 0o600 });
  // An interruption (restart now, stop past its grace) aborts the archive, so that neither
  // promise below is left pending and the failure reaches the caller, not the process.
  const onAbort = () => archive.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const done = pipeline(archive, out, { signal: opts.signal });
    for (const name of names) {
      const file = path.join(logsDir, name);
      if (filter === undefined) archive.file(file, { name });
      else archive.append(Readable.from(linesOf(file, filter)), { name });
    }
    await Promise.all([archive.finalize(), done]);
  } catch (err) {
    fs.rmSync(dest, { force: true });
    throw err;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
  }
  return { file: dest, bytes: fs.statSync(dest).size, entries: names };
}

/**
 * The `.log` files of the folder, oldest first: `agent.<date>.<n>.log` in date order, then by
 * the number as a number (a plain sort would put `.10.log` before `.2.log`).
 */
export function logFileNames(logsDir: string): string[] {
  return fs
    .readdirSync(logsDir)
    .filter((n) => n.endsWith('.log'))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}

/** Whether the file was last written before `ms` (so none of its lines can be newer); false when it is gone. */
function writtenBefore(file: string, ms: number): boolean {
  try {
    return fs.statSync(file).mtimeMs < ms;
  } catch {
    return false;
  }
}

/** Whether one parsed log line passes the filter. */
export function lineMatches(entry: Record<string, unknown>, filter: LogLineFilter): boolean {
  if (entry['solutionId'] !== filter.solutionId) return false;
  if (filter.runId !== undefined && entry['runId'] !== filter.runId) return false;
  if (filter.since !== undefined) {
    const time = entry['time'];
    const ms = typeof time === 'number' ? time : typeof time === 'string' ? Date.parse(time) : Number.NaN;
    if (!(ms >= Date.parse(filter.since))) return false;
  }
  return true;
}

async function* linesOf(file: string, filter: LogLineFilter): AsyncGenerator<string> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file, 'r');
  } catch (err) {
    // Rotated away between the listing and now: nothing of it to include.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const lines = readline.createInterface({ input: handle.createReadStream({ encoding: 'utf8' }), crlfDelay: Infinity });
  for await (const line of lines) {
    // Most lines name no Solution, or another: skip them before paying for a parse.
    if (!line.includes(filter.solutionId)) continue;
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch {
      // Not a JSON line (a torn last line after a crash): cannot be attributed to the Solution.
      continue;
    }
    if (typeof entry === 'object' && entry !== null && lineMatches(entry as Record<string, unknown>, filter))
      yield line + '\n';
  }
}
