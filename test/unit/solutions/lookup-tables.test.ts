import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchLookupTables } from '../../../src/solutions/lookup-tables.js';

/** A real HTTP server on loopback answering the Agent's Lookup Tables read. */
async function serve(body: unknown): Promise<{ url: string; close: () => Promise<void>; calls: string[] }> {
  const calls: string[] = [];
  const server = http.createServer((req, res) => {
    calls.push(`${req.url ?? ''} ${req.headers.authorization ?? ''}`);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, calls, close: () => new Promise((r) => server.close(() => r())) };
}

describe('fetchLookupTables', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  const tmp = (): string => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-lt-'));
    dirs.push(d);
    return path.join(d, 'cache');
  };

  it('reads the tables with the Agent credentials and keeps a private copy that serves while the Service is unreachable', async () => {
    const svc = await serve({ tables: [{ id: 't1', name: 'States', values: [['CA', 'California']] }] });
    const cacheDir = tmp();
    const opts = { serviceUrl: svc.url, authorization: 'Bearer a.b', names: ['States'], cacheDir };
    const first = await fetchLookupTables(opts);
    expect(first).toEqual([{ id: 't1', name: 'States', values: [{ value1: 'CA', value2: 'California' }] }]);
    expect(svc.calls).toEqual(['/v1/agent/lookuptables?names=States Bearer a.b']);
    const [file] = fs.readdirSync(cacheDir);
    expect(fs.statSync(path.join(cacheDir, file as string)).mode & 0o077).toBe(0);
    await svc.close();
    // The Service is gone: the copy answers.
    expect(await fetchLookupTables({ ...opts, timeoutMs: 2_000 })).toEqual(first);
  });

  it('fails with AGT_SERVICE_UNREACHABLE when the Service is unreachable and no copy exists', async () => {
    const svc = await serve({});
    await svc.close();
    await expect(
      fetchLookupTables({
        serviceUrl: svc.url,
        authorization: 'Bearer a.b',
        names: ['Other'],
        cacheDir: tmp(),
        timeoutMs: 2_000,
      }),
    ).rejects.toMatchObject({ code: 'AGT_SERVICE_UNREACHABLE' });
  });
});
