import fs from 'node:fs';
import path from 'node:path';
import { closeTree, PRIVATE_DIR_MODE, type TreeRepair } from '../../src/util/private-files.js';

export { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, touchPrivate } from '../../src/util/private-files.js';

/**
 * Folders of the data folder whose contents are the Service's own, repaired all the way down.
 * Agent homes (`agent/` of `ferry up`, `cloud-agents/`) keep the modes their Agent gives them: the
 * data folder's 0700 already closes them to other users, and repairing inside them would report
 * the same files again after each Agent start.
 */
const OWN_FOLDERS = new Set(['log-archives', 'connector-packages']);

/** Most entries looked at by one repair, so that a data folder pointed at a huge tree cannot stall the start. */
const MAX_ENTRIES = 10_000;

/** What a repair of the data folder changed: paths relative to it, `.` for itself. */
export type DataDirRepair = TreeRepair;

/**
 * Creates the data folder private (0700), or closes an existing one and what the Service keeps in
 * it to other users: group and other permission bits are removed from the folder, every entry
 * directly in it and everything in the Service's own subfolders. Symbolic links are neither
 * followed nor changed. On Windows, where modes do not govern access, nothing is done.
 */
export function secureDataDir(dataDir: string): DataDirRepair {
  mkdirPrivate(dataDir);
  // The data folder's own entries, and all the way down only in the Service's own folders.
  return closeTree(dataDir, {
    maxEntries: MAX_ENTRIES,
    descend: (rel) => OWN_FOLDERS.has(rel.split(path.sep)[0] ?? ''),
  });
}

/**
 * Creates `dir` and missing parents with mode 0700: unlike the Agent's home (whose parents are
 * shared places), everything the Service creates lies in its own private data folder. An existing
 * folder keeps its mode.
 */
export function mkdirPrivate(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}
