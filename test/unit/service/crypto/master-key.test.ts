import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../../../../service/crypto/master-key.js';

describe('SecretBox', () => {
  it('round-trips, uses a fresh IV each time, and detects tampering', () => {
    const box = new SecretBox(Buffer.alloc(32, 7));
    const a = box.seal('secret');
    const b = box.seal('secret');
    expect(a).not.toBe(b);
    expect(box.open(a)).toBe('secret');
    const parts = a.split('.');
    parts[3] = Buffer.from('other').toString('base64url');
    expect(() => box.open(parts.join('.'))).toThrow();
    expect(() => new SecretBox(Buffer.alloc(32, 8)).open(a)).toThrow();
  });

  it('creates the key file once with mode 0600 and reuses it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-key-'));
    try {
      const sealed = SecretBox.fromDataDir(dir).seal('x');
      const stat = fs.statSync(path.join(dir, 'master.key'));
      expect(stat.mode & 0o777).toBe(0o600);
      expect(SecretBox.fromDataDir(dir).open(sealed)).toBe('x');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
