import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The machine's stable identity: systemd's /etc/machine-id (or the D-Bus copy), else the host name.
 * Containers get a fresh machine-id per image; the Cloud Agent keeps its instance folder on a
 * volume, so the folder path and installId carry its identity there.
 */
export function readMachineId(read: (file: string) => string = (f) => fs.readFileSync(f, 'utf8')): string {
  for (const file of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      const id = read(file).trim();
      if (id) return id;
    } catch {
      // Not on this system (Windows, macOS, minimal containers): try the next source.
    }
  }
  return os.hostname();
}

/**
 * sha256 of machine id + absolute instance folder + installId. A config.json copied to another
 * folder or machine yields another fingerprint, which the Agent and the Service both refuse.
 */
export function computeFingerprint(input: { machineId: string; instanceDir: string; installId: string }): string {
  return createHash('sha256')
    .update(input.machineId)
    .update('\0')
    .update(path.resolve(input.instanceDir))
    .update('\0')
    .update(input.installId)
    .digest('hex');
}
