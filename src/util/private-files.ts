import fs from 'node:fs';
import path from 'node:path';

/** Mode of a folder only its owner may read or enter. */
export const PRIVATE_DIR_MODE = 0o700;
/** Mode of a file only its owner may read or write. */
export const PRIVATE_FILE_MODE = 0o600;

/** Group and other permission bits. */
const OPEN_BITS = 0o077;

/**
 * Creates `dir` with mode 0700. Missing parents get the usual modes: they are shared places
 * (`~/.local/share`, `/var/lib/ferry`) that other accounts may have to pass through. An existing
 * folder keeps its mode.
 */
export function mkdirPrivate(dir: string): void {
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  try {
    fs.mkdirSync(dir, { mode: PRIVATE_DIR_MODE });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
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

/** What {@link closeTree} changed. */
export interface TreeRepair {
  /** Paths (relative to the root, `.` for itself) whose group and other permissions were removed. */
  readonly repaired: string[];
  /** Paths whose mode could not be changed (another user's, for example), with the reason. */
  readonly failed: Array<{ path: string; reason: string }>;
  /** True when the walk stopped at its entry limit. */
  readonly truncated: boolean;
}

/**
 * Removes group and other permission bits from `root` and everything below it (or, with
 * `descend`, below the folders it names: a path relative to the root). Symbolic links are neither
 * followed nor changed, and at most `maxEntries` entries are looked at, so a tree that is huge or
 * points elsewhere cannot stall a start. On Windows, where modes do not govern access, nothing is done.
 */
export function closeTree(
  root: string,
  opts: { maxEntries?: number; descend?: (rel: string) => boolean } = {},
): TreeRepair {
  const descend = opts.descend ?? ((): boolean => true);
  const result = { repaired: [] as string[], failed: [] as Array<{ path: string; reason: string }>, truncated: false };
  if (process.platform === 'win32') return result;
  const maxEntries = opts.maxEntries ?? 10_000;
  let seen = 0;
  const close = (rel: string, stat: fs.Stats): void => {
    if ((stat.mode & OPEN_BITS) === 0) return;
    try {
      fs.chmodSync(path.join(root, rel), stat.mode & 0o7777 & ~OPEN_BITS);
      result.repaired.push(rel);
    } catch (err) {
      result.failed.push({ path: rel, reason: (err as NodeJS.ErrnoException).code ?? String(err) });
    }
  };
  const walk = (rel: string): void => {
    let names: string[];
    try {
      names = fs.readdirSync(path.join(root, rel));
    } catch (err) {
      result.failed.push({ path: rel, reason: (err as NodeJS.ErrnoException).code ?? String(err) });
      return;
    }
    for (const name of names) {
      if (++seen > maxEntries) {
        result.truncated = true;
        return;
      }
      const child = rel === '.' ? name : path.join(rel, name);
      let stat: fs.Stats;
      try {
        stat = fs.lstatSync(path.join(root, child));
      } catch {
        continue; // removed meanwhile
      }
      if (stat.isSymbolicLink()) continue;
      close(child, stat);
      if (stat.isDirectory() && descend(child)) walk(child);
      if (result.truncated) return;
    }
  };
  const top = fs.lstatSync(root);
  if (top.isSymbolicLink() || !top.isDirectory()) return result;
  close('.', top);
  walk('.');
  return result;
}
