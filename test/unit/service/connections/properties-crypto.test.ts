import { describe, expect, it } from 'vitest';
import { decryptProperty, encryptProperty, propertyKey } from '../../../../service/connections/properties-crypto.js';

const TOKEN = 'tok-123';

/**
 * Computed independently with OpenSSL:
 *   openssl kdf -keylen 32 -kdfopt digest:SHA1 -kdfopt pass:tok-123 \
 *     -kdfopt salt:ac103458-fcb6-41d3-94r0-43d25b4f4ff4 -kdfopt iter:1000 PBKDF2
 *   printf 'Server=db;Password=p@ss' | openssl enc -aes-256-cbc -K <key> -iv 000102030405060708090a0b0c0d0e0f | base64
 */
const KEY_HEX = '38be7d93b0d94e60178cff8f4e642deb82fcaf6efa9e63e83cee832f6114dd7e';
const IV_HEX = '000102030405060708090a0b0c0d0e0f';
const PLAIN = 'Server=db;Password=p@ss';
const VECTOR = 'AAECAwQFBgcICQoLDA0ODw==' + 'BBTrEqTGxzalAM2L5Czv+OydCKqom8BWLxZE2ioN0u4=';

describe('Connection property transport encryption', () => {
  it('derives the key with PBKDF2-HMAC-SHA1 as OpenSSL does', () => {
    expect(propertyKey(TOKEN).toString('hex')).toBe(KEY_HEX);
  });

  it('matches the OpenSSL vector both ways', () => {
    expect(encryptProperty(PLAIN, TOKEN, Buffer.from(IV_HEX, 'hex'))).toBe(VECTOR);
    expect(decryptProperty(VECTOR, TOKEN)).toBe(PLAIN);
  });

  it('round-trips with a random IV (24-character IV prefix), including empty and non-ASCII values', () => {
    for (const plain of ['', 'x', 'sixteen bytes!!!', 'Grüße — 日本語 🔑', 'a'.repeat(1000)]) {
      const enc = encryptProperty(plain, TOKEN);
      expect(enc.slice(0, 24)).toMatch(/^[A-Za-z0-9+/]{22}==$/);
      expect(decryptProperty(enc, TOKEN)).toBe(plain);
    }
    expect(encryptProperty('same', TOKEN)).not.toBe(encryptProperty('same', TOKEN));
  });

  it('refuses malformed values with a clear API_PROPERTY_ENCRYPTION error that names the property, not the value', () => {
    const bad = [
      '',
      'plain text password',
      'AAECAwQFBgcICQoLDA0ODw==',
      'AAECAwQFBgcICQoLDA0ODw==!!!!',
      'AAECAwQFBgcICQoLDA0ODw==AAAA',
      VECTOR.slice(0, -4),
    ];
    for (const value of bad) {
      let err: unknown;
      try {
        decryptProperty(value, TOKEN, 'Password');
      } catch (e) {
        err = e;
      }
      expect(err, value).toMatchObject({ code: 'API_PROPERTY_ENCRYPTION' });
      expect((err as Error).message).toContain('Password');
      if (value.length > 0) expect((err as Error).message).not.toContain(value);
    }
  });

  it('never yields the plaintext for a value encrypted with another crypto token (almost always a padding error)', () => {
    const other = encryptProperty(PLAIN, 'another-token');
    let result: string | undefined;
    let code: unknown;
    try {
      result = decryptProperty(other, TOKEN);
    } catch (e) {
      code = (e as { code?: unknown }).code;
    }
    // CBC with a wrong key fails the padding check in about 255 of 256 cases.
    if (code === undefined) expect(result).not.toBe(PLAIN);
    else expect(code).toBe('API_PROPERTY_ENCRYPTION');
  });
});
