import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import fs from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { FerryError } from '../errors/ferry-error.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../util/private-files.js';

/**
 * A Connector package: a gzip-compressed POSIX tar (ustar) of a plugin folder — `manifest.json`
 * and the bundled module — as the Service serves it and the Agent installs it. Plugins are small
 * (one bundled module), so packing and unpacking work on buffers; the reader refuses anything but
 * regular files and folders with relative names inside the package, and caps the total size.
 *
 *   tar tzf csv-1.0.0.tgz  →  manifest.json, index.mjs
 */

/** The module file of a packaged plugin (its manifest's `main`). */
export const PACKAGED_MAIN = 'index.mjs';

/** The most bytes a package may expand to. */
export const MAX_PACKAGE_BYTES = 64 * 1024 * 1024;
const BLOCK = 512;

export interface PackageFile {
  /** Relative path with forward slashes. */
  name: string;
  data: Buffer;
}

/** Packs `files` into a .tgz buffer (deterministic: fixed mode, owner and mtime). */
export function packFiles(files: readonly PackageFile[]): Buffer {
  const parts: Buffer[] = [];
  for (const f of files) {
    checkName(f.name);
    parts.push(header(f.name, f.data.length), f.data);
    const pad = (BLOCK - (f.data.length % BLOCK)) % BLOCK;
    if (pad) parts.push(Buffer.alloc(pad));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return gzipSync(Buffer.concat(parts), { level: 9 });
}

/** Unpacks a .tgz buffer; throws CON_PACKAGE_INVALID for anything that is not a plain package. */
export function unpackFiles(tgz: Buffer): PackageFile[] {
  let tar: Buffer;
  try {
    tar = gunzipSync(tgz, { maxOutputLength: MAX_PACKAGE_BYTES });
  } catch (err) {
    throw invalid(`it is not a gzip archive within ${MAX_PACKAGE_BYTES} bytes (${(err as Error).message})`);
  }
  const files: PackageFile[] = [];
  let at = 0;
  while (at + BLOCK <= tar.length) {
    const h = tar.subarray(at, at + BLOCK);
    if (h.every((b) => b === 0)) break;
    if (!checksumOk(h)) throw invalid(`the header at byte ${at} has a bad checksum`);
    const prefix = text(h, 345, 155);
    const name = (prefix ? `${prefix}/` : '') + text(h, 0, 100);
    const size = Number.parseInt(text(h, 124, 12).trim() || '0', 8);
    const type = String.fromCharCode(h[156] ?? 0);
    if (!Number.isSafeInteger(size) || size < 0 || at + BLOCK + size > tar.length)
      throw invalid(`the entry ${name} has a bad size`);
    const data = tar.subarray(at + BLOCK, at + BLOCK + size);
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (type === '5') continue; // folder: created with its files
    if (type !== '0' && type !== '\0')
      throw invalid(`the entry ${name} is not a regular file (type ${JSON.stringify(type)})`);
    const clean = name.replace(/^\.\//, '');
    checkName(clean);
    files.push({ name: clean, data: Buffer.from(data) });
  }
  if (files.length === 0) throw invalid('it holds no files');
  return files;
}

/** Writes unpacked files under `dir` (which must not exist yet), private to the Agent's user like the rest of its home. */
export async function writeFiles(dir: string, files: readonly PackageFile[]): Promise<void> {
  await fs.mkdir(dir, { recursive: false, mode: PRIVATE_DIR_MODE });
  for (const f of files) {
    const target = path.join(dir, ...f.name.split('/'));
    await fs.mkdir(path.dirname(target), { recursive: true, mode: PRIVATE_DIR_MODE });
    await fs.writeFile(target, f.data, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  }
}

/** Lower-case hex SHA-256 of a buffer. */
export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function checkName(name: string): void {
  const parts = name.split('/');
  if (
    !name ||
    name.length > 255 ||
    name.startsWith('/') ||
    /^[A-Za-z]:/.test(name) ||
    name.includes('\\') ||
    name.includes('\0') ||
    parts.some((p) => p === '..' || p === '')
  ) {
    throw invalid(`the path ${JSON.stringify(name)} is not a relative path inside the package`);
  }
}

function header(name: string, size: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  let base = name;
  let prefix = '';
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', 155);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100)
      throw invalid(`the path ${name} is too long for a package`);
    prefix = name.slice(0, cut);
    base = name.slice(cut + 1);
  }
  h.write(base, 0, 100, 'utf8');
  h.write('0000644\0', 100, 'ascii');
  h.write('0000000\0', 108, 'ascii');
  h.write('0000000\0', 116, 'ascii');
  h.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'ascii');
  h.write('00000000000\0', 136, 'ascii');
  h.write('        ', 148, 'ascii');
  h.write('0', 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  const sum = h.reduce((a, b) => a + b, 0);
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

function checksumOk(h: Buffer): boolean {
  const stored = Number.parseInt(text(h, 148, 8).trim() || 'x', 8);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : (h[i] ?? 0);
  return stored === sum;
}

function text(h: Buffer, at: number, len: number): string {
  const raw = h.subarray(at, at + len);
  const end = raw.indexOf(0);
  return raw.subarray(0, end < 0 ? len : end).toString('utf8');
}

function invalid(why: string): FerryError {
  return new FerryError('CON_PACKAGE_INVALID', `The Connector package is not valid: ${why}.`);
}

/**
 * The node_modules folder that holds Ferry's own runtime dependencies, which packaged plugins
 * import (pg, better-sqlite3, csv-parse, zod, …); undefined if it cannot be found.
 */
export function sharedModulesDir(): string | undefined {
  try {
    const file = createRequire(import.meta.url).resolve('zod');
    const marker = `${path.sep}node_modules${path.sep}`;
    const i = file.lastIndexOf(marker);
    return i < 0 ? undefined : file.slice(0, i + marker.length - 1);
  } catch {
    return undefined;
  }
}
