import { describe, expect, it } from 'vitest';
import { computeFingerprint, readMachineId } from '../../../src/agent/fingerprint.js';

describe('installation fingerprint', () => {
  const base = { machineId: 'm1', instanceDir: '/var/lib/ferry/agents/ferry-agent-1', installId: 'i1' };

  it('is stable for the same machine, folder and installation', () => {
    expect(computeFingerprint(base)).toBe(computeFingerprint({ ...base }));
    expect(computeFingerprint(base)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('changes when the folder is copied elsewhere, to another machine, or reinstalled', () => {
    const fp = computeFingerprint(base);
    expect(computeFingerprint({ ...base, instanceDir: '/opt/copy/ferry-agent-1' })).not.toBe(fp);
    expect(computeFingerprint({ ...base, machineId: 'm2' })).not.toBe(fp);
    expect(computeFingerprint({ ...base, installId: 'i2' })).not.toBe(fp);
  });

  it('reads /etc/machine-id, then the D-Bus copy, then falls back to the host name', () => {
    expect(readMachineId((f) => (f === '/etc/machine-id' ? 'abc\n' : ''))).toBe('abc');
    expect(
      readMachineId((f) => {
        if (f === '/etc/machine-id') throw new Error('ENOENT');
        return 'dbus-id';
      }),
    ).toBe('dbus-id');
    expect(
      readMachineId(() => {
        throw new Error('ENOENT');
      }).length,
    ).toBeGreaterThan(0);
  });
});
