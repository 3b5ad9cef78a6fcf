import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { FerryError } from '../errors/ferry-error.js';
import type { InstancePaths } from './home.js';

/** Where units written by `ferry agent install` go. */
export const UNIT_DIR = '/etc/systemd/system';

/** The systemd check of sd_booted(3): the machine was booted with systemd as its init. */
export function systemdAvailable(exists: (p: string) => boolean = fs.existsSync): boolean {
  return process.platform === 'linux' && exists('/run/systemd/system');
}

/** What goes into one instance's unit. */
export interface UnitVars {
  readonly paths: InstancePaths;
  readonly home: string;
  /** Executable and arguments of `ferry agent run --home … --instance …`. */
  readonly execStart: readonly string[];
  /** The dedicated user the service runs as (root when absent). */
  readonly user?: string;
}

/** Renders installer/systemd/ferry-agent.service.template for one instance. */
export function renderUnit(template: string, vars: UnitVars): string {
  const userLines = vars.user
    ? `User=${vars.user}\nGroup=${vars.user}`
    : '# runs as root: pass --user NAME to `ferry agent install` for a dedicated account';
  const values: Record<string, string> = {
    SERVICE_NAME: vars.paths.serviceName,
    EXEC_START: vars.execStart.map(quoteArg).join(' '),
    // WorkingDirectory takes the rest of the line as the path; lists and assignments take quotes.
    INSTANCE_DIR_RAW: vars.paths.dir.replace(/%/g, '%%'),
    INSTANCE_DIR: quoteArg(vars.paths.dir),
    HOME_ENV: quoteArg(`FERRY_AGENT_HOME=${vars.home}`),
    USER_LINES: userLines,
  };
  return template.replace(/@([A-Z_]+)@/g, (whole, name: string) => values[name] ?? whole);
}

/** systemd's quoting: plain when safe, else double quotes with `\` and `"` escaped and `%` doubled. */
export function quoteArg(arg: string): string {
  const escaped = arg.replace(/%/g, '%%');
  return /^[\w@%+=:,./-]+$/.test(arg) ? escaped : `"${escaped.replace(/(["\\])/g, '\\$1')}"`;
}

/** Runs systemctl; throws AGT_SERVICE_MANAGER with its output when it fails. */
export function systemctl(args: readonly string[]): string {
  const res = spawnSync('systemctl', [...args], { encoding: 'utf8' });
  if (res.error || res.status !== 0) {
    const output = `${res.stdout ?? ''}${res.stderr ?? ''}`.trim() || res.error?.message || `exit ${res.status}`;
    throw new FerryError('AGT_SERVICE_MANAGER', `systemctl ${args.join(' ')} failed: ${output}`, {
      details: { status: res.status },
    });
  }
  return res.stdout;
}

/** `systemctl is-active` without throwing: active, inactive, failed, activating, … */
export function unitState(serviceName: string): string {
  const res = spawnSync('systemctl', ['is-active', `${serviceName}.service`], { encoding: 'utf8' });
  return (res.stdout ?? '').trim() || 'unknown';
}

/** Writes the unit, reloads systemd, and enables and starts it. */
export function installUnit(unitText: string, serviceName: string, unitDir = UNIT_DIR): string {
  const file = path.join(unitDir, `${serviceName}.service`);
  fs.writeFileSync(file, unitText, { mode: 0o644 });
  systemctl(['daemon-reload']);
  systemctl(['enable', '--now', `${serviceName}.service`]);
  return file;
}

/** Stops, disables and deletes the unit (if there is one). */
export function removeUnit(serviceName: string, unitDir = UNIT_DIR): boolean {
  const file = path.join(unitDir, `${serviceName}.service`);
  if (!fs.existsSync(file)) return false;
  spawnSync('systemctl', ['disable', '--now', `${serviceName}.service`], { encoding: 'utf8' });
  fs.rmSync(file, { force: true });
  systemctl(['daemon-reload']);
  return true;
}
