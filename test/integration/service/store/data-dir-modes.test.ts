import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildService, type FerryService } from '../../../../service/build-service.js';
import { parseServiceConfig } from '../../../../service/config.js';
import { ADMIN } from '../../../helpers/service.js';

const REPAIRED = 'data folder was readable by other users: removed group and other permissions';

/** Mode bits of a path, as an octal string ('700', '600'). */
const modeOf = (p: string): string => (fs.lstatSync(p).mode & 0o777).toString(8);

/** Every path under `dir` (itself included) with its mode. */
function modesUnder(dir: string): Record<string, string> {
  const out: Record<string, string> = { '.': modeOf(dir) };
  const walk = (rel: string): void => {
    for (const name of fs.readdirSync(path.join(dir, rel))) {
      const child = path.join(rel, name);
      out[child] = modeOf(path.join(dir, child));
      if (fs.lstatSync(path.join(dir, child)).isDirectory()) walk(child);
    }
  };
  walk('');
  return out;
}

/** A Service on SQLite in `dataDir` whose log lines the test reads. */
async function start(
  dataDir: string,
): Promise<{ service: FerryService; lines: Array<{ msg: string; count?: number; paths?: string[] }> }> {
  const lines: Array<{ msg: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line) as { msg: string });
      done();
    },
  });
  const config = parseServiceConfig(
    {},
    { port: 0, host: '127.0.0.1', dataDir, adminEmail: ADMIN.email, adminPassword: ADMIN.password, cloudAgents: 'off' },
  );
  const service = await buildService(config, { logger: pino({ level: 'info' }, sink) });
  return { service, lines };
}

describe('The data folder on SQLite', () => {
  let root: string;
  let umask: number;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-modes-'));
    // The usual umask: files 0644 and folders 0755 unless the Service says otherwise.
    umask = process.umask(0o022);
  });
  afterEach(() => {
    process.umask(umask);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it("is created 0700 with every file in it 0600, the store's -wal and -shm included", async () => {
    const dataDir = path.join(root, 'data');
    const { service, lines } = await start(dataDir);
    try {
      // Writes beyond the bootstrap, so that the WAL holds something.
      const url = await service.listen();
      const auth = `Basic ${Buffer.from(`${ADMIN.email}:${ADMIN.password}`).toString('base64')}`;
      const res = await fetch(`${url}/v1/orgs/${service.bootstrap.orgId}/lookuptables`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'modes', description: 'x' }),
      });
      expect(res.status).toBe(201);

      const modes = modesUnder(dataDir);
      expect(modes).toMatchObject({
        '.': '700',
        'ferry.db': '600',
        'ferry.db-wal': '600',
        'ferry.db-shm': '600',
        'master.key': '600',
      });
      for (const [p, mode] of Object.entries(modes))
        expect({ p, open: (parseInt(mode, 8) & 0o077) !== 0 }).toEqual({ p, open: false });
      expect(lines.filter((l) => l.msg === REPAIRED)).toEqual([]);
    } finally {
      await service.close();
    }
  });

  it('is repaired at start when it was left readable, and says so once', async () => {
    const dataDir = path.join(root, 'data');
    await (await start(dataDir)).service.close();
    // As an older Ferry (or a careless copy) left it.
    fs.chmodSync(dataDir, 0o755);
    for (const f of ['ferry.db', 'master.key']) fs.chmodSync(path.join(dataDir, f), 0o644);
    fs.writeFileSync(path.join(dataDir, 'ferry.db-shm'), '', { mode: 0o644 });
    fs.mkdirSync(path.join(dataDir, 'log-archives', 'old'), { recursive: true, mode: 0o755 });
    fs.writeFileSync(path.join(dataDir, 'log-archives', 'old', 'a.zip'), 'zip', { mode: 0o644 });
    for (const d of ['log-archives', 'log-archives/old']) fs.chmodSync(path.join(dataDir, d), 0o755);
    fs.chmodSync(path.join(dataDir, 'ferry.db-shm'), 0o644);

    const { service, lines } = await start(dataDir);
    try {
      const modes = modesUnder(dataDir);
      for (const [p, mode] of Object.entries(modes))
        expect({ p, open: (parseInt(mode, 8) & 0o077) !== 0 }).toEqual({ p, open: false });
      expect(modes).toMatchObject({
        '.': '700',
        'ferry.db': '600',
        'master.key': '600',
        'log-archives': '700',
        'log-archives/old/a.zip': '600',
      });
      const said = lines.filter((l) => l.msg === REPAIRED);
      expect(said).toHaveLength(1);
      expect(said[0]?.paths).toEqual(
        expect.arrayContaining([
          '.',
          'ferry.db',
          'ferry.db-shm',
          'master.key',
          'log-archives',
          'log-archives/old',
          'log-archives/old/a.zip',
        ]),
      );
      expect(said[0]?.count).toBe(said[0]?.paths?.length);
    } finally {
      await service.close();
    }

    // Nothing left to repair: the next start says nothing.
    const again = await start(dataDir);
    await again.service.close();
    expect(again.lines.filter((l) => l.msg === REPAIRED)).toEqual([]);
  });
});
