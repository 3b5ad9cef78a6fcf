import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { removeDeadSpools, spoolRoot, spoolUpload } from '../../../../service/lookup-tables/spool.js';

/** A PID that ran and has ended. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid as number;
}

describe('import spools', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-spool-'));
  });
  afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('spools a body into a private folder of the data folder and removes it', async () => {
    const spool = await spoolUpload(Readable.from([Buffer.from('a,b\n'), Buffer.from('c,d\n')]), 1024, dataDir);
    const [name] = fs.readdirSync(spoolRoot(dataDir));
    expect(name).toMatch(new RegExp(`^${process.pid}-`));
    expect(fs.statSync(spoolRoot(dataDir)).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(spoolRoot(dataDir), name as string, 'body.csv')).mode & 0o777).toBe(0o600);
    let text = '';
    for await (const chunk of spool.chunks()) text += chunk;
    expect(text).toBe('a,b\nc,d\n');
    await spool.remove();
    expect(fs.readdirSync(spoolRoot(dataDir))).toEqual([]);
  });

  it('removes at start the spools of processes that no longer run, and keeps those of a live one', async () => {
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      const dead = await deadPid();
      fs.mkdirSync(path.join(spoolRoot(dataDir), `${dead}-abc`, 'x'), { recursive: true });
      fs.writeFileSync(path.join(spoolRoot(dataDir), `${dead}-abc`, 'body.csv'), 'left behind');
      fs.mkdirSync(path.join(spoolRoot(dataDir), `${live.pid}-def`));
      expect(removeDeadSpools(dataDir)).toBe(1);
      expect(fs.readdirSync(spoolRoot(dataDir))).toEqual([`${live.pid}-def`]);
    } finally {
      live.kill();
    }
  });

  it('has nothing to remove when no import ever ran', () => {
    expect(removeDeadSpools(dataDir)).toBe(0);
  });
});
