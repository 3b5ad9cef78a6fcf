import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  claimInstanceFolder,
  defaultAgentName,
  defaultHome,
  instancePaths,
  listInstances,
  openHomeToServiceAccounts,
  publicInstanceConfig,
  readInstanceConfig,
  resolveInstance,
  secureInstance,
  writeInstanceConfig,
  type InstanceConfig,
} from '../../../src/agent/home.js';

const sample = (serviceName: string): InstanceConfig => ({
  agentId: '0b5f0d59-4c8e-4c1c-9a52-1b1f8b1a0001',
  agentSecret: 'very-secret',
  orgId: 1,
  serviceUrl: 'http://127.0.0.1:8780',
  name: 'host',
  serviceName,
  fingerprint: 'f'.repeat(64),
  installId: 'install-1',
  createdAt: '2025-01-01T00:00:00.000Z',
});

const modeOf = (p: string) => fs.statSync(p).mode & 0o777;

describe('instance folders', () => {
  let home: string;
  beforeEach(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-home-'));
  });
  afterEach(() => fs.rmSync(home, { recursive: true, force: true }));

  it('numbers instances in installation order, each with data, logs and connectors', () => {
    const first = claimInstanceFolder(home);
    const second = claimInstanceFolder(home);
    expect([first.serviceName, second.serviceName]).toEqual(['ferry-agent-1', 'ferry-agent-2']);
    for (const sub of ['data', 'logs', 'connectors'])
      expect(fs.statSync(path.join(second.dir, sub)).isDirectory()).toBe(true);
  });

  it('creates the home and every instance folder private (0700), with config.json 0600', () => {
    const fresh = path.join(home, 'new', 'agents');
    const paths = claimInstanceFolder(fresh);
    writeInstanceConfig(paths, sample(paths.serviceName));
    for (const dir of [fresh, paths.dir, paths.data, paths.logs, paths.connectors])
      expect({ dir, mode: modeOf(dir) }).toEqual({ dir, mode: 0o700 });
    expect(modeOf(paths.config)).toBe(0o600);
    // Parents are shared places (~/.local/share, /var/lib/ferry): they keep the usual modes.
    expect(modeOf(path.join(home, 'new')) & 0o055).toBe(0o055 & ~process.umask());
  });

  it('repairs an instance left readable by other users, without following symbolic links, and says nothing the second time', () => {
    const paths = claimInstanceFolder(home);
    writeInstanceConfig(paths, sample(paths.serviceName));
    const outside = path.join(os.tmpdir(), `ferry-outside-${process.pid}`);
    fs.writeFileSync(outside, '', { mode: 0o644 });
    fs.chmodSync(outside, 0o644);
    try {
      const plugin = path.join(paths.connectors, 'csv-1.0.0-abc');
      fs.mkdirSync(plugin);
      fs.writeFileSync(path.join(plugin, 'index.mjs'), '');
      fs.symlinkSync(outside, path.join(paths.connectors, 'node_modules'));
      for (const f of [paths.outbox, `${paths.outbox}-wal`, path.join(paths.logs, 'agent.2025-01-01.1.log')])
        fs.writeFileSync(f, '');
      for (const d of [home, paths.dir, paths.data, paths.logs, paths.connectors, plugin]) fs.chmodSync(d, 0o755);
      for (const f of [
        paths.outbox,
        `${paths.outbox}-wal`,
        path.join(paths.logs, 'agent.2025-01-01.1.log'),
        path.join(plugin, 'index.mjs'),
        paths.config,
      ])
        fs.chmodSync(f, 0o644);

      const repair = secureInstance(home, paths);
      expect(repair.failed).toEqual([]);
      expect(repair.repaired).toContain('.');
      expect(repair.repaired).toContain(path.join('ferry-agent-1', 'data', 'outbox.db-wal'));
      expect(repair.repaired).toHaveLength(11);
      // The home keeps its traverse bits: an instance run by a dedicated account passes through it.
      expect(modeOf(home)).toBe(0o711);
      for (const d of [paths.dir, paths.data, paths.logs, paths.connectors, plugin])
        expect({ d, mode: modeOf(d) }).toEqual({ d, mode: 0o700 });
      for (const f of [paths.outbox, `${paths.outbox}-wal`, path.join(plugin, 'index.mjs'), paths.config])
        expect({ f, mode: modeOf(f) }).toEqual({ f, mode: 0o600 });
      expect(modeOf(outside)).toBe(0o644);
      expect(secureInstance(home, paths)).toEqual({ repaired: [], failed: [], truncated: false });
    } finally {
      fs.rmSync(outside, { force: true });
    }
  });

  it('opens the home to traversal only for an instance run by a dedicated account', () => {
    const paths = claimInstanceFolder(home);
    fs.chmodSync(home, 0o700);
    openHomeToServiceAccounts(home);
    expect(modeOf(home)).toBe(0o711);
    expect(modeOf(paths.dir)).toBe(0o700);
    expect(instancePaths(home, 1).dir).toBe(paths.dir);
  });

  it('never reuses a number below a later instance, and skips folders taken concurrently', () => {
    claimInstanceFolder(home);
    claimInstanceFolder(home);
    fs.rmSync(path.join(home, 'ferry-agent-1'), { recursive: true });
    expect(claimInstanceFolder(home).serviceName).toBe('ferry-agent-3');
  });

  it('writes config.json with mode 0600 and reads it back', () => {
    const paths = claimInstanceFolder(home);
    writeInstanceConfig(paths, sample(paths.serviceName));
    expect(fs.statSync(paths.config).mode & 0o777).toBe(0o600);
    expect(readInstanceConfig(paths)).toEqual(sample(paths.serviceName));
    expect(publicInstanceConfig(readInstanceConfig(paths))).not.toHaveProperty('agentSecret');
  });

  it('refuses a broken config.json with AGT_INSTANCE_CONFIG', () => {
    const paths = claimInstanceFolder(home);
    fs.writeFileSync(paths.config, '{"agentId": 1}');
    expect(() => readInstanceConfig(paths)).toThrowError(expect.objectContaining({ code: 'AGT_INSTANCE_CONFIG' }));
    fs.writeFileSync(paths.config, 'not json');
    expect(() => readInstanceConfig(paths)).toThrowError(expect.objectContaining({ code: 'AGT_INSTANCE_CONFIG' }));
  });

  it('resolves the only instance, a named one, or refuses when ambiguous or absent', () => {
    expect(() => resolveInstance(home)).toThrowError(expect.objectContaining({ code: 'AGT_NO_INSTANCE' }));
    const one = claimInstanceFolder(home);
    writeInstanceConfig(one, sample(one.serviceName));
    // A half-installed folder (no config.json) is not an instance.
    claimInstanceFolder(home);
    expect(resolveInstance(home).serviceName).toBe('ferry-agent-1');
    const three = claimInstanceFolder(home);
    writeInstanceConfig(three, sample(three.serviceName));
    expect(listInstances(home).map((p) => p.number)).toEqual([1, 3]);
    expect(() => resolveInstance(home)).toThrowError(expect.objectContaining({ code: 'AGT_INSTANCE_AMBIGUOUS' }));
    expect(resolveInstance(home, '3').serviceName).toBe('ferry-agent-3');
    expect(resolveInstance(home, 'ferry-agent-1').number).toBe(1);
    expect(() => resolveInstance(home, '2')).toThrowError(expect.objectContaining({ code: 'AGT_NO_INSTANCE' }));
  });
});

describe('defaults', () => {
  it('names later instances after the machine with their number', () => {
    expect(defaultAgentName('build-01', 1)).toBe('build-01');
    expect(defaultAgentName('build-01', 2)).toBe('build-01 2');
    expect(defaultAgentName('build-01', 3)).toBe('build-01 3');
  });

  it('puts the home in the platform service data location', () => {
    expect(defaultHome({ platform: 'linux', uid: 0 })).toBe('/var/lib/ferry/agents');
    expect(defaultHome({ platform: 'linux', uid: 1000, homedir: '/home/u' })).toBe('/home/u/.local/share/ferry/agents');
    expect(defaultHome({ platform: 'linux', uid: 1000, homedir: '/home/u', env: { XDG_DATA_HOME: '/data' } })).toBe(
      '/data/ferry/agents',
    );
    expect(defaultHome({ platform: 'darwin', uid: 0, homedir: '/Users/u' })).toBe('/Users/u/.local/share/ferry/agents');
    expect(defaultHome({ platform: 'win32', env: { ProgramData: 'D:\\PD' } })).toBe('D:\\PD\\Ferry\\agents');
  });
});
