import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  claimInstanceFolder,
  defaultAgentName,
  defaultHome,
  listInstances,
  publicInstanceConfig,
  readInstanceConfig,
  resolveInstance,
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
    for (const sub of ['data', 'logs', 'connectors']) expect(fs.statSync(path.join(second.dir, sub)).isDirectory()).toBe(true);
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
    expect(defaultHome({ platform: 'linux', uid: 1000, homedir: '/home/u', env: { XDG_DATA_HOME: '/data' } })).toBe('/data/ferry/agents');
    expect(defaultHome({ platform: 'darwin', uid: 0, homedir: '/Users/u' })).toBe('/Users/u/.local/share/ferry/agents');
    expect(defaultHome({ platform: 'win32', env: { ProgramData: 'D:\\PD' } })).toBe('D:\\PD\\Ferry\\agents');
  });
});
