import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { mkdirPrivate } from '../store/data-dir.js';

const KEY_FILE = 'master.key';
const VERSION = 'v1';

/**
 * Encrypts the Service's stored secrets (crypto tokens, Connection properties) with AES-256-GCM
 * under one master key. The key is read from `<dataDir>/master.key` (created with mode 0600 on
 * first start) unless given explicitly.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('The master key must be 32 bytes');
    this.#key = key;
  }

  static fromDataDir(dataDir: string): SecretBox {
    const file = path.join(dataDir, KEY_FILE);
    mkdirPrivate(dataDir);
    try {
      return new SecretBox(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const key = randomBytes(32);
    // 'wx' refuses to overwrite a key another process wrote meanwhile.
    try {
      fs.writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
      return new SecretBox(key);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      return new SecretBox(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64'));
    }
  }

  /** `v1.<iv>.<tag>.<ciphertext>`, each part base64url. */
  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [
      VERSION,
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      body.toString('base64url'),
    ].join('.');
  }

  open(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== VERSION || iv === undefined || tag === undefined || body === undefined) {
      throw new Error('Not a sealed value');
    }
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}
