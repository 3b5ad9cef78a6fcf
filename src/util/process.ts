/**
 * Whether a process with this PID exists. One that belongs to another user (the service account)
 * exists too: signalling it fails with EPERM, not ESRCH.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
