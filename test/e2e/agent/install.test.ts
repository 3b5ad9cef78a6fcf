import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { computeFingerprint, readMachineId } from '../../../src/agent/fingerprint.js';
import {
  ferry,
  ferryDone,
  install,
  killAll,
  provisionKey,
  serviceUnderTest,
  until,
  untilStatus,
  type ServiceUnderTest,
} from './harness.js';

describe('ferry agent install, status, run and uninstall against a real Service', () => {
  let sut: ServiceUnderTest;
  let home: string;
  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    home = path.join(sut.dataDir, 'agents');
  });
  afterEach(() => killAll());
  afterAll(async () => {
    killAll();
    await sut.dispose();
  });

  it(
    'registers numbered instances named after the machine, with private config files',
    { timeout: 180_000 },
    async () => {
      const one = await install(sut, home);
      const two = await install(sut, home);
      const three = await install(sut, home, ['--name', 'Warehouse']);
      expect([one.serviceName, two.serviceName, three.serviceName]).toEqual([
        'ferry-agent-1',
        'ferry-agent-2',
        'ferry-agent-3',
      ]);
      for (const inst of [one, two, three]) {
        expect(fs.statSync(path.join(inst.dir, 'config.json')).mode & 0o777).toBe(0o600);
        for (const sub of ['data', 'logs', 'connectors'])
          expect(fs.statSync(path.join(inst.dir, sub)).isDirectory()).toBe(true);
        const config = JSON.parse(fs.readFileSync(path.join(inst.dir, 'config.json'), 'utf8')) as Record<
          string,
          unknown
        >;
        expect(Object.keys(config).sort()).toEqual([
          'agentId',
          'agentSecret',
          'createdAt',
          'fingerprint',
          'installId',
          'name',
          'orgId',
          'serviceName',
          'serviceUrl',
        ]);
        expect(inst.output).not.toContain(String(config['agentSecret']));
      }
      const agents = await sut.request<Array<{ id: string; name: string; serviceName: string; status: string }>>(
        'GET',
        `/v1/orgs/${sut.orgId}/agents`,
      );
      const byId = new Map(agents.body.map((a) => [a.id, a]));
      const host = os.hostname();
      expect(byId.get(one.agentId)).toMatchObject({ name: host, serviceName: 'ferry-agent-1' });
      expect(byId.get(two.agentId)).toMatchObject({ name: `${host} 2`, serviceName: 'ferry-agent-2' });
      expect(byId.get(three.agentId)).toMatchObject({ name: 'Warehouse', serviceName: 'ferry-agent-3' });

      // status shows each instance without its secret; several instances need --instance for run.
      const status = await ferryDone(['agent', 'status', '--home', home]);
      expect(status.code).toBe(0);
      expect(status.output).toContain('ferry-agent-3');
      expect(status.output).toMatch(/process\s+not running/);
      expect(status.output).not.toMatch(/agentSecret/);
      const ambiguous = await ferryDone(['agent', 'run', '--home', home]);
      expect(ambiguous.code).toBe(1);
      expect(ambiguous.output).toMatch(/Several Agent instances.*--instance/s);

      // start/stop without systemd say so clearly.
      const start = await ferryDone(['agent', 'start', '--home', home, '--instance', '1']);
      expect(start.code).toBe(1);
      expect(start.output).toMatch(/No service manager \(systemd\).*ferry agent run/s);

      // uninstall removes the folder; the next install still takes the next number.
      const removed = await ferryDone(['agent', 'uninstall', '--home', home, '--instance', '3']);
      expect(removed.code).toBe(0);
      expect(fs.existsSync(three.dir)).toBe(false);
    },
  );

  it(
    'keeps everything the Agent writes private, and repairs a home left readable by other users at start, saying so once',
    { timeout: 180_000 },
    async () => {
      const privHome = path.join(sut.dataDir, 'private');
      const inst = await install(sut, privHome);
      const modeOf = (p: string) => fs.statSync(p).mode & 0o777;
      const modes = (paths: string[]) => Object.fromEntries(paths.map((p) => [path.relative(privHome, p), modeOf(p)]));
      const folders = [privHome, inst.dir, ...['data', 'logs', 'connectors'].map((s) => path.join(inst.dir, s))];
      const files = () => [
        path.join(inst.dir, 'config.json'),
        ...['', '-wal', '-shm'].map((s) => path.join(inst.dir, 'data', `outbox.db${s}`)),
        ...fs.readdirSync(path.join(inst.dir, 'logs')).map((n) => path.join(inst.dir, 'logs', n)),
      ];
      const warnings = () =>
        fs
          .readdirSync(path.join(inst.dir, 'logs'))
          .flatMap((n) => fs.readFileSync(path.join(inst.dir, 'logs', n), 'utf8').split('\n'))
          .filter((l) => l.includes('to other users of this host'));
      const runUntilRunning = async () => {
        const run = ferry(['agent', 'run', '--home', privHome]);
        await untilStatus(sut, inst.agentId, 'Running');
        // The outbox has written (status reports): its -wal and -shm exist while the Agent runs.
        await until('the outbox WAL files', () =>
          fs.existsSync(path.join(inst.dir, 'data', 'outbox.db-shm')) ? true : undefined,
        );
        return run;
      };

      const first = await runUntilRunning();
      expect(modes(folders)).toEqual(Object.fromEntries(folders.map((p) => [path.relative(privHome, p), 0o700])));
      expect(files().filter((f) => f.endsWith('.log')).length).toBeGreaterThan(0);
      expect(modes(files())).toEqual(Object.fromEntries(files().map((p) => [path.relative(privHome, p), 0o600])));
      expect(modeOf(path.join(inst.dir, 'agent.pid'))).toBe(0o600);
      expect(warnings()).toEqual([]);
      expect(await first.stop()).toBe(0);

      // As an older version left it: folders 0755, files 0644.
      for (const p of folders) fs.chmodSync(p, 0o755);
      for (const p of files().filter((f) => fs.existsSync(f))) fs.chmodSync(p, 0o644);
      const second = await runUntilRunning();
      expect(modeOf(privHome)).toBe(0o711);
      expect(modes(folders.slice(1))).toEqual(
        Object.fromEntries(folders.slice(1).map((p) => [path.relative(privHome, p), 0o700])),
      );
      expect(modes(files())).toEqual(Object.fromEntries(files().map((p) => [path.relative(privHome, p), 0o600])));
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]).toMatch(
        /"level":40.*closed \d+ files and folders of the Agent's home to other users of this host/,
      );
      expect(await second.stop()).toBe(0);

      // Nothing left to repair: no second warning.
      const third = await runUntilRunning();
      expect(warnings()).toHaveLength(1);
      expect(await third.stop()).toBe(0);
    },
  );

  it('refuses a used installation key and leaves no folder behind', { timeout: 120_000 }, async () => {
    const key = await provisionKey(sut);
    const keyHome = path.join(sut.dataDir, 'key-reuse');
    const first = await ferryDone([
      'agent',
      'install',
      '--home',
      keyHome,
      '--key',
      key,
      '--service',
      sut.url,
      '--no-service',
    ]);
    expect(first.code).toBe(0);
    const again = await ferryDone([
      'agent',
      'install',
      '--home',
      keyHome,
      '--key',
      key,
      '--service',
      sut.url,
      '--no-service',
    ]);
    expect(again.code).toBe(1);
    expect(again.output).toMatch(/refused the registration \(409: AGT_INSTALLATION_KEY_USED/);
    expect(fs.readdirSync(keyHome)).toEqual(['ferry-agent-1']);
    const wrong = await ferryDone([
      'agent',
      'install',
      '--home',
      keyHome,
      '--key',
      'not-a-key',
      '--service',
      sut.url,
      '--no-service',
    ]);
    expect(wrong.code).toBe(1);
    const unreachable = await ferryDone([
      'agent',
      'install',
      '--home',
      keyHome,
      '--key',
      key,
      '--service',
      'http://127.0.0.1:1',
      '--no-service',
    ]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.output).toMatch(/Cannot reach the Service/);
    expect(fs.readdirSync(keyHome)).toEqual(['ferry-agent-1']);
  });

  it(
    'refuses a cloned installation: the Agent at start, and the Service at hello (4409)',
    { timeout: 180_000 },
    async () => {
      const cloneHome = path.join(sut.dataDir, 'clone');
      const original = await install(sut, cloneHome);
      const run = ferry(['agent', 'run', '--home', cloneHome]);
      await untilStatus(sut, original.agentId, 'Running');
      // Without systemd, status shows the running process and stop ends it through its pid file.
      expect((await ferryDone(['agent', 'status', '--home', cloneHome])).output).toMatch(
        new RegExp(`process\\s+running \\(pid ${run.pid}\\)`),
      );
      const stopped = await ferryDone(['agent', 'stop', '--home', cloneHome]);
      expect(stopped.code).toBe(0);
      expect(stopped.output).toMatch(/ferry-agent-1 \(pid \d+\) stopped/);
      expect(await run.exited).toBe(0);
      await untilStatus(sut, original.agentId, 'Shutdown');

      // A plain copy into another folder: the Agent itself refuses to start (exit 78, no restart loop).
      const copyHome = path.join(sut.dataDir, 'copy');
      fs.cpSync(original.dir, path.join(copyHome, 'ferry-agent-1'), { recursive: true });
      const copied = await ferryDone(['agent', 'run', '--home', copyHome]);
      expect(copied.code).toBe(78);
      expect(copied.output).toMatch(/AGT_CLONED_INSTALL/);

      // A copy whose fingerprint was forged for its new folder: the Service refuses it (4409) and it stops.
      const configFile = path.join(copyHome, 'ferry-agent-1', 'config.json');
      const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as { installId: string; fingerprint: string };
      config.fingerprint = computeFingerprint({
        machineId: readMachineId(),
        instanceDir: path.join(copyHome, 'ferry-agent-1'),
        installId: config.installId,
      });
      fs.writeFileSync(configFile, JSON.stringify(config), { mode: 0o600 });
      const forged = await ferryDone(['agent', 'run', '--home', copyHome]);
      expect(forged.code).toBe(78);
      expect(forged.output).toMatch(/configuration error/);
      const log = fs
        .readdirSync(path.join(copyHome, 'ferry-agent-1', 'logs'))
        .map((n) => fs.readFileSync(path.join(copyHome, 'ferry-agent-1', 'logs', n), 'utf8'))
        .join('');
      expect(log).toMatch(/AGT_CLONED_INSTALL/);
    },
  );
});
