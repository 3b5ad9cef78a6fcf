import fs from 'node:fs';

/** What Linux's /proc/<pid>/stat says of a process: its state letter and its start in clock ticks since boot. */
interface ProcStat {
  readonly state: string;
  readonly startTicks: string;
}

/**
 * /proc/<pid>/stat, or undefined where it cannot be read: no /proc (not Linux), the process is
 * gone, or /proc hides other users' processes (`hidepid`).
 */
function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so the fields start after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // Field 3 is the state, field 22 the start time; fields[0] is field 3.
  const state = fields[0];
  const startTicks = fields[19];
  return state && startTicks && /^\d+$/.test(startTicks) ? { state, startTicks } : undefined;
}

let bootId: string | undefined | null = null;

/** This boot's random ID (Linux), so that a start time from an earlier boot never matches. */
function currentBootId(): string | undefined {
  if (bootId === null) {
    try {
      bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
    } catch {
      bootId = undefined;
    }
  }
  return bootId;
}

/**
 * Whether a process with this PID runs. One that belongs to another user (the service account)
 * runs too: signalling it fails with EPERM, not ESRCH. A zombie (exited, not yet reaped by its
 * parent) or a dead process does not, although signalling it still succeeds: where /proc shows
 * the process, its state decides (`Z` and `X` are not running).
 */
export function processAlive(pid: number): boolean {
  const stat = procStat(pid);
  if (stat) return stat.state !== 'Z' && stat.state !== 'X';
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * What tells this process apart from any later one given the same PID: the boot it runs in and its
 * start time in clock ticks since that boot (/proc/<pid>/stat field 22), e.g.
 * `0f8e…-…-… 123456`. Undefined where /proc cannot tell (not Linux, hidden, gone).
 */
export function processStartId(pid: number): string | undefined {
  const stat = procStat(pid);
  const boot = currentBootId();
  return stat && boot ? `${boot} ${stat.startTicks}` : undefined;
}
