import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { secureDataDir } from '../../../../service/store/data-dir.js';

const modeOf = (p: string): number => fs.lstatSync(p).mode & 0o777;

describe('secureDataDir', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-datadir-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('creates a missing folder 0700 and reports nothing', () => {
    const dir = path.join(root, 'a', 'data');
    expect(secureDataDir(dir)).toEqual({ repaired: [], failed: [], truncated: false });
    expect(modeOf(dir)).toBe(0o700);
  });

  it('keeps the owner bits, leaves Agent homes to their Agent and never follows a link', () => {
    const dir = path.join(root, 'data');
    const outside = path.join(root, 'outside.txt');
    fs.mkdirSync(path.join(dir, 'agent', 'ferry-agent-1'), { recursive: true });
    fs.chmodSync(dir, 0o755);
    fs.writeFileSync(path.join(dir, 'script'), '', { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'agent', 'ferry-agent-1', 'outbox.db'), '', { mode: 0o644 });
    fs.chmodSync(path.join(dir, 'agent'), 0o755);
    fs.writeFileSync(outside, '', { mode: 0o644 });
    fs.symlinkSync(outside, path.join(dir, 'link'));

    const r = secureDataDir(dir);
    expect(r.repaired.sort()).toEqual(['.', 'agent', 'script']);
    expect(modeOf(path.join(dir, 'script'))).toBe(0o700);
    expect(modeOf(path.join(dir, 'agent'))).toBe(0o700);
    expect(modeOf(path.join(dir, 'agent', 'ferry-agent-1', 'outbox.db'))).toBe(0o644);
    expect(modeOf(outside)).toBe(0o644);
  });
});
