/**
 * Where the API client keeps its login: one JSON file `{url, user, password}` of mode 0600 in a
 * folder of mode 0700 (`$FERRY_CONFIG_DIR`, else `$XDG_CONFIG_HOME/ferry`, else
 * `~/.config/ferry`). FERRY_URL, FERRY_USER and FERRY_PASSWORD override it for scripts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { mkdirPrivate, PRIVATE_FILE_MODE } from '../../util/private-files.js';
import { UsageError } from './errors.js';

const CREDENTIALS_FILE = 'credentials.json';

/** What `ferry login` stores. */
export const Credentials = z.object({ url: z.string().min(1), user: z.string().min(1), password: z.string() });
export type Credentials = z.infer<typeof Credentials>;

/** The client's folder: `$FERRY_CONFIG_DIR`, `$XDG_CONFIG_HOME/ferry` or `~/.config/ferry`. */
export function configDir(env: NodeJS.ProcessEnv): string {
  if (env['FERRY_CONFIG_DIR']) return path.resolve(env['FERRY_CONFIG_DIR']);
  if (env['XDG_CONFIG_HOME']) return path.join(env['XDG_CONFIG_HOME'], 'ferry');
  return path.join(os.homedir(), '.config', 'ferry');
}

export function credentialsFile(env: NodeJS.ProcessEnv): string {
  return path.join(configDir(env), CREDENTIALS_FILE);
}

/**
 * The Service's base URL without a trailing `/` or `/v1`, so that `http://host:8780`,
 * `http://host:8780/` and `http://host:8780/v1` name the same Service.
 */
export function normalizeUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`"${raw}" is not a URL: give the Service's address, for example http://127.0.0.1:8780`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`"${raw}" is not an http:// or https:// URL`);
  if (url.username || url.password)
    throw new UsageError('Give the user with --user and the password at the prompt, not inside the URL');
  const base = `${url.origin}${url.pathname}`.replace(/\/+$/, '').replace(/\/v1$/i, '');
  return base;
}

/** The stored login, or undefined when there is none. A damaged file is an error naming it. */
export function readCredentials(env: NodeJS.ProcessEnv): Credentials | undefined {
  const file = credentialsFile(env);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const result = Credentials.safeParse(parsed);
  if (!result.success)
    throw new UsageError(`${file} is not a Ferry credentials file: run ferry logout, then ferry login`);
  return result.data;
}

/** Writes the login to a 0600 file (replacing it atomically) in a 0700 folder. */
export function writeCredentials(env: NodeJS.ProcessEnv, creds: Credentials): string {
  const dir = configDir(env);
  mkdirPrivate(dir);
  const file = path.join(dir, CREDENTIALS_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w', PRIVATE_FILE_MODE);
  try {
    fs.writeFileSync(fd, `${JSON.stringify(creds, null, 2)}\n`);
  } finally {
    fs.closeSync(fd);
  }
  // The mode given to open() is reduced by the umask; the file must be 0600 whatever it is.
  fs.chmodSync(tmp, PRIVATE_FILE_MODE);
  fs.renameSync(tmp, file);
  return file;
}

/** Removes the stored login; true when there was one. */
export function removeCredentials(env: NodeJS.ProcessEnv): boolean {
  try {
    fs.unlinkSync(credentialsFile(env));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/**
 * The login a command uses: FERRY_URL, FERRY_USER and FERRY_PASSWORD each win over the file. The
 * stored password is used only for the stored user, so FERRY_USER alone never sends it for another
 * account.
 */
export function resolveCredentials(env: NodeJS.ProcessEnv): Credentials {
  const stored = readCredentials(env);
  const url = env['FERRY_URL'] || stored?.url;
  const user = env['FERRY_USER'] || stored?.user;
  const password = env['FERRY_PASSWORD'] ?? (stored && user === stored.user ? stored.password : undefined);
  if (!url || !user || password === undefined) {
    throw new UsageError('Not logged in: run ferry login URL (or set FERRY_URL, FERRY_USER and FERRY_PASSWORD)', 4);
  }
  return { url: normalizeUrl(url), user, password };
}
