import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lineMatches, logFileNames, zipLogs } from '../../../src/logs/zip.js';
import { resolveUploadUrl } from '../../../src/logs/upload.js';
import { unzip } from '../../helpers/unzip.js';

describe('zipping the logs folder', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-zip-'));
    fs.mkdirSync(path.join(dir, 'logs'));
    fs.writeFileSync(path.join(dir, 'logs', 'agent.2025-01-01.1.log'), '{"msg":"a","solutionId":"s1"}\n{"msg":"b"}\n');
    fs.writeFileSync(
      path.join(dir, 'logs', 'agent.2025-01-02.1.log'),
      '{"msg":"c","solutionId":"s2"}\n{"msg":"d","solutionId":"s1"}\ntorn li',
    );
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
    expect(
      text
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { msg: string }).msg),
    ).toEqual(['a', 'd']);
  });
});

describe("narrowing a Solution's lines", () => {
  let dir: string;
  const line = (fields: Record<string, unknown>): string => `${JSON.stringify(fields)}\n`;
  const msgs = async (opts: Parameters<typeof zipLogs>[2]): Promise<string[]> => {
    const zip = await zipLogs(path.join(dir, 'logs'), path.join(dir, 'out.zip'), opts);
    const text = [...unzip(fs.readFileSync(zip.file)).values()].map((b) => b.toString()).join('');
    fs.rmSync(zip.file);
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
  };
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-zip-'));
    const logs = path.join(dir, 'logs');
    fs.mkdirSync(logs);
    fs.writeFileSync(
      path.join(logs, 'agent.2025-01-01.2.log'),
      line({ time: '2025-01-01T10:00:00.000Z', solutionId: 's1', runId: 'r1', msg: 'r1 start' }) +
        line({ time: '2025-01-01T10:00:01.000Z', solutionId: 's1', msg: 'schedule fired' }) +
        line({ time: '2025-01-01T10:00:02.000Z', msg: 'about s1', details: { solutionId: 's1' } }),
    );
    fs.writeFileSync(
      path.join(logs, 'agent.2025-01-01.10.log'),
      line({ time: '2025-01-01T11:00:00.000Z', solutionId: 's1', runId: 'r1', msg: 'r1 end' }) +
        line({ time: '2025-01-01T12:00:00.000Z', solutionId: 's1', runId: 'r2', msg: 'r2 start' }) +
        line({ time: '2025-01-01T12:00:01.000Z', solutionId: 's2', runId: 'r3', msg: 'other' }),
    );
    // Written last at the times of their last lines.
    fs.utimesSync(
      path.join(logs, 'agent.2025-01-01.2.log'),
      new Date('2025-01-01T10:00:02Z'),
      new Date('2025-01-01T10:00:02Z'),
    );
    fs.utimesSync(
      path.join(logs, 'agent.2025-01-01.10.log'),
      new Date('2025-01-01T12:00:01Z'),
      new Date('2025-01-01T12:00:01Z'),
    );
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads the files oldest first, numbers as numbers, and keeps only top-level solutionId matches', async () => {
    expect(logFileNames(path.join(dir, 'logs'))).toEqual(['agent.2025-01-01.2.log', 'agent.2025-01-01.10.log']);
    expect(await msgs({ solutionId: 's1' })).toEqual(['r1 start', 'schedule fired', 'r1 end', 'r2 start']);
  });

  it('keeps one run, and lines since an instant (skipping files last written before it)', async () => {
    expect(await msgs({ solutionId: 's1', runId: 'r1' })).toEqual(['r1 start', 'r1 end']);
    expect(await msgs({ solutionId: 's1', since: '2025-01-01T10:00:01.000Z' })).toEqual([
      'schedule fired',
      'r1 end',
      'r2 start',
    ]);
    expect(await msgs({ solutionId: 's1', runId: 'r1', since: '2025-01-01T10:30:00Z' })).toEqual(['r1 end']);
    const zip = await zipLogs(path.join(dir, 'logs'), path.join(dir, 'out.zip'), {
      solutionId: 's1',
      since: '2025-01-01T11:30:00Z',
    });
    expect(zip.entries).toEqual(['agent.2025-01-01.10.log']);
  });

  it('reads epoch-millisecond times as well as ISO ones', () => {
    const filter = { solutionId: 's1', since: '2025-01-01T10:00:00.000Z' };
    expect(lineMatches({ solutionId: 's1', time: Date.parse('2025-01-01T10:00:00.000Z') }, filter)).toBe(true);
    expect(lineMatches({ solutionId: 's1', time: Date.parse('2025-01-01T09:59:59.999Z') }, filter)).toBe(false);
    expect(lineMatches({ solutionId: 's1' }, filter)).toBe(false);
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
    for (let i = 0; i < 4; i++)
      fs.writeFileSync(path.join(dir, 'logs', `agent.2025-01-0${i + 1}.1.log`), line.repeat(40_000));
    const controller = new AbortController();
    const zipping = zipLogs(path.join(dir, 'logs'), path.join(dir, 'out.zip'), { signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await expect(zipping).rejects.toThrow();
    expect(fs.existsSync(path.join(dir, 'out.zip'))).toBe(false);
    const already = new AbortController();
    already.abort();
    await expect(
      zipLogs(path.join(dir, 'logs'), path.join(dir, 'out2.zip'), { signal: already.signal }),
    ).rejects.toThrow();
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
    expect(resolveUploadUrl('/v1/agent/logs/x', 'http://127.0.0.1:8780').href).toBe(
      'http://127.0.0.1:8780/v1/agent/logs/x',
    );
    expect(resolveUploadUrl('http://127.0.0.1:8780/v1/agent/logs/x', 'http://127.0.0.1:8780/').pathname).toBe(
      '/v1/agent/logs/x',
    );
  });

  it('refuses to send the credentials to another origin', () => {
    expect(() => resolveUploadUrl('http://evil.example/v1/agent/logs/x', 'http://127.0.0.1:8780')).toThrowError(
      expect.objectContaining({ code: 'AGT_UPLOAD_URL_REFUSED' }),
    );
    expect(() => resolveUploadUrl('https://127.0.0.1:8780/x', 'http://127.0.0.1:8780')).toThrowError(
      expect.objectContaining({ code: 'AGT_UPLOAD_URL_REFUSED' }),
    );
  });
});
