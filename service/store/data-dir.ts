import fs from 'node:fs';
import path from 'node:path';

/** Mode of the data folder and every folder the Service makes in it: the Service's user only. */
export const PRIVATE_DIR_MODE = 0o700;
/** Mode of every file the Service writes in its data folder (the store, its WAL, the master key, archives, packages). */
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Folders of the data folder whose contents are the Service's own, repaired all the way down.
 * Agent homes (`agent/` of `ferry up`, `cloud-agents/`) keep the modes their Agent gives them: the
 * data folder's 0700 already closes them to other users, and repairing inside them would report
 * the same files again after each Agent start.
 */
const OWN_FOLDERS = new Set(['log-archives', 'connector-packages']);

/** Most entries looked at by one repair, so that a data folder pointed at a huge tree cannot stall the start. */
const MAX_ENTRIES = 10_000;

/** Group and other permission bits. */
const OPEN_BITS = 0o077;

export interface DataDirRepair {
  /** Paths (relative to the data folder, `.` for itself) whose group and other permissions were removed. */
  readonly repaired: string[];
  /** Paths whose mode could not be changed (not the Service's user's, for example), with the reason. */
  readonly failed: Array<{ path: string; reason: string }>;
  /** True when the walk stopped at {@link MAX_ENTRIES}. */
  readonly truncated: boolean;
}

/**
 * Creates the data folder private (0700), or closes an existing one and what the Service keeps in
 * it to other users: group and other permission bits are removed from the folder, every entry
 * directly in it and everything in the Service's own subfolders. Symbolic links are neither
 * followed nor changed. On Windows, where modes do not govern access, nothing is done.
 */
export function secureDataDir(dataDir: string): DataDirRepair {
  const result = { repaired: [] as string[], failed: [] as Array<{ path: string; reason: string }>, truncated: false };
  mkdirPrivate(dataDir);
  if (process.platform === 'win32') return result;
  let seen = 0;
  const close = (rel: string, stat: fs.Stats): void => {
    if ((stat.mode & OPEN_BITS) === 0) return;
    try {
      fs.chmodSync(path.join(dataDir, rel), stat.mode & 0o7777 & ~OPEN_BITS);
      result.repaired.push(rel);
    } catch (err) {
      result.failed.push({ path: rel, reason: (err as NodeJS.ErrnoException).code ?? String(err) });
    }
  };
  const walk = (rel: string, deep: boolean): void => {
    for (const name of fs.readdirSync(path.join(dataDir, rel))) {
      if (++seen > MAX_ENTRIES) {
        result.truncated = true;
        return;
      }
      const child = rel === '.' ? name : path.join(rel, name);
      let stat: fs.Stats;
      try {
        stat = fs.lstatSync(path.join(dataDir, child));
      } catch {
        continue; // removed meanwhile
      }
      if (stat.isSymbolicLink()) continue;
      close(child, stat);
      if (stat.isDirectory() && (deep || OWN_FOLDERS.has(name))) walk(child, true);
      if (result.truncated) return;
    }
  };
  close('.', fs.lstatSync(dataDir));
  walk('.', false);
  return result;
}

/** Creates `dir` (and missing parents) with mode 0700; an existing folder keeps its mode. */
export function mkdirPrivate(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Creates an empty `file` with mode 0600 unless it exists, so that a program that creates it
 * itself (SQLite) finds it private; SQLite gives its `-wal` and `-shm` files the database's mode.
 */
export function touchPrivate(file: string): void {
  try {
    fs.closeSync(fs.openSync(file, 'wx', PRIVATE_FILE_MODE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}
