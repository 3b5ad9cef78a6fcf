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

/**
 * Zips the log files of `logsDir` into `dest`, streaming (no file is read whole). With
 * `solutionId`, each file is filtered to that Solution's lines (SPEC: Cloud Agent logs are per
 * Solution); a line that is not JSON is kept out of a filtered zip, since it cannot be attributed.
 */
export async function zipLogs(logsDir: string, dest: string, opts: { solutionId?: string; signal?: AbortSignal } = {}): Promise<LogZip> {
  const names = fs
    .readdirSync(logsDir)
    .filter((n) => n.endsWith('.log'))
    .sort();
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
      if (opts.solutionId === undefined) archive.file(file, { name });
      else archive.append(Readable.from(linesOf(file, opts.solutionId)), { name });
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

async function* linesOf(file: string, solutionId: string): AsyncGenerator<string> {
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
    try {
      const entry = JSON.parse(line) as { solutionId?: unknown };
      if (entry.solutionId === solutionId) yield line + '\n';
    } catch {
      // Not a JSON line (a torn last line after a crash): cannot be attributed to the Solution.
    }
  }
}
