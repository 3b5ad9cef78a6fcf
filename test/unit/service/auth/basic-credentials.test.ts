import { describe, expect, it } from 'vitest';
import { basicCredentials } from '../../../../service/auth/basic-credentials.js';

/** An Authorization header carrying these bytes as Basic credentials. */
const basic = (...parts: Array<string | number[]>): string =>
  `Basic ${Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p)))).toString('base64')}`;

describe('Basic credentials', () => {
  it('reads the login before the first colon and the password after it, in any letter case of the scheme', () => {
    expect(basicCredentials(basic('ana@ferry.test:pa:ss wörd'))).toEqual({
      email: 'ana@ferry.test',
      password: 'pa:ss wörd',
      holdable: true,
    });
    expect(basicCredentials(`bAsIc ${Buffer.from('a@b.c:').toString('base64')}`)).toEqual({
      email: 'a@b.c',
      password: '',
      holdable: true,
    });
  });

  it('finds no credentials without a Basic header or a login name', () => {
    expect(basicCredentials(undefined)).toBeUndefined();
    expect(basicCredentials('Bearer abc.def')).toBeUndefined();
    expect(basicCredentials(basic(':password'))).toBeUndefined();
    expect(basicCredentials(basic('no colon'))).toBeUndefined();
  });

  it('marks as not holdable what no store can match: a NUL, bytes that are not UTF-8, over-long values', () => {
    const refused = [
      'Basic ADoA',
      basic('a\u0000@ferry.test:x'),
      basic('a@ferry.test:x\u0000'),
      basic([0xff], '@ferry.test:x'),
      basic('a@ferry.test:', [0xc3, 0x28]),
      basic('a', [0xed, 0xa0, 0x80], '@ferry.test:x'),
      basic('a@ferry.test:', [0xe2, 0x82]),
      basic(`${'a'.repeat(321)}:x`),
      basic(`a@ferry.test:${'p'.repeat(1025)}`),
    ];
    for (const header of refused) expect(basicCredentials(header)?.holdable, header).toBe(false);
    // The login as sent stays readable for the throttle's count.
    expect(basicCredentials(basic([0xff], '@ferry.test:x'))?.email).toBe('\ufffd@ferry.test');
    expect(basicCredentials(basic(`${'a'.repeat(320)}:${'p'.repeat(1024)}`))?.holdable).toBe(true);
    expect(basicCredentials(basic('😀@ferry.test:𝄞-password'))?.holdable).toBe(true);
  });
});
