import { createCipheriv, createDecipheriv, pbkdf2Sync, randomBytes } from 'node:crypto';
import { FerryError } from '../../src/errors/ferry-error.js';

/**
 * Transport encryption of Connection property values (DESIGN.md "Connection properties"), exactly
 * as clients of the original service already do it: AES-256-CBC with PKCS#7 padding and a random
 * 16-byte IV; key = PBKDF2-HMAC-SHA1(password = the Organization's apiCryptoToken, salt = the UTF-8
 * bytes of {@link PROPERTY_SALT}, 1000 iterations, 32 bytes); the value is base64(IV) (always 24
 * characters) immediately followed by base64(ciphertext).
 */

/** The fixed salt of the original service (sic: `94r0` is not hexadecimal; it is used as text). */
export const PROPERTY_SALT = 'ac103458-fcb6-41d3-94r0-43d25b4f4ff4';
const ITERATIONS = 1000;
const IV_BYTES = 16;
const IV_B64_CHARS = 24;
const BLOCK = 16;
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

const keyCache = new Map<string, Buffer>();
const KEY_CACHE_MAX = 256;

/** The 32-byte AES key derived from a crypto token (cached: PBKDF2 is deliberately slow). */
export function propertyKey(cryptoToken: string): Buffer {
  let key = keyCache.get(cryptoToken);
  if (!key) {
    key = pbkdf2Sync(Buffer.from(cryptoToken, 'utf8'), Buffer.from(PROPERTY_SALT, 'utf8'), ITERATIONS, 32, 'sha1');
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
    keyCache.set(cryptoToken, key);
  }
  return key;
}

/** Encrypts one property value for transport; `iv` only for tests (a random one otherwise). */
export function encryptProperty(plain: string, cryptoToken: string, iv: Buffer = randomBytes(IV_BYTES)): string {
  if (iv.length !== IV_BYTES) throw new Error('The IV must be 16 bytes');
  const cipher = createCipheriv('aes-256-cbc', propertyKey(cryptoToken), iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return iv.toString('base64') + body.toString('base64');
}

/**
 * Decrypts one property value sent by a client. Anything that is not such a value (too short, not
 * base64, not whole blocks, wrong token so the padding is wrong) fails with API_PROPERTY_ENCRYPTION,
 * naming the property but never echoing the value.
 */
export function decryptProperty(value: string, cryptoToken: string, propertyName = 'value'): string {
  const fail = (why: string): never => {
    throw new FerryError(
      'API_PROPERTY_ENCRYPTION',
      `The property ${propertyName} is not encrypted with the Organization's crypto token (${why}).`,
      {
        errors: [{ path: `properties.${propertyName}`, message: why }],
      },
    );
  };
  if (value.length < IV_B64_CHARS + 4)
    fail('too short: base64(IV) of 24 characters followed by base64(ciphertext) expected');
  const ivPart = value.slice(0, IV_B64_CHARS);
  const bodyPart = value.slice(IV_B64_CHARS);
  if (!BASE64_RE.test(ivPart) || !ivPart.endsWith('==') || !BASE64_RE.test(bodyPart) || bodyPart.length % 4 !== 0)
    fail('not base64');
  const iv = Buffer.from(ivPart, 'base64');
  const body = Buffer.from(bodyPart, 'base64');
  if (iv.length !== IV_BYTES) fail('the IV is not 16 bytes');
  if (body.length === 0 || body.length % BLOCK !== 0) fail('the ciphertext is not a whole number of 16-byte blocks');
  let plain: Buffer | undefined;
  try {
    const decipher = createDecipheriv('aes-256-cbc', propertyKey(cryptoToken), iv);
    plain = Buffer.concat([decipher.update(body), decipher.final()]);
  } catch {
    fail('bad padding: wrong crypto token or damaged value');
  }
  return (plain ?? Buffer.alloc(0)).toString('utf8');
}
