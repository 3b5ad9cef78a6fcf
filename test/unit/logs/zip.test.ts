import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { zipLogs } from '../../../src/logs/zip.js';
import { resolveUploadUrl } from '../../../src/logs/upload.js';
import { unzip } from '../../helpers/unzip.js';

describe('zipping the logs folder', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-zip-'));
    fs.mkdirSync(path.join(dir, 'logs'));
    fs.writeFileSync(path.join(dir, 'logs', 'agent.2025-01-01.1.log'), '{"msg":"a","solutionId":"s1"}\n{"msg":"b"}\n');
    fs.writeFileSync(path.join(dir, 'logs', 'agent.2025-01-02.1.log'), '{"msg":"c","solutionId":"s2"}\n{"msg":"d","solutionId":"s1"}\ntorn li');
    fs.writeFileSync(path.join(dir, 'logs', 'notes.txt'), 'not a log');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('zips every log file whole', async () => {
    const zip = await zipLogs(path.join(dir, 'logs'), path.join(dir, 'out.zip'));
    expect(zip.entries).toEqual(['agent.2025-01-01.1.log', 'agent.2025-01-02.1.log']);
    const entries = unzip(fs.readFileSync(zip.file));
    expect([...entries.keys()].sort()).toEqual(zip.entries);
    expect(entries.get('agent.2025-01-02.1.log')?.toString()).toContain('torn li');
    expect(fs.statSync(zip.file).mode & 0o777).toBe(0o600);
  });

  it("keeps only one Solution's lines when asked for a Solution's logs", async () => {
    const zip = await zipLogs(path.join(dir, 'logs'), path.join(dir, 'out.zip'), { solutionId: 's1' });
    const text = [...unzip(fs.readFileSync(zip.file)).values()].map((b) => b.toString()).join('');
    expect(text.trim().split('\n').map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['a', 'd']);
  });
});

describe('zipping under faults', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-zip-'));
    fs.mkdirSync(path.join(dir, 'logs'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('rejects (never hangs, never crashes) when interrupted mid-zip, and leaves no partial zip', async () => {
    const line = `${JSON.stringify({ msg: 'x'.repeat(200), solutionId: 's1', n: Math.random() })}\n`;
    for (let i = 0; i < 4; i++) fs.writeFileSync(path.join(dir, 'logs', `agent.2025-01-0${i + 1}.1.log`), line.repeat(40_000));
    const controller = new AbortController();
    const zipping = zipLogs(path.join(dir, 'logs'), path.join(dir, 'out.zip'), { signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await expect(zipping).rejects.toThrow();
    expect(fs.existsSync(path.join(dir, 'out.zip'))).toBe(false);
    const already = new AbortController();
    already.abort();
    await expect(zipLogs(path.join(dir, 'logs'), path.join(dir, 'out2.zip'), { signal: already.signal })).rejects.toThrow();
  });

  it("skips a log file rotated away between the listing and the read of a Solution's lines", async () => {
    fs.writeFileSync(path.join(dir, 'logs', 'agent.2025-01-01.1.log'), '{"msg":"kept","solutionId":"s1"}\n');
    const gone = path.join(dir, 'logs', 'agent.2025-01-02.1.log');
    fs.writeFileSync(gone, '{"msg":"gone","solutionId":"s1"}\n');
    const realReaddir = fs.readdirSync;
    // The listing still names the file; it is gone by the time it is read.
    const spy = (p: fs.PathLike) => {
      const names = realReaddir(p);
      fs.rmSync(gone, { force: true });
      return names;
    };
    (fs as { readdirSync: unknown }).readdirSync = spy;
    try {
      const zip = await zipLogs(path.join(dir, 'logs'), path.join(dir, 'out.zip'), { solutionId: 's1' });
      const text = [...unzip(fs.readFileSync(zip.file)).values()].map((b) => b.toString()).join('');
      expect(text).toContain('kept');
      expect(text).not.toContain('gone');
    } finally {
      (fs as { readdirSync: unknown }).readdirSync = realReaddir;
    }
  });
});

describe('the upload address', () => {
  it('resolves paths against the Service and accepts the same origin', () => {
    expect(resolveUploadUrl('/v1/agent/logs/x', 'http://127.0.0.1:8780').href).toBe('http://127.0.0.1:8780/v1/agent/logs/x');
    expect(resolveUploadUrl('http://127.0.0.1:8780/v1/agent/logs/x', 'http://127.0.0.1:8780/').pathname).toBe('/v1/agent/logs/x');
  });

  it('refuses to send the credentials to another origin', () => {
    expect(() => resolveUploadUrl('http://evil.example/v1/agent/logs/x', 'http://127.0.0.1:8780')).toThrowError(expect.objectContaining({ code: 'AGT_UPLOAD_URL_REFUSED' }));
    expect(() => resolveUploadUrl('https://127.0.0.1:8780/x', 'http://127.0.0.1:8780')).toThrowError(expect.objectContaining({ code: 'AGT_UPLOAD_URL_REFUSED' }));
  });
});
