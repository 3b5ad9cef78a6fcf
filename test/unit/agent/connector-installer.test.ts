import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConnectorInstaller } from '../../../src/agent/connector-installer.js';
import { StatusMachine } from '../../../src/agent/status.js';
import { WorkRegistry } from '../../../src/agent/work.js';
import { ConnectorHost } from '../../../src/connectors/host.js';
import { packFiles, sha256 } from '../../../src/connectors/package.js';
import type { InstallConnectorCommand, ReportBody } from '../../../src/protocol/channel.js';

const ID = '5b4f0c9e-3d2a-4e1f-8a7b-6c5d4e3f2a1b';
const silent = pino({ level: 'silent' });

/** A self-contained plugin whose preconnect answers with its version (so a test sees which module is loaded). */
function pluginPackage(version: string, opts: { manifestVersion?: string } = {}): Buffer {
  const manifest = {
    id: ID,
    name: 'Echo',
    vendor: 'Test',
    version: opts.manifestVersion ?? version,
    sdkVersion: '^1.0.0',
    main: 'index.mjs',
    solutionRoles: ['Svc.IS2.Source'],
    isCloudSupported: false,
    uiDecorations: [],
  };
  const code = `export default { preconnect: async () => ({ reply: 'v${version}' }), connect: async () => { throw new Error('no datastore'); } };\n`;
  return packFiles([
    { name: 'manifest.json', data: Buffer.from(JSON.stringify(manifest)) },
    { name: 'index.mjs', data: Buffer.from(code) },
  ]);
}

describe("the Agent's Connector installer", () => {
  const packages = new Map<string, Buffer>();
  let server: http.Server;
  let base: string;
  let seenAuth: string[] = [];
  let dir: string;
  let host: ConnectorHost;
  let reports: ReportBody[];
  let work: WorkRegistry;
  let status: StatusMachine;
  let installer: ConnectorInstaller;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seenAuth.push(String(req.headers.authorization));
      const data = packages.get(req.url ?? '');
      if (!data) return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/gzip' }).end(data);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-installer-'));
    host = new ConnectorHost({ dir, log: silent });
    reports = [];
    seenAuth = [];
    work = new WorkRegistry();
    status = new StatusMachine();
    installer = new ConnectorInstaller({
      dir,
      host: () => Promise.resolve(host),
      work,
      status,
      log: silent,
      report: (r) => reports.push(r),
      authorization: 'Bearer a.s',
    });
    installer.prepare();
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const command = (
    version: string,
    data: Buffer,
    over: Partial<InstallConnectorCommand> = {},
  ): InstallConnectorCommand => {
    const url = `/pkg/${version}-${Math.random()}`;
    packages.set(url, data);
    return {
      id: `c-${version}`,
      type: 'installConnector',
      connectorId: ID,
      name: 'Echo',
      version,
      sha256: sha256(data),
      size: data.length,
      packageUrl: `${base}${url}`,
      ...over,
    };
  };
  const statuses = () => reports.map((r) => (r.kind === 'connectorInstall' ? r.status : r.kind));
  const pluginFolders = () => fs.readdirSync(dir).filter((f) => f !== 'node_modules');

  it("downloads with the Agent's credentials, checks the SHA-256, unpacks and loads the plugin, and reports", async () => {
    await installer.install(command('1.0.0', pluginPackage('1.0.0')));
    expect(statuses()).toEqual(['AgentDownloadingConnectorUpdate', 'Installed']);
    expect(seenAuth).toEqual(['Bearer a.s']);
    expect(await host.preconnect(ID, {})).toEqual({ reply: 'v1.0.0' });
    expect(installer.installed()).toEqual([{ connectorId: ID, version: '1.0.0' }]);
    expect(pluginFolders()).toEqual([expect.stringMatching(/^echo-1\.0\.0-[0-9a-f]{6}$/) as string]);
    expect(fs.readlinkSync(path.join(dir, 'node_modules'))).toMatch(/node_modules$/);
    const last = reports.at(-1);
    expect(last).toMatchObject({
      kind: 'connectorInstall',
      operation: 'install',
      installed: [{ connectorId: ID, version: '1.0.0' }],
    });
    // The plugin's folder and files are the Agent's user's alone, like the rest of its home.
    const plugin = path.join(dir, pluginFolders()[0] as string);
    expect(fs.statSync(plugin).mode & 0o777).toBe(0o700);
    for (const f of fs.readdirSync(plugin))
      expect({ f, mode: fs.statSync(path.join(plugin, f)).mode & 0o777 }).toEqual({ f, mode: 0o600 });
  });

  it('installs nothing from a package whose checksum or manifest is wrong, and keeps the version it had', async () => {
    await installer.install(command('1.0.0', pluginPackage('1.0.0')));
    const good = pluginPackage('1.0.1');
    await installer.install(command('1.0.1', good, { sha256: sha256(Buffer.from('other')) }));
    expect(reports.at(-1)).toMatchObject({ status: 'InstallFailed', error: { code: 'CON_PACKAGE_CHECKSUM' } });
    await installer.install(command('1.0.1', pluginPackage('1.0.1', { manifestVersion: '1.0.2' })));
    expect(reports.at(-1)).toMatchObject({ status: 'InstallFailed', error: { code: 'CON_PACKAGE_INVALID' } });
    await installer.install(command('1.0.1', Buffer.from('garbage')));
    expect(reports.at(-1)).toMatchObject({ status: 'InstallFailed', error: { code: 'CON_PACKAGE_INVALID' } });
    await installer.install({ ...command('1.0.1', good), packageUrl: `${base}/missing` });
    expect(reports.at(-1)).toMatchObject({ status: 'InstallFailed', error: { code: 'CON_PACKAGE_UNAVAILABLE' } });
    expect(await host.preconnect(ID, {})).toEqual({ reply: 'v1.0.0' });
    expect(pluginFolders()).toHaveLength(1);
    expect(installer.installed()).toEqual([{ connectorId: ID, version: '1.0.0' }]);
  });

  it('upgrades only after running work ends: WaitingToUpdateConnector, UpdatingConnector, then the new module runs', async () => {
    await installer.install(command('1.0.0', pluginPackage('1.0.0')));
    let release: () => void = () => undefined;
    const running = work.run('solution', () => new Promise<void>((r) => (release = r)));
    const moves: string[] = [];
    status.onChange((c) => moves.push(c.to));
    const upgrade = installer.install(command('1.1.0', pluginPackage('1.1.0')));
    await new Promise((r) => setTimeout(r, 100));
    expect(status.status).toBe('WaitingToUpdateConnector');
    await expect(work.run('test', () => Promise.resolve())).rejects.toMatchObject({ code: 'AGT_DRAINING' });
    expect(await host.preconnect(ID, {})).toEqual({ reply: 'v1.0.0' });
    release();
    await running;
    await upgrade;
    expect(moves).toEqual(['WaitingToUpdateConnector', 'UpdatingConnector', 'Running']);
    expect(await host.preconnect(ID, {})).toEqual({ reply: 'v1.1.0' });
    expect(pluginFolders()).toEqual([expect.stringMatching(/^echo-1\.1\.0-/) as string]);
    await expect(work.run('test', () => Promise.resolve('ok'))).resolves.toBe('ok');
  });

  it('uninstalls: the plugin is unloaded and its folder removed', async () => {
    await installer.install(command('1.0.0', pluginPackage('1.0.0')));
    await installer.uninstall({ id: 'u', type: 'uninstallConnector', connectorId: ID });
    expect(reports.at(-1)).toMatchObject({
      kind: 'connectorInstall',
      operation: 'uninstall',
      status: 'Installed',
      installed: [],
    });
    await expect(host.preconnect(ID, {})).rejects.toMatchObject({ code: 'CON_NOT_FOUND' });
    expect(pluginFolders()).toEqual([]);
  });

  it('tidies the folder at start: leftovers of an interrupted install and the older of two versions go', async () => {
    await installer.install(command('1.0.0', pluginPackage('1.0.0')));
    const [old] = pluginFolders();
    fs.mkdirSync(path.join(dir, '.incoming-abcd'));
    const newer = path.join(dir, 'echo-1.1.0-ffffff');
    fs.mkdirSync(newer);
    fs.writeFileSync(path.join(newer, 'manifest.json'), JSON.stringify({ id: ID, version: '1.1.0' }));
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(newer, later, later);
    installer.prepare();
    expect(pluginFolders()).toEqual(['echo-1.1.0-ffffff']);
    expect(old).toBeDefined();
  });
});
