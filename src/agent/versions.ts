import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { InstancePaths } from './home.js';

/**
 * The Agent versions an instance has installed beside the one it was installed with, and which
 * one its supervisor starts. Kept in the instance's folder (the Cloud Agent's one writable volume):
 *
 *   versions/state.json        { current?, pending?, failed? }
 *   versions/0.2.0-1a2b3c/     an unpacked Agent package (dist/, connectors/, package.json, …)
 *
 * The worker stages a version and names it `pending` (agent-update.ts), then exits to be restarted.
 * The supervisor starts a pending version on probation: once it says it connected, the supervisor
 * makes it `current` ({@link commitPending}); when it exits or stays silent first, the supervisor
 * drops it, records `failed`, and starts the previous one again ({@link rollBackPending}). The next
 * worker reports the failure to the Service once ({@link takeFailure}).
 */
export interface InstalledVersion {
  readonly version: string;
  /** The unpacked package's folder. */
  readonly dir: string;
}

export interface VersionState {
  readonly current?: InstalledVersion;
  readonly pending?: InstalledVersion;
  readonly failed?: {
    readonly version: string;
    readonly reason: string;
    readonly at: string;
    readonly reported?: boolean;
  };
}

/** The IPC message a worker sends its supervisor once its channel is connected. */
export const CONNECTED_MESSAGE = 'ferry-agent-connected';

export function versionsDir(paths: Pick<InstancePaths, 'dir'>): string {
  return path.join(paths.dir, 'versions');
}

function stateFile(paths: Pick<InstancePaths, 'dir'>): string {
  return path.join(versionsDir(paths), 'state.json');
}

export function readVersionState(paths: Pick<InstancePaths, 'dir'>): VersionState {
  try {
    return JSON.parse(fs.readFileSync(stateFile(paths), 'utf8')) as VersionState;
  } catch {
    return {};
  }
}

/** Replaces state.json in one rename, so a crash leaves the old or the new state, never half of one. */
export function writeVersionState(paths: Pick<InstancePaths, 'dir'>, state: VersionState): void {
  const file = stateFile(paths);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${randomBytes(4).toString('hex')}`;
  fs.writeFileSync(tmp, JSON.stringify(state, null, 2), { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** The CLI script of an unpacked version. */
export function versionMain(v: InstalledVersion): string {
  return path.join(v.dir, 'dist', 'src', 'cli', 'main.js');
}

/** What the supervisor starts next: a pending version on probation, else the current one, else the installed package. */
export function nextVersion(
  paths: Pick<InstancePaths, 'dir'>,
): { main: string; version: string; probation: boolean } | undefined {
  const state = readVersionState(paths);
  for (const [v, probation] of [
    [state.pending, true],
    [state.current, false],
  ] as const) {
    if (v && fs.existsSync(versionMain(v))) return { main: versionMain(v), version: v.version, probation };
  }
  return undefined;
}

/** The pending version connected: it becomes current; folders of versions no longer named are removed. */
export function commitPending(paths: Pick<InstancePaths, 'dir'>): void {
  const state = readVersionState(paths);
  if (!state.pending) return;
  writeVersionState(paths, { current: state.pending, ...(state.failed ? { failed: state.failed } : {}) });
  prune(paths, [state.pending.dir]);
}

/** The pending version did not come up: forget it, remove its folder, remember why. */
export function rollBackPending(paths: Pick<InstancePaths, 'dir'>, reason: string): string | undefined {
  const state = readVersionState(paths);
  if (!state.pending) return undefined;
  const failed = { version: state.pending.version, reason, at: new Date().toISOString() };
  writeVersionState(paths, { ...(state.current ? { current: state.current } : {}), failed });
  prune(paths, state.current ? [state.current.dir] : []);
  return state.pending.version;
}

/** Names a staged version as the one to start next (on probation). */
export function setPending(paths: Pick<InstancePaths, 'dir'>, pending: InstalledVersion): void {
  const state = readVersionState(paths);
  writeVersionState(paths, { ...state, pending });
}

/** The last failed update when no worker has reported it yet; marks it reported. */
export function takeFailure(paths: Pick<InstancePaths, 'dir'>): VersionState['failed'] {
  const state = readVersionState(paths);
  if (!state.failed || state.failed.reported) return undefined;
  writeVersionState(paths, { ...state, failed: { ...state.failed, reported: true } });
  return state.failed;
}

/** A new, unique folder name for `version` under versions/ (a version may be staged again after a rollback). */
export function stagingDirs(paths: Pick<InstancePaths, 'dir'>, version: string): { incoming: string; final: string } {
  const suffix = randomBytes(3).toString('hex');
  const safe = version.replace(/[^0-9A-Za-z.+-]/g, '_');
  return {
    incoming: path.join(versionsDir(paths), `.incoming-${safe}-${suffix}`),
    final: path.join(versionsDir(paths), `${safe}-${suffix}`),
  };
}

/** Removes every version folder but `keep` (and leftovers of interrupted stagings). */
function prune(paths: Pick<InstancePaths, 'dir'>, keep: readonly string[]): void {
  const dir = versionsDir(paths);
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  const kept = new Set(keep.map((k) => path.resolve(k)));
  for (const e of entries) {
    const full = path.resolve(dir, e.name);
    if (e.isDirectory() && !kept.has(full)) fs.rmSync(full, { recursive: true, force: true });
  }
}
