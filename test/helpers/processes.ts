import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

/** The state letter of a process in /proc/<pid>/stat (Linux), or undefined when it is gone. */
export function procState(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** Polls until `cond` holds, failing after `ms`. */
export async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A real zombie (Linux): sh starts `sleep 0` in the background, prints its PID, then becomes
 * `sleep 60`, which never waits for children, so the exited `sleep 0` stays unreaped. `end` kills
 * the parent; init then reaps the zombie.
 */
export async function zombie(): Promise<{ pid: number; end: () => void }> {
  const parent: ChildProcess = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 60'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const end = () => void parent.kill('SIGKILL');
  try {
    const pid = await new Promise<number>((resolve, reject) => {
      parent.stdout?.once('data', (c: Buffer) => resolve(Number(c.toString().trim())));
      parent.once('error', reject);
    });
    await until(() => procState(pid) === 'Z', `process ${pid} to become a zombie`);
    return { pid, end };
  } catch (err) {
    end();
    throw err;
  }
}
