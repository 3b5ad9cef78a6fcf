import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  normalizeUrl,
  readCredentials,
  removeCredentials,
  resolveCredentials,
  writeCredentials,
} from '../../../../src/cli/client/config.js';

describe('the API client login file', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-client-config-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    FERRY_CONFIG_DIR: path.join(dir, 'cfg'),
    ...extra,
  });

  it('names one Service whatever its URL ends with, and refuses credentials inside the URL', () => {
    for (const u of ['http://h:8780', 'http://h:8780/', 'http://h:8780/v1', 'http://h:8780/v1/'])
      expect(normalizeUrl(u)).toBe('http://h:8780');
    expect(normalizeUrl('https://h/ferry/v1')).toBe('https://h/ferry');
    expect(() => normalizeUrl('ftp://h')).toThrow(/http/);
    expect(() => normalizeUrl('http://a:b@h')).toThrow(/--user/);
    expect(() => normalizeUrl('nonsense')).toThrow(/not a URL/);
  });

  it('writes a 0600 file in a 0700 folder, reads it back and removes it', () => {
    const file = writeCredentials(env(), { url: 'http://h:1', user: 'a@b', password: 'pw' });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(readCredentials(env())).toEqual({ url: 'http://h:1', user: 'a@b', password: 'pw' });
    expect(removeCredentials(env())).toBe(true);
    expect(removeCredentials(env())).toBe(false);
    expect(readCredentials(env())).toBeUndefined();
  });

  it('lets each variable override the file, and never sends the stored password for another user', () => {
    writeCredentials(env(), { url: 'http://h:1', user: 'a@b', password: 'pw' });
    expect(resolveCredentials(env({ FERRY_URL: 'http://other:2/v1' }))).toEqual({
      url: 'http://other:2',
      user: 'a@b',
      password: 'pw',
    });
    expect(resolveCredentials(env({ FERRY_PASSWORD: 'pw2' })).password).toBe('pw2');
    expect(() => resolveCredentials(env({ FERRY_USER: 'c@d' }))).toThrow(/Not logged in/);
    expect(resolveCredentials(env({ FERRY_USER: 'c@d', FERRY_PASSWORD: 'x' }))).toMatchObject({
      user: 'c@d',
      password: 'x',
    });
  });

  it('names a damaged file instead of failing obscurely', () => {
    fs.mkdirSync(path.join(dir, 'cfg'));
    fs.writeFileSync(path.join(dir, 'cfg', 'credentials.json'), '{"url": 1}');
    expect(() => readCredentials(env())).toThrow(/credentials.json is not a Ferry credentials file/);
  });
});
